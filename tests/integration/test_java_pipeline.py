"""The ``txn_pipeline`` workload on Kafka's Java client (``client: java``), on a real 3-node
cluster: the Java producers' records are copied by the Java copier (a read_committed
consumer and a transactional producer, ``KreplicaTxnCopier``), the run passes the same
checker as kafka-python's (copied_twice, uncopied, not_copied, the cycle rules), its history
holds committed and aborted copy transactions with the offsets they committed, and run.json
names the client. And a copier fenced mid-run (another producer initialises its
transactional id) records the failed transaction, rebuilds its clients and copies on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_kreplica.matrix import parse_matrix
from tests.case_cluster import started_cluster

DIMENSIONS = {"workload": ["txn_pipeline"], "client": ["java"], "topics": [2],
              "partitions": [3], "replication_factor": [3], "min_insync_replicas": [2],
              "acks": [-1], "messages": [150], "failure": ["none"]}


def _rows(run_dir: Path, table: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / f"{table}.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def case():
    (case,) = parse_matrix(Path("java-pipeline.yaml"), {"dimensions": DIMENSIONS}).cases
    return case


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, case):
    with started_cluster(case, tmp_path_factory.mktemp("java-pipeline")) as c:
        yield c


def test_a_java_pipeline_run_copies_every_committed_record_once(cluster, case, tmp_path):
    from pytest_kreplica.scenarios.runner import run_case

    run_dir = tmp_path / case.case_id
    result = run_case(case, cluster, run_dir)
    assert result.outcome["passed"], (result.outcome, result.verdict.summary())
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["client"]["name"] == "java" and meta["pipeline"]["inputs"] == [meta["topics"][0]]
    output = meta["topics"][1]
    txns = _rows(run_dir, "txns")
    copies = [t for t in txns if t["txn"].startswith("C5-")]
    assert {"committed", "aborted"} <= {t["status"] for t in copies}, copies
    assert all(t["offsets"] for t in copies if t["status"] == "committed"), copies
    sends = _rows(run_dir, "sends")
    committed = {t["txn"] for t in txns if t["status"] == "committed"}
    sources = {s["id"] for s in sends if s["txn"] in committed and s.get("source") is None
               and s["status"] == "ok"}
    copied = [s["source"] for s in sends if s["txn"] in committed and s.get("source") is not None]
    assert sources and sorted(copied) == sorted(sources)  # every committed input once
    assert {s["topic"] for s in sends if s.get("source") is not None} == {output}
    # the copier's polls carry their transaction, from incarnations 5, 105, ... (a rewind
    # after each abort starts a new one)
    pipeline_polls = [p for p in _rows(run_dir, "polls") if p.get("txn")]
    assert {p["txn"] for p in pipeline_polls} == {t["txn"] for t in copies}
    processes = {p["process"] for p in pipeline_polls}
    assert 5 in processes and all(p % 100 == 5 for p in processes) and len(processes) > 1
    starts = [e["detail"] for e in _rows(run_dir, "events") if e["kind"] == "start"]
    assert any("KreplicaTxnCopier on kafka-clients" in d for d in starts), starts


def test_a_fenced_java_copier_is_rebuilt_and_copies_on(cluster, case, tmp_path):
    from pytest_kreplica.cluster.admin.clients import close_producer
    from pytest_kreplica.scenarios.runner import CaseHooks, run_case
    from pytest_kreplica.waits import wait_until
    from pytest_kreplica.workloads import txn
    from pytest_kreplica.workloads.txn_pipeline import pipeline_id

    fenced: list[int] = []

    def fence(ctx) -> None:  # once the copier committed a copy: its transactional id taken
        txns = ctx.run_dir / "txns.jsonl"
        wait_until(lambda: txns.exists() and '"C5-T' in txns.read_text(), 60,
                   "the copier's first transaction", lambda: "no copy transaction yet")
        intruder = txn.transactional_producer(case, ctx.cluster.live_bootstrap_servers(),
                                              pipeline_id(ctx.topics[-1]))
        fenced.append(ctx.stats.sent)
        close_producer(intruder, 5.0)

    hooks = CaseHooks(during_produce=[fence])
    run_dir = tmp_path / case.case_id
    result = run_case(case, cluster, run_dir, hooks=hooks)
    assert fenced and fenced[0] < case.messages, fenced  # it struck while records were owed
    assert result.outcome["passed"], (result.outcome, result.verdict.summary())
    events = _rows(run_dir, "events")
    (crash,) = [e for e in events if e["kind"] == "client-crash" and e["process"] % 100 == 5]
    assert "rebuilt" in crash["detail"], crash
    copies = [t for t in _rows(run_dir, "txns") if t["txn"].startswith("C5-")]
    # the fenced transaction's outcome is unknown to the copier: ProducerFenced, or (the
    # intruder's InitProducerId racing the copier's EndTxn on a loaded machine) an
    # unexpected server error in EndTxn; either way an ``info`` row before the rebuild
    assert any(t["status"] == "info" and t["error"] for t in copies), copies
    rebuilt = [e["time_ns"] for e in events if e["kind"] == "start" and "pipeline" in e["detail"]
               and "started" in e["detail"]]
    assert len(rebuilt) == 2, rebuilt  # the first clients and the rebuilt ones
    assert any(t["status"] == "committed" and t["begin_ns"] > rebuilt[1] for t in copies)
