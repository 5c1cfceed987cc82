"""The producer / consumer process as a nemesis target, its pure parts: each incarnation a
history process and ids of its own, a killed incarnation's sends in flight written off as
``info`` (never ok, never fail), a producer kill excusing no loss of acknowledged records,
and the combinations that cannot run refused at matrix load with one line each."""

from __future__ import annotations

import json

import pytest

from pytest_kreplica.errors import MatrixError
from pytest_kreplica.history import RunWriter
from pytest_kreplica.matrix import load_matrix
from pytest_kreplica.validation.evidence import excusing_events
from pytest_kreplica.validation.tradeoffs import judge
from pytest_kreplica.workloads.incarnations import (
    INCARNATION_STEP,
    incarnation_id,
    incarnation_process,
)
from pytest_kreplica.workloads.java_client import ProducerLines, killed_upper
from pytest_kreplica.workloads.rdkafka_client import ChildSends
from pytest_kreplica.workloads.sends import ProduceStats
from tests.matrix_lines import write_matrix
from tests.unit.test_tradeoffs import COUNTS, lost_m3


def rows(run_dir, table):
    path = run_dir / f"{table}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_each_incarnation_is_a_process_of_its_own_with_ids_of_its_own():
    assert [incarnation_process(0, k) for k in range(3)] == [0, INCARNATION_STEP,
                                                             2 * INCARNATION_STEP]
    assert [incarnation_process(1, k) for k in range(2)] == [1, 1 + INCARNATION_STEP]
    # VerifiableProducer counts from 0 in every JVM: --value-prefix K makes "K.N"
    ids = {incarnation_id(k, n) for k in range(3) for n in range(50)}
    assert len(ids) == 150
    assert incarnation_id(0, 7) == "7" and incarnation_id(2, 7) == "2.7"


def test_a_killed_java_incarnation_writes_off_its_unanswered_ids_as_info(tmp_path):
    stats = ProduceStats()
    with RunWriter(tmp_path) as writer:
        lines = ProducerLines(writer, stats, 100, retried=True, incarnation=1)
        for n, offset in ((0, 10), (1, 11), (3, 12)):
            lines.on_event({"name": "producer_send_success", "value": f"1.{n}", "topic": "t",
                            "partition": 0, "offset": offset})
        assert lines.next_number() == 4
        # no tool_data line: the JVM was SIGKILLed; its throttle bounds what it sent
        upper = killed_upper(100.0, 2.0, lines.next_number())
        lines.write_off("t", upper, "in flight when the producer process was killed")
    sends = rows(tmp_path, "sends")
    ok = [s for s in sends if s["status"] == "ok"]
    info = [s for s in sends if s["status"] == "info"]
    assert [s["id"] for s in ok] == ["1.0", "1.1", "1.3"]
    assert "1.2" in {s["id"] for s in info} and len(info) == upper - 3
    assert not [s for s in sends if s["status"] == "fail"]
    assert {s["process"] for s in sends} == {100}
    assert all(s["id"].startswith("1.") for s in sends)
    assert (stats.ok, stats.info) == (3, upper - 3)


def test_the_killed_bound_covers_the_throttled_rate_and_what_was_answered():
    assert killed_upper(1000.0, 10.0, 0) >= 10_000
    assert killed_upper(1000.0, 0.0, 5000) == 5000  # never fewer than were answered


def test_a_killed_librdkafka_incarnation_writes_off_what_it_invoked_as_info(tmp_path):
    stats = ProduceStats()
    with RunWriter(tmp_path) as writer:
        sends = ChildSends(writer, stats)
        for n in range(3):
            sends.on_line({"k": "invoke", "a": [f"2.{n}", "t", 0, 1000 + n]})
        sends.on_line({"k": "send", "a": [200, "t", 0, "2.0", 5, "ok", 1000, 1100, None]})
        sends.write_off(200)  # the child was SIGKILLed: 2.1 and 2.2 were in flight
    written = {s["id"]: s for s in rows(tmp_path, "sends")}
    assert written["2.0"]["status"] == "ok"
    assert {written[i]["status"] for i in ("2.1", "2.2")} == {"info"}
    assert written["2.1"]["invoke_ns"] == 1001 and written["2.1"]["process"] == 200
    assert (stats.ok, stats.info) == (1, 2)


def producer_kill(**over):
    """The nemesis's record of a SIGKILL of the producer process (a component fault)."""
    return {"index": 1, "failure": "hard", "target": "producer", "topic": None,
            "partition": None, "node": "producer", "strike_ns": 40, "struck_ns": 45,
            "restore_ns": 500, "recovered_ns": 600, "lag_bound_ms": 5000, **over}


def test_a_producer_kill_excuses_no_loss_under_any_acks(tmp_path):
    for acks in (-1, 1, 0):
        assert excusing_events([producer_kill()], {"acks": acks}) == []
        # even a record that names a partition (as a leader's would) is not evidence
        assert excusing_events([producer_kill(topic="t", partition=0, leader_before=1)],
                               {"acks": acks}) == []
    # the planted acks=1 loss of m3 that a leader kill excuses: a producer kill does not
    run = lost_m3(tmp_path)
    doc = judge("at-least-once", COUNTS, run, [producer_kill()], {"acks": 1})
    assert doc["accepted"] is False and "no fault explains its loss" in doc["reason"], doc


@pytest.mark.parametrize(("dimensions", "expected"), [
    ("{failure: [hard], target: [producer]}",
     "m.yaml: case m-default.target: producer needs a client whose producer is a process of "
     "its own (kafka-python's runs as a thread of the pytest worker), got client "
     "kafka-python; allowed: client java | librdkafka, or target leader | follower | "
     "controller"),
    ("{failure: [slow_link], target: [consumer], client: [librdkafka]}",
     "m.yaml: case m-default.failure: slow_link cannot strike the consumer process; allowed "
     "with target consumer: clean | hard | soft"),
    ("{failure: [hard], target: [producer], client: [java], "
     "producer_mode: [async], fault_timing: [consume]}",
     "m.yaml: case m-default.fault_timing: consume: the producer has finished by then, got "
     "target producer; allowed with target producer: produce"),
])
def test_a_client_target_that_cannot_run_is_one_line(tmp_path, dimensions, expected):
    with pytest.raises(MatrixError) as info:
        load_matrix(write_matrix(tmp_path, dimensions))
    assert str(info.value).startswith(str(tmp_path / "m.yaml"))
    assert expected.split(": ", 1)[1] in str(info.value) and "\n" not in str(info.value)


def test_the_client_targets_load_for_the_process_clients(tmp_path):
    path = write_matrix(tmp_path, "{failure: [hard, soft, clean], target: [producer, consumer], "
                             "client: [java, librdkafka], producer_mode: [async]}")
    cases = load_matrix(path).cases
    assert len(cases) == 12
    assert {"target_producer", "target_consumer"} <= {m for c in cases for m in c.markers}
