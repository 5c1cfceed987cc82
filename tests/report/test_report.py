"""report.html, verdict.json and index.html from a made-up run directory (pure presentation
logic; the report of a real run is checked in tests/system and tests/integration)."""

from __future__ import annotations

import json
import re

import pyarrow.json  # noqa: F401  (loaded at collection; see tests/unit/test_tradeoffs.py)
import pytest

from pytest_kreplica.errors import HistoryError
from pytest_kreplica.report import (
    build_verdict,
    read_verdict,
    write_index,
    write_report,
    write_verdict,
)
from pytest_kreplica.report.data import load

from .synthetic import LOST, UNSEEN, make_run

FAULT = {"index": 1, "failure": "hard", "target": "leader", "topic": "t", "partition": 0,
         "node": 1, "leader_before": 1, "isr_before": [1, 2, 3], "new_leader": 2,
         "election_s": 3.0, "elected_from_isr": True, "fault_s": 5.0, "recovery_s": 3.0}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("results") / "leader-failure-acks1-hard"
    make_run(d)
    doc = build_verdict(
        case_id="leader-failure-acks1-hard", parameters={"acks": 1, "failure": "hard"},
        semantics="at-most-once",
        history={"valid": True, "counts": {"lost": 5, "unseen": 1, "sent": 4001},
                 "examples": {"lost": [{"id": LOST[0], "partition": 0, "offset": 750}]}},
        phases={"cluster ready": 0.4, "produce": 20.0}, faults=[FAULT], seed=7,
        checks=[{"name": "election bounded", "ok": True, "detail": "3.0 s"}], duration_s=41)
    write_verdict(d, doc)
    write_report(d)
    return d


def test_data_counts_and_series(run_dir):
    data = load(run_dir)
    assert data.counts["acked"] == 4000 and data.counts["indeterminate"] == 1
    assert data.offending_total == len(LOST) + len(UNSEEN)
    assert data.counts["never_consumed_lost"] == len(LOST)
    kinds = {r["id"]: r["kind"] for r in data.offending}
    assert all(kinds[i] == "lost" for i in LOST) and kinds[UNSEEN[0]] == "unseen"
    # the consumer stalled from 5 s to 9 s: unseen peaks then, and ends at the never-consumed
    peak = data.unseen.values[(data.unseen.t > 5) & (data.unseen.t < 9)].max()
    assert peak > 500
    assert data.unseen.values[-1] == len(LOST) + len(UNSEEN)
    assert data.lag.values.max() > 500 and data.lag.values[-1] <= 1
    # every acknowledgement planted 2 ms after its send, in acknowledgement order
    assert len(data.ack_latency.t) == 4000
    assert (data.ack_latency.values == 2.0).all()
    assert (data.ack_latency.t[1:] >= data.ack_latency.t[:-1]).all()


def test_verdict_json_carries_phases_faults_elections_and_seed(run_dir):
    v = read_verdict(run_dir)
    assert v["passed"] is True and v["seed"] == 7
    assert v["election_s"] == [3.0] and v["election_max_s"] == 3.0
    assert v["phases"]["produce"] == 20.0
    assert v["phases"]["fault 1 (hard leader, node 1)"] == 5.0
    assert v["phases"]["fault 1 recovery"] == 3.0


def test_verdict_fails_when_any_part_fails():
    base = {"case_id": "c", "parameters": {}, "semantics": "at-least-once"}
    assert not build_verdict(**base, history={"valid": False})["passed"]
    assert not build_verdict(**base, history={"valid": True},
                             replicas={"valid": False})["passed"]
    assert not build_verdict(**base, history={"valid": True},
                             checks=[{"name": "x", "ok": False}])["passed"]
    assert not build_verdict(**base, history=None)["passed"]


def test_report_html_is_self_contained_with_plots_and_offending_ids(run_dir):
    page = (run_dir / "report.html").read_text()
    assert page.count("<svg") == 2  # the timeline, and unseen + lag + ack latency + ack rate
    assert "Faults and leader changes" in page
    assert "Acknowledged but not yet consumed (unseen)" in page
    assert "Consumer lag" in page
    assert "Acknowledgement latency" in page and "p99 2 ms" in page
    for mid in LOST + UNSEEN:
        assert f"<td>{mid}</td>" in page
    assert "6 acknowledged message(s) were never consumed (5 lost" in page
    assert "at-most-once" in page and "seed <code>7</code>" in page
    assert not re.search(r"""(src|href)=['"]https?:""", page)  # nothing fetched from outside
    assert (run_dir / "report.html").stat().st_mode & 0o044  # readable by others


def test_index_links_every_case(run_dir, tmp_path):
    other = run_dir.parent / "second-case"
    make_run(other)
    write_verdict(other, build_verdict(case_id="second-case", parameters={},
                                       semantics="at-least-once", history={"valid": False}))
    index = write_index(run_dir.parent)
    page = index.read_text()
    assert "href='leader-failure-acks1-hard/report.html'" in page
    assert "href='second-case/verdict.json'" in page  # no report written for it
    assert "2 case(s): 1 passed, 1 failed." in page
    assert write_index(tmp_path) is None  # nothing to index


def test_index_shows_expected_findings_and_harness_errors_apart(tmp_path):
    """An expected finding (its reason in verdict.json) and a harness error (nothing judged)
    get their own badge and count, apart from a broker failure; an expected finding that
    passed is a failure."""
    cases = {"finding": {"history": {"valid": False}, "expected_finding": "default flush"},
             "gone": {"history": {"valid": True}, "expected_finding": "default flush"},
             "broken": {"history": {"valid": False}},
             "harness": {"history": None, "passed": None,
                         "harness": {"errors": ["expected a leader within 5 s"]}}}
    for name, parts in cases.items():
        extra = {k: v for k, v in parts.items() if k != "history"}
        write_verdict(tmp_path / name, build_verdict(
            case_id=name, parameters={}, semantics="at-least-once", history=parts["history"],
            extra=extra))
    page = write_index(tmp_path).read_text()
    assert ("4 case(s): 1 failed, 1 expected finding, 1 finding not seen, 1 harness error."
            in page), page
    assert '<span class="badge finding" title="default flush">expected finding</span>' in page
    assert "badge harness" in page and "FAIL: finding not seen" in page


def test_malformed_history_is_one_line_history_error(tmp_path):
    d = tmp_path / "bad"
    make_run(d, messages=10)
    with (d / "sends.jsonl").open("a") as out:
        out.write('{"process": "x", "topic": 1}\n')
    with pytest.raises(HistoryError) as err:
        load(d)
    assert "sends.jsonl" in str(err.value) and "\n" not in str(err.value)


def test_run_without_history_still_renders(tmp_path):
    d = tmp_path / "crashed"
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"case": "crashed"}))
    write_report(d)
    assert "NOT CHECKED" in (d / "report.html").read_text()


def test_accepted_loss_shows_its_evidence(tmp_path):
    d = tmp_path / "leader-failure-acks1"
    make_run(d)
    tradeoff = {"accepted": True, "reason": "1 acknowledged record(s) lost, ...",
                "evidence": [{"fault": 1, "failure": "hard", "target": "leader", "node": 1,
                              "kind": "leader change with acks 1", "topic": "t",
                              "partition": 0, "leader_before": 1, "new_leader": 2,
                              "isr_before": [1, 2, 3], "excused": 5,
                              "why": "hard failure of node 1, leader of t-0, with acks=1"}]}
    doc = build_verdict(case_id="c", parameters={"acks": 1}, semantics="at-least-once",
                        history={"valid": False, "counts": {"lost": 5}}, faults=[FAULT],
                        extra={"tradeoff": tradeoff, "passed": True,
                               "reason": "accepted trade-off: 1 acknowledged ..."})
    write_verdict(d, doc)
    page = write_report(d).read_text()
    assert "Accepted trade-off" in page and "Loss evidence" in page
    assert "<td>leader change with acks 1</td>" in page and "<td>1 -&gt; 2</td>" in page
    assert "hard failure of node 1, leader of t-0, with acks=1" in page
