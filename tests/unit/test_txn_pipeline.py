"""The read-process-write pipeline's pure logic: the matrix value, and how one copy
transaction is recorded (stand-in clients; the real ones run in matrices/transactions.yaml)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

from pytest_kreplica.history import RunWriter
from pytest_kreplica.matrix import DIMENSIONS, load_matrix
from pytest_kreplica.workloads import txn_pipeline
from pytest_kreplica.workloads.plain import ProduceStats
from tests.fake_txn import FakeProducer
from tests.matrix_lines import matrix_error_line

MATRICES = Path(__file__).parents[2] / "matrices"


def test_pipeline_cases_carry_both_markers_and_expect_exactly_once():
    assert DIMENSIONS["workload"].markers("txn_pipeline") == ["txn", "txn_pipeline"]
    matrix = load_matrix(MATRICES / "transactions.yaml")
    pipeline = [c for c in matrix.cases if c.workload == "txn_pipeline"]
    assert pipeline and all(c.semantics == "exactly-once" for c in pipeline)
    assert sorted((c.workload, c.failure, c.target, c.isolation or "", c.client)
                  for c in matrix.cases if "ci" in c.markers) == [
        ("txn", "hard", "group-member", "", "kafka-python"),
        ("txn", "none", "leader", "", "java"),
        ("txn", "none", "leader", "", "kafka-python"),
        ("txn", "none", "leader", "read_uncommitted", "kafka-python"),
        ("txn_pipeline", "none", "leader", "", "kafka-python")]


def test_the_weaker_isolation_is_a_txn_group_setting_only(tmp_path):
    matrix = load_matrix(MATRICES / "transactions.yaml")
    weak = [c for c in matrix.cases if c.isolation == "read_uncommitted"]
    assert weak and all(c.workload == "txn" and "isolation_read_uncommitted" in c.markers
                        for c in weak)
    text = matrix_error_line(tmp_path, "  workload: [txn_pipeline]\n  topics: [2]\n"
                                       "  isolation: [read_uncommitted]\n")
    assert "isolation" in text and "allowed: workload txn" in text


def test_a_pipeline_with_one_topic_is_one_matrix_line(tmp_path):
    text = matrix_error_line(tmp_path, "  workload: [txn_pipeline]\n  topics: [1]\n")
    assert "topics >= 2" in text


class _Consumer:
    def group_metadata(self):
        return "group"


def _records():
    return [SimpleNamespace(topic="in", partition=p, offset=o, value=f"P0-T{o}-{p}".encode())
            for p, o in ((0, 4), (0, 5), (1, 9))]


def _copy(tmp_path, producer, commits):
    seed = next(s for s in range(100)
                if (random.Random(s).random() >= txn_pipeline.ABORT_SHARE) is commits)
    stats = ProduceStats()
    with RunWriter(tmp_path) as w:
        pipe = txn_pipeline.Pipeline(SimpleNamespace(seed=0, message_bytes=0), ["in"], "out",
                                     "localhost:1", w, stats)
        pipe._rng = random.Random(seed)
        pipe.process = txn_pipeline.PIPELINE_PROCESS
        result = pipe._copy(_Consumer(), producer, _records(), 3)
    read = [json.loads(x) for x in (tmp_path / "polls.jsonl").read_text().splitlines()]
    sends = [json.loads(x) for x in (tmp_path / "sends.jsonl").read_text().splitlines()]
    (txn,) = [json.loads(x) for x in (tmp_path / "txns.jsonl").read_text().splitlines()]
    return result, pipe, stats, read, sends, txn


def test_a_committed_copy_names_its_sources_and_commits_the_positions(tmp_path):
    producer = FakeProducer()
    (usable, committed), pipe, stats, read, sends, txn = _copy(tmp_path, producer, True)
    assert usable and committed and txn["status"] == "committed"
    assert txn["offsets"] == "in:0:6 in:1:10"
    assert {tp.partition: o.offset for tp, o in producer.offsets.items()} == {0: 6, 1: 10}
    assert [s["source"] for s in sends] == ["P0-T4-0", "P0-T5-0", "P0-T9-1"]
    assert all(s["topic"] == "out" and s["txn"] == txn["txn"] for s in sends)
    assert all(r["txn"] == txn["txn"] and r["isolation"] == "read_committed" for r in read)
    assert pipe.copied == {"P0-T4-0", "P0-T5-0", "P0-T9-1"}
    assert stats.acked_ids == {s["id"] for s in sends} and stats.sent == 0


def test_an_aborted_copy_owes_its_sources_still(tmp_path):
    (usable, committed), pipe, stats, _, sends, txn = _copy(tmp_path, FakeProducer(), False)
    assert usable and not committed and txn["status"] == "aborted"
    assert pipe.copied == set() and stats.acked_ids == set() and len(sends) == 3


def test_a_failed_commit_is_indeterminate_and_rebuilds_the_clients(tmp_path):
    (usable, committed), pipe, stats, _, _, txn = _copy(tmp_path, FakeProducer("commit"), True)
    assert not usable and not committed and txn["status"] == "info"
    assert "commit failed" in txn["error"] and pipe.copied == set()
    assert pipe.maybe == {"P0-T4-0", "P0-T5-0", "P0-T9-1"}  # not waited for at the end


def test_a_failed_offset_commit_aborts_the_copy(tmp_path):
    producer = FakeProducer("offsets")
    (usable, committed), _, _, _, _, txn = _copy(tmp_path, producer, True)
    assert usable and not committed and txn["status"] == "aborted"
    assert producer.calls[-1] == "abort" and "commit" not in producer.calls
