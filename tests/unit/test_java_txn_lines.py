"""The Java txn client's pure parts: its JSON lines -> history rows (the meaning of the
kafka-python txn workload's rows), the matrix's client / workload pairs, and a missing
``javac`` as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_kreplica.errors import ClusterError, MatrixError
from pytest_kreplica.history import RunWriter
from pytest_kreplica.matrix import load_matrix, parse_matrix
from pytest_kreplica.workloads import choice, java_txn
from pytest_kreplica.workloads.java_build import find_javac
from pytest_kreplica.workloads.java_txn import TxnLines
from pytest_kreplica.workloads.sends import ProduceStats
from tests.matrix_lines import write_matrix


def rows(run_dir: Path, table: str) -> list[dict]:
    path = run_dir / f"{table}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def txn_lines(txn: str, records: list[tuple[str, dict]], outcome: str | None,
              end_ns: int | None = 150, error: str | None = None, process: int = 0
              ) -> list[dict]:
    """The program's lines of one transaction: begin, per record its invoke and (when given)
    its answer, and (``outcome`` not None) its end."""
    head = {"process": process, "txn": txn}
    out = [{"name": "begin", **head, "ns": 100}]
    for i, (answer, extra) in enumerate(records):
        rid = f"{txn}-{i}"
        out.append({"name": "invoke", **head, "id": rid, "topic": "t", "partition": i,
                    "ns": 110 + i})
        if answer:
            out.append({"name": answer, **head, "id": rid, **extra})
    if outcome is not None:
        out.append({"name": "end", **head, "outcome": outcome, "end_ns": end_ns, "ns": 200,
                    "error": error})
    return out


def test_the_program_lines_become_the_txn_workloads_rows(tmp_path):
    stats = ProduceStats()
    timeout = {"exception": "org.apache.kafka.common.errors.TimeoutException",
               "message": "Expiring 1 record(s)"}
    lines = [
        {"name": "ready", "process": 0, "transactional_id": "kr-txn-t-0"},
        *txn_lines("P0-T000001", [("acked", {"offset": 4}), ("acked", {"offset": 9})],
                   "committed"),
        *txn_lines("P0-T000002", [("acked", {"offset": 5})], "aborted"),
        *txn_lines("P0-T000003", [("acked", {"offset": 6}), ("send_error", timeout)],
                   "aborted", end_ns=None, error="send failed"),
        *txn_lines("P0-T000004", [("acked", {"offset": 7})], "info",
                   error="TimeoutException: commit"),
        {"name": "replaced", "process": 0},
        *txn_lines("P0-T000005", [("acked", {"offset": 8}), ("", {})], None),
    ]
    with RunWriter(tmp_path) as writer:
        mapping = TxnLines(writer, stats)
        for line in lines:
            mapping.handle(line)
        mapping.settle_open("the producer process ended with the transaction open")
    sends = {s["id"]: (s["status"], s["offset"], s["txn"], s["invoke_ns"])
             for s in rows(tmp_path, "sends")}
    assert sends == {
        "P0-T000001-0": ("ok", 4, "P0-T000001", 110), "P0-T000001-1": ("ok", 9, "P0-T000001", 111),
        "P0-T000002-0": ("ok", 5, "P0-T000002", 110),  # acknowledged, then aborted
        "P0-T000003-0": ("ok", 6, "P0-T000003", 110),
        "P0-T000003-1": ("info", None, "P0-T000003", 111),  # a retried send's error: info
        "P0-T000004-0": ("ok", 7, "P0-T000004", 110),
        "P0-T000005-0": ("ok", 8, "P0-T000005", 110),
        "P0-T000005-1": ("info", None, "P0-T000005", 111),  # never answered
    }
    txns = {t["txn"]: (t["status"], t["begin_ns"], t["end_ns"]) for t in rows(tmp_path, "txns")}
    assert txns["P0-T000001"] == ("committed", 100, 150)
    assert txns["P0-T000002"] == ("aborted", 100, 150)
    assert txns["P0-T000003"] == ("aborted", 100, None)  # aborted before it could end
    assert txns["P0-T000004"] == ("info", 100, 150)  # the commit threw: it may have happened
    assert txns["P0-T000005"][0::2] == ("info", None)  # open when the process ended
    events = [(e["kind"], e["process"]) for e in rows(tmp_path, "events")]
    assert events == [("start", 0), ("client-crash", 0)]
    # what the drain waits for: the committed records only
    assert set(stats.acked_ids) == {"P0-T000001-0", "P0-T000001-1"}
    assert stats.sent == 8


def test_a_producer_that_cannot_start_is_recorded(tmp_path):
    with RunWriter(tmp_path) as writer:
        mapping = TxnLines(writer, ProduceStats())
        mapping.handle({"name": "fatal", "process": 3, "error": "TimeoutException: init"})
    assert mapping.fatal == ["producer 3: TimeoutException: init"]
    (event,) = rows(tmp_path, "events")
    assert event["kind"] == "client-crash" and "TimeoutException: init" in event["detail"]


def test_the_java_txn_pair_is_chosen_and_other_pairs_are_refused(tmp_path):
    (case,) = parse_matrix(Path("m.yaml"), {"dimensions": {
        "client": ["java"], "workload": ["txn"], "topics": [2]}}).cases
    assert choice.workload_of(case) is java_txn.WORKLOAD
    assert case.client == "java" and "client_java" in case.markers


@pytest.mark.parametrize(("dimensions", "expected"), [
    ("{client: [librdkafka], workload: [txn_pipeline], topics: [2]}",
     "case m-default.workload: txn_pipeline does not run on client librdkafka; allowed with "
     "client librdkafka: plain"),
    ("{client: [librdkafka], workload: [txn]}",
     "case m-default.workload: txn does not run on client librdkafka; allowed with client "
     "librdkafka: plain"),
    ("{client: [java], workload: [txn], failure: [hard], target: [producer]}",
     "case m-default.target: producer needs workload plain on client java"),
])
def test_an_unsupported_client_workload_pair_is_one_line(tmp_path, dimensions, expected):
    with pytest.raises(MatrixError) as info:
        load_matrix(write_matrix(tmp_path, dimensions))
    text = str(info.value)
    assert text.startswith(f"{tmp_path / 'm.yaml'}: ") and expected in text, text
    assert "\n" not in text


def test_a_missing_javac_is_one_line(tmp_path, monkeypatch):
    java = tmp_path / "jre" / "bin" / "java"  # a JRE: java without javac
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ClusterError) as info:
        find_javac(str(java))
    text = str(info.value)
    assert "javac not found" in text and "JAVA_HOME" in text and "\n" not in text


def test_a_missing_java_is_one_line_and_a_harness_error(monkeypatch):
    from pytest_kreplica.cluster.kafka import maven
    from pytest_kreplica.errors import EnvironmentProblem, HarnessError
    from pytest_kreplica.workloads.java_build import program_command

    def no_java():
        raise EnvironmentProblem("Java 17 or newer not found: install a JDK or set JAVA_HOME")

    monkeypatch.setattr(maven, "find_java", no_java)
    with pytest.raises(HarnessError) as info:
        program_command(None, java_txn.PROGRAM, [], [])
    assert str(info.value).startswith("Java 17 or newer not found") and "\n" not in str(
        info.value)
