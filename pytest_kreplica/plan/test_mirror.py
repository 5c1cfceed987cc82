"""Test case C.6: every selected case of scenario ``mirror`` (matrix mirror-maker-failure)
runs a source and a target cluster joined by MirrorMaker 2 that the nemesis fails during the
produce. The mirrored history must be valid under the case's semantics (at-least-once:
duplicates after a hard failure are counted and shown, not failures; exactly-once: a
duplicate fails the case), both clusters' replicas must agree, every planned fault must
have struck and been followed by its victim working again (MirrorMaker 2 mirroring, a
broker in sync; a soak strikes until its duration passed, a random target draws either),
and the report must show both clusters. Select subsets by marker, e.g.
``pytest --pyargs pytest_kreplica.plan -m "mirror_maker_failure and failure_hard"``."""

import json
from collections import Counter

import pytest


@pytest.mark.kreplica_scenario("mirror")
def test_mirror_maker_failure(kreplica_case, kreplica_run):
    case = kreplica_case
    result = kreplica_run(case)
    where = f"run directory {result.run_dir}; log {result.log_files['mirror-maker']}"
    faults = result.extra.get("faults", [])
    if case.duration is None:
        assert len(faults) == case.failures, (
            f"expected {case.failures} faults, seen {faults}; {where}")
    else:  # a soak strikes until its duration passed
        assert faults, f"expected the soak to strike faults, seen none; {where}"
    expected_state = {"clean": "stopped", "hard": "stopped", "soft": "paused"}
    strikes = {"clean": "terminate", "hard": "kill", "soft": "pause"}

    def struck_kinds(kinds: list[str]) -> Counter:
        return Counter(k for k in kinds if k in strikes.values())

    on_mirror = [f for f in faults if f["target"] == "mirror-maker"]
    for fault in faults:
        assert fault["error"] is None and fault["recovered_ns"] is not None, (
            f"expected fault #{fault['index']} to strike and its victim to work again, "
            f"seen {json.dumps(fault)}; {where}")
    for fault in on_mirror:  # a random target may also draw the brokers
        assert fault["node"] == "mirror-maker", fault
        assert fault["state_after_strike"] == expected_state[fault["failure"]], fault
    if case.target == "mirror-maker":
        assert len(on_mirror) == len(faults), faults
    kinds = [json.loads(line)["kind"] for line in
             (result.run_dir / "events.jsonl").read_text().splitlines()
             if json.loads(line)["role"] == "mirror-maker"]
    wanted = Counter(strikes[f["failure"]] for f in on_mirror)
    assert struck_kinds(kinds) == wanted, kinds
    assert kinds.count("recovered") == len(on_mirror), kinds
    if case.mirror_semantics == "exactly-once" and "target_batches" in result.extra:
        batches = result.extra["target_batches"]
        assert batches["data"] and batches["data"] == batches["transactional"] \
            and batches["commits"], (
                f"expected every mirrored batch on the target inside a transaction, with "
                f"commit markers, seen {batches}; {where}")
    verdict = json.loads((result.run_dir / "verdict.json").read_text())
    clusters = verdict["clusters"]
    assert {"source", "target", "mirror_maker", "over_time"} <= set(clusters), clusters
    mirror_kinds = [e["kind"] for e in clusters["mirror_maker"]["events"]]
    assert struck_kinds(mirror_kinds) == wanted, mirror_kinds
    page = (result.run_dir / "report.html").read_text()
    assert "source node" in page and "target node" in page and "MirrorMaker 2" in page
    result.assert_valid()
