"""The ``txn`` workload on Kafka's Java transactional producer (``client: java``), on a real
3-node cluster: the run passes the same checker as kafka-python's, its history holds
committed and aborted transactions written by the JVM, run.json names the client; with the
partition leader SIGKILLed mid-run too. And a source javac cannot compile is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_kreplica.errors import ClusterError
from pytest_kreplica.matrix import parse_matrix
from tests.case_cluster import started_cluster

DIMENSIONS = {"workload": ["txn"], "client": ["java"], "topics": [2], "partitions": [3],
              "replication_factor": [3], "min_insync_replicas": [2], "acks": [-1],
              "messages": [150], "downtime": [5]}


def _rows(run_dir: Path, table: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / f"{table}.jsonl").read_text().splitlines()]


def _case(failure: str):
    (case,) = parse_matrix(Path("java-txn.yaml"), {"dimensions": {
        **DIMENSIONS, "failure": [failure], "target": ["leader"]}}).cases
    return case


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with started_cluster(_case("none"), tmp_path_factory.mktemp("java-txn")) as c:
        yield c


# The leader SIGKILL only: the run without faults is the matrix's ci case
# (transactions-txn-isodefault-java-nofail), through the whole plugin; this asserts the
# same history facts and adds the kill between transactions.
@pytest.mark.parametrize("failure", ["hard"])
def test_a_java_txn_run_passes_the_checker_with_committed_and_aborted_transactions(
        cluster, tmp_path, failure):
    from pytest_kreplica.plugin.failures import add_nemesis
    from pytest_kreplica.scenarios.runner import CaseHooks, run_case

    case = _case(failure)
    hooks = CaseHooks()
    if failure != "none":
        add_nemesis(case, hooks)
    run_dir = tmp_path / case.case_id
    result = run_case(case, cluster, run_dir, hooks=hooks)
    assert result.outcome["passed"], (result.outcome, result.verdict.summary())
    assert json.loads((run_dir / "run.json").read_text())["client"]["name"] == "java"
    txns = _rows(run_dir, "txns")
    statuses = {t["status"] for t in txns}
    assert {"committed", "aborted"} <= statuses, statuses
    assert {t["process"] for t in txns} == {0, 3}  # both transactional producers wrote
    starts = [e["detail"] for e in _rows(run_dir, "events") if e["kind"] == "start"]
    assert any("Java transactional producer" in d for d in starts), starts
    committed = {t["txn"] for t in txns if t["status"] == "committed"}
    read = {p["id"] for p in _rows(run_dir, "polls") if p.get("isolation") != "read_uncommitted"}
    assert {s["id"] for s in _rows(run_dir, "sends") if s["txn"] in committed} <= read
    if failure != "none":
        (fault,) = result.extra["faults"]
        assert fault["target"] == "leader" and not fault["error"], fault
        (kill,) = [e["time_ns"] for e in _rows(run_dir, "events") if e["kind"] == "kill"]
        # struck while the JVM's producers worked: transactions before and after it
        assert min(t["complete_ns"] for t in txns) < kill < max(t["begin_ns"] for t in txns)


def test_a_source_javac_rejects_is_one_line(tmp_path, monkeypatch):
    from pytest_kreplica.cluster.kafka import distribution, maven
    from pytest_kreplica.workloads.java_build import compile_program

    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "Broken.java"
    source.write_text("public final class Broken { void f() { return 1; } }\n")
    dist = distribution.Distribution(version="0.0.0", java=maven.find_java(),
                                     home=tmp_path, classpaths={"tools": str(tmp_path)})
    with pytest.raises(ClusterError) as info:
        compile_program(dist, source)
    text = str(info.value)
    assert text.startswith("javac could not compile Broken.java") and "\n" not in text, text
    assert "error" in text
