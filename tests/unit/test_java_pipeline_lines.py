"""The Java copier's pure part: its JSON lines -> the history rows the kafka-python pipeline
writes (polls carrying their transaction, copies naming their source, the committed
offsets, an incarnation per start and rewind), which input records it still owes, and a
missing Java as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_kreplica.history import RunWriter
from pytest_kreplica.matrix import parse_matrix
from pytest_kreplica.workloads import choice, java_pipeline
from pytest_kreplica.workloads.java_pipeline import CopierLines
from pytest_kreplica.workloads.sends import ProduceStats


def rows(run_dir: Path, table: str) -> list[dict]:
    path = run_dir / f"{table}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def copy_lines(txn: str, sources: list[tuple[int, int, str]], answers: list[dict | None],
               outcome: str | None, generation: int = 1) -> list[dict]:
    """One copy transaction's lines: the batch (partition, offset, source id per record),
    begin, an invoke per copy with its answer (None: never answered), and its end."""
    out = [{"name": "batch", "txn": txn, "ns": 90, "poll": int(txn[-1]), "generation": generation,
            "records": [["in", p, o, s] for p, o, s in sources]},
           {"name": "begin", "txn": txn, "ns": 100}]
    for i, ((partition, _, source), answer) in enumerate(zip(sources, answers, strict=True)):
        cid = f"{txn}-{i}"
        out.append({"name": "invoke", "txn": txn, "id": cid, "topic": "out",
                    "partition": partition, "source": source, "ns": 110 + i})
        if answer is not None:
            out.append({"txn": txn, "id": cid, **answer})
    if outcome is not None:
        offsets = [["in", p, o] for p, o in {p: o + 1 for p, o, _ in sources}.items()]
        out.append({"name": "end", "txn": txn, "outcome": outcome, "end_ns": 150, "ns": 200,
                    "error": None, "offsets": offsets})
    return out


def test_the_copier_lines_become_the_pipelines_rows(tmp_path):
    stats = ProduceStats()
    for source in ("P0-T1-0", "P0-T1-1", "P3-T1-0"):  # committed input records
        stats.count("ok", source)
    acked = {"name": "acked", "offset": 0}
    lines = [
        {"name": "started", "transactional_id": "kr-pipeline-out"},
        *copy_lines("C5-T000001", [(0, 0, "P0-T1-0")], [acked], "committed"),
        *copy_lines("C5-T000002", [(1, 0, "P0-T1-1"), (1, 1, "P3-T1-0")],
                    [{**acked, "offset": 1}, {**acked, "offset": 2}], "aborted"),
        {"name": "rewound"},
        *copy_lines("C5-T000003", [(1, 0, "P0-T1-1")],
                    [{"name": "send_error", "exception": "org.apache.kafka.common.errors."
                      "TimeoutException", "message": "Expiring 1 record(s)"}], "info"),
        {"name": "crash", "why": "after a failed transaction"},
        {"name": "started", "transactional_id": "kr-pipeline-out"},
        *copy_lines("C5-T000004", [(1, 1, "P3-T1-0")], [None], None, generation=2),
        {"name": "closed"},
    ]
    with RunWriter(tmp_path) as writer:
        mapping = CopierLines(writer, stats, "kr-pipeline-out")
        for line in lines:
            mapping.handle(line)
        assert mapping.owed() == {"P3-T1-0"}  # P0-T1-1's copy may have happened (info)
        mapping.settle_open("the pipeline process ended with the transaction open")
    polls = [(p["process"], p["poll"], p["partition"], p["offset"], p["id"], p["txn"],
              p["isolation"], p["generation"]) for p in rows(tmp_path, "polls")]
    assert polls == [
        (5, 1, 0, 0, "P0-T1-0", "C5-T000001", "read_committed", 1),
        (5, 2, 1, 0, "P0-T1-1", "C5-T000002", "read_committed", 1),
        (5, 2, 1, 1, "P3-T1-0", "C5-T000002", "read_committed", 1),
        (105, 3, 1, 0, "P0-T1-1", "C5-T000003", "read_committed", 1),  # after the rewind
        (205, 4, 1, 1, "P3-T1-0", "C5-T000004", "read_committed", 2),  # after the rebuild
    ]
    sends = {s["id"]: (s["process"], s["topic"], s["status"], s["offset"], s["source"])
             for s in rows(tmp_path, "sends")}
    assert sends == {
        "C5-T000001-0": (5, "out", "ok", 0, "P0-T1-0"),
        "C5-T000002-0": (5, "out", "ok", 1, "P0-T1-1"),
        "C5-T000002-1": (5, "out", "ok", 2, "P3-T1-0"),
        "C5-T000003-0": (105, "out", "info", None, "P0-T1-1"),  # a retried copy's error
        "C5-T000004-0": (205, "out", "info", None, "P3-T1-0"),  # open when the JVM ended
    }
    txns = {t["txn"]: (t["process"], t["status"], t.get("offsets")) for t in rows(tmp_path, "txns")}
    assert txns == {"C5-T000001": (5, "committed", "in:0:1"),
                    "C5-T000002": (5, "aborted", "in:1:2"),
                    "C5-T000003": (105, "info", "in:1:1"),
                    "C5-T000004": (205, "info", None)}
    events = [(e["kind"], e["process"]) for e in rows(tmp_path, "events")]
    assert events == [("start", 5), ("start", 105), ("client-crash", 105), ("start", 205)]
    assert mapping.crashes == ["after a failed transaction"]
    # copies never count towards the workload's messages; a committed one is acknowledged
    assert stats.sent == 0 and "C5-T000001-0" in stats.acked_ids
    assert mapping.copied == {"P0-T1-0"} and mapping.maybe == {"P0-T1-1", "P3-T1-0"}


def test_the_java_pipeline_pair_is_chosen(tmp_path):
    (case,) = parse_matrix(Path("m.yaml"), {"dimensions": {
        "client": ["java"], "workload": ["txn_pipeline"], "topics": [2]}}).cases
    assert choice.workload_of(case) is java_pipeline.WORKLOAD
    assert case.semantics == "exactly-once" and "txn_pipeline" in case.markers


def test_a_missing_java_ends_the_pipeline_case_in_one_line(tmp_path, monkeypatch):
    from pytest_kreplica.cluster.kafka import maven
    from pytest_kreplica.errors import EnvironmentProblem, HarnessError

    def no_java():
        raise EnvironmentProblem("Java 17 or newer not found: install a JDK or set JAVA_HOME")

    monkeypatch.setattr(maven, "find_java", no_java)
    (case,) = parse_matrix(Path("m.yaml"), {"dimensions": {
        "client": ["java"], "workload": ["txn_pipeline"], "topics": [2]}}).cases
    with RunWriter(tmp_path) as writer, pytest.raises(HarnessError) as info:
        java_pipeline.produce(case, ["in", "out"], "127.0.0.1:1", writer)
    assert str(info.value).startswith("Java 17 or newer not found")
    assert "\n" not in str(info.value)
    assert rows(tmp_path, "events") == []  # nothing started
