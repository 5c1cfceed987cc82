"""The report of a real run: a 3-node cluster (process backend), the real workload with an
acks=1 producer, the nemesis SIGKILLing the partition leader, the Spark checker; then the
report is checked against the checker. A planted lost id (appended to the real history)
proves the offending-ids table lists what the checker counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_kreplica.matrix import parse_matrix
from pytest_kreplica.plugin.failures import add_nemesis
from pytest_kreplica.report import build_verdict, read_verdict, write_report, write_verdict
from pytest_kreplica.report.data import load

CASE = {"dimensions": {"failure": ["hard"], "target": ["leader"], "acks": [1],
                       "partitions": [2], "producer_mode": ["async"], "messages": [500],
                       "downtime": [3], "replication_factor": [3]}}


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    from pytest_kreplica.cluster import create_cluster
    from pytest_kreplica.cluster.pool import cluster_spec
    from pytest_kreplica.scenarios.runner import CaseHooks, run_case

    (case,) = parse_matrix(Path("report-real.yaml"), CASE).cases
    cluster = create_cluster(cluster_spec(case), tmp_path_factory.mktemp("report-cluster"))
    cluster.start(timeout=120)
    try:
        hooks = CaseHooks()
        add_nemesis(case, hooks)
        run_dir = tmp_path_factory.mktemp("results") / case.case_id
        result = run_case(case, cluster, run_dir, hooks=hooks)
    finally:
        cluster.close()
    return case, result


def test_real_run_report_matches_the_checker(real_run):
    case, result = real_run
    # acks=1 under a hard leader failure: still at-least-once; a loss passes only with its
    # evidence (docs/failures.md "Loss and its evidence")
    assert case.semantics == "at-least-once"
    run_dir = result.run_dir
    verdict = read_verdict(run_dir)
    (fault,) = verdict["faults"]
    assert fault["failure"] == "hard" and fault["node"] == fault["leader_before"]
    assert fault["new_leader"] not in (None, fault["node"])
    assert verdict["election_s"] and 0 < verdict["election_max_s"] < 20
    for phase in ("produce", "drain", "validation",
                  f"fault 1 (hard leader, node {fault['node']})", "fault 1 recovery"):
        assert phase in verdict["phases"], phase
    assert verdict["counts"]["acked"] == result.verdict.counts["acked"] > 0

    page = (run_dir / "report.html").read_text()
    assert page.count("<svg") == 2
    assert "Acknowledged but not yet consumed (unseen)" in page and "Consumer lag" in page
    assert "kill (leader)" in page  # the fault bar on the timeline
    assert f"leader {fault['node']} -&gt; {fault['new_leader']}" in page  # scenario check
    # the report's own reading of the history agrees with the Spark checker
    data = load(run_dir)
    counts = result.verdict.counts
    assert data.counts["acked"] == counts["acked"]
    assert data.offending_total == counts["lost"] + counts["unseen"]
    for row in result.verdict.examples.get("lost", []):
        assert f"<td>{row['id']}</td>" in page


def test_planted_lost_id_is_listed_with_its_partition_and_offset(real_run):
    from pytest_kreplica.validation.checker import check

    case, result = real_run
    run_dir = result.run_dir
    polls = [json.loads(line) for line in (run_dir / "polls.jsonl").read_text().splitlines()]
    target = max((p for p in polls if p["partition"] == 1), key=lambda p: p["offset"])
    planted = {"process": 0, "topic": target["topic"], "partition": 1, "id": "planted-lost",
               "offset": target["offset"] - 1, "status": "ok", "invoke_ns": target["time_ns"],
               "complete_ns": target["time_ns"], "error": None}
    with (run_dir / "sends.jsonl").open("a") as out:
        out.write(json.dumps(planted) + "\n")
    verdict = check(run_dir, case.semantics)
    assert verdict.counts["lost"] >= 1
    doc = build_verdict(case_id=case.case_id, parameters=case.as_dict(),
                        semantics=case.semantics, history=verdict.to_dict(),
                        faults=read_verdict(run_dir)["faults"], seed=case.seed)
    write_verdict(run_dir, doc)
    write_report(run_dir)
    page = (run_dir / "report.html").read_text()
    row = (f"<tr><td>planted-lost</td><td>{target['topic']}</td><td class=\"num\">1</td>"
           f"<td class=\"num\">{target['offset'] - 1}</td><td>lost</td>")
    assert row in page
    assert "acknowledged message(s) were never consumed" in page
