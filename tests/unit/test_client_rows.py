"""Each client's output becomes the history rows of the run-directory contract: planted
VerifiableProducer / VerifiableConsumer JSON lines and confluent-kafka delivery reports and
messages (the library's own objects), written through a real ``RunWriter`` and read back;
and the client dimension's collection errors, one line each."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError, Message

from pytest_kreplica.errors import MatrixError
from pytest_kreplica.history import RunWriter
from pytest_kreplica.matrix import load_matrix
from pytest_kreplica.report.sections import client_text
from pytest_kreplica.workloads.java_client import ProducerLines
from pytest_kreplica.workloads.rdkafka_child import delivery_status, poll_rows
from pytest_kreplica.workloads.rdkafka_client import ChildSends
from pytest_kreplica.workloads.sends import ProduceStats
from pytest_kreplica.workloads.verifiable import ConsumerLines, producer_result
from tests.matrix_lines import write_matrix


def rows(run_dir, table):
    path = run_dir / f"{table}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


SUCCESS = {"name": "producer_send_success", "key": None, "value": "7", "topic": "t",
           "partition": 2, "offset": 41, "timestamp": 1}


@pytest.mark.parametrize(("line", "retried", "expected"), [
    (SUCCESS, False, ("t", 2, "7", 41, "ok", None)),
    ({**SUCCESS, "offset": -1}, False, ("t", 2, "7", None, "info",
                                        "acks=0: no acknowledgement")),
    ({"name": "producer_send_error", "value": "8", "topic": "t",
      "exception": "class org.apache.kafka.common.errors.NotEnoughReplicasException",
      "message": "few"}, False, ("t", 0, "8", None, "fail", "NotEnoughReplicasException: few")),
    # a retrying producer's last error says nothing about its earlier attempts
    ({"name": "producer_send_error", "value": "8", "topic": "t",
      "exception": "class org.apache.kafka.common.errors.NotEnoughReplicasException",
      "message": "few"}, True, ("t", 0, "8", None, "info", "NotEnoughReplicasException: few")),
    ({"name": "producer_send_error", "value": "9", "topic": "t",
      "exception": "class org.apache.kafka.common.errors.TimeoutException",
      "message": "Topic t not present in metadata after 15000 ms."}, True,
     ("t", 0, "9", None, "fail",
      "TimeoutException: Topic t not present in metadata after 15000 ms.")),
    ({"name": "producer_send_error", "value": "9", "topic": "t",
      "exception": "class org.apache.kafka.common.errors.TimeoutException",
      "message": "Expiring 1 record(s)"}, False,
     ("t", 0, "9", None, "info", "TimeoutException: Expiring 1 record(s)")),
    ({"name": "startup_complete"}, False, None),
])
def test_a_verifiable_producer_line_is_one_send(line, retried, expected):
    assert producer_result(line, retried) == expected


def test_verifiable_producer_lines_and_its_tool_data_give_one_row_per_sent_id(tmp_path):
    stats = ProduceStats()
    with RunWriter(tmp_path) as writer:
        lines = ProducerLines(writer, stats, 0, retried=True)
        for line in ({"name": "startup_complete"}, SUCCESS, {**SUCCESS, "value": "0",
                                                               "offset": 40},
                     {"name": "tool_data", "sent": 9, "acked": 2}):
            lines.on_event(line)
        lines.write_off("t", lines.sent)
    sends = rows(tmp_path, "sends")
    assert [(s["id"], s["status"], s["offset"]) for s in sends[:2]] == [("7", "ok", 41),
                                                                        ("0", "ok", 40)]
    assert sorted(s["id"] for s in sends[2:]) == [str(i) for i in (1, 2, 3, 4, 5, 6, 8)]
    assert {s["status"] for s in sends[2:]} == {"info"}
    assert (stats.sent, stats.ok, stats.info, stats.acked_ids) == (9, 2, 7, {"0", "7"})


def test_verifiable_consumer_lines_are_polls_and_assignments(tmp_path):
    planted = [
        {"name": "partitions_assigned", "partitions": [{"topic": "t", "partition": 0},
                                                       {"topic": "t", "partition": 1}]},
        {"name": "record_data", "topic": "t", "partition": 0, "offset": 5, "value": "3"},
        {"name": "record_data", "topic": "t", "partition": 1, "offset": 0, "value": "4"},
        {"name": "records_consumed", "count": 2, "partitions": []},
        {"name": "offsets_committed", "offsets": [], "success": True},
        {"name": "record_data", "topic": "t", "partition": 0, "offset": 6, "value": "5"},
        {"name": "records_consumed", "count": 1, "partitions": []},
        {"name": "partitions_revoked", "partitions": [{"topic": "t", "partition": 1}]},
    ]
    seen, positions = [], {}
    with RunWriter(tmp_path) as writer:
        lines = ConsumerLines(writer, 11)
        for line in planted:
            ids, where = lines.handle(line)
            seen += ids
            positions.update(where)
    polls = rows(tmp_path, "polls")
    assert [(p["poll"], p["index"], p["partition"], p["offset"], p["id"]) for p in polls] == [
        (1, 0, 0, 5, "3"), (1, 1, 1, 0, "4"), (2, 0, 0, 6, "5")]
    assert {p["process"] for p in polls} == {11}
    events = [(e["kind"], e["detail"]) for e in rows(tmp_path, "events")]
    assert events == [("assign", "t:0 t:1"), ("rebalance", "t:1")]
    assert seen == ["3", "4", "5"] and positions == {("t", 0): 7, ("t", 1): 1}


@pytest.mark.parametrize(("err", "offset", "retried", "expected"), [
    (None, 12, False, (12, "ok", None)),
    (None, -1001, False, (None, "info", "acks=0: no acknowledgement")),  # OFFSET_INVALID
    (KafkaError(KafkaError.NOT_ENOUGH_REPLICAS), -1001, False,
     (None, "fail", "NOT_ENOUGH_REPLICAS: Broker: Not enough in-sync replicas")),
    (KafkaError(KafkaError.NOT_ENOUGH_REPLICAS), -1001, True,
     (None, "info", "NOT_ENOUGH_REPLICAS: Broker: Not enough in-sync replicas")),
    (KafkaError(KafkaError._MSG_TIMED_OUT), -1001, False,
     (None, "info", "_MSG_TIMED_OUT: Local: Message timed out")),
    (KafkaError(KafkaError._UNKNOWN_PARTITION), -1001, True,
     (None, "fail", "_UNKNOWN_PARTITION: Local: Unknown partition")),
])
def test_a_librdkafka_delivery_report_is_ok_fail_or_info(err, offset, retried, expected):
    assert delivery_status(err, offset, retried) == expected


def test_a_librdkafka_consume_call_is_one_poll_and_errors_are_left_out():
    messages = [Message(topic="t", partition=0, offset=3, value=b"17 xxxx"),
                Message(topic="t", partition=0, offset=4, value=b"18"),
                Message(error=KafkaError(KafkaError._TRANSPORT)),
                Message(topic="t", partition=2, offset=0, value=b"19")]
    found, positions, errors = poll_rows(messages, 1, 5, 999)
    assert found == [[1, 5, "t", 0, 3, "17", 999, 0], [1, 5, "t", 0, 4, "18", 999, 1],
                     [1, 5, "t", 2, 0, "19", 999, 2]]
    assert positions == {("t", 0): 5, ("t", 2): 1}
    assert len(errors) == 1 and errors[0].startswith("_TRANSPORT")


def test_librdkafka_child_lines_leave_every_invoked_id_one_row(tmp_path):
    stats = ProduceStats()
    with RunWriter(tmp_path) as writer:
        sends = ChildSends(writer, stats)
        for line in ({"k": "invoke", "a": ["0", "t", 0, 100]},
                     {"k": "invoke", "a": ["1", "t", 1, 101]},
                     {"k": "send", "a": [0, "t", 0, "0", 7, "ok", 100, 150, None], "kw": {}},
                     {"k": "invoke", "a": ["2", "t", 0, 102]},
                     {"k": "send", "a": [0, "t", 0, "2", None, "fail", 102, 160,
                                         "NOT_ENOUGH_REPLICAS: few"], "kw": {}}):
            sends.on_line(line)
        sends.write_off(0)  # the child was SIGKILLed before id 1's answer
    found = {s["id"]: (s["status"], s["offset"], s["invoke_ns"]) for s in rows(tmp_path,
                                                                              "sends")}
    assert found == {"0": ("ok", 7, 100), "1": ("info", None, 101), "2": ("fail", None, 102)}
    assert (stats.sent, stats.ok, stats.failed, stats.info) == (3, 1, 1, 1)


def test_the_report_header_names_the_client():
    assert client_text({"name": "java", "version": "4.3.1"}) == (
        " &nbsp; client <b>java</b> <code>4.3.1</code>")
    assert client_text(None) == ""


@pytest.mark.parametrize(("dimensions", "expected"), [
    ("{client: [kafka-python, rust]}",
     "m.yaml: dimensions.client: bad value 'rust'; allowed: kafka-python | java | librdkafka"),
    ("{client: [java], producer_mode: [sync]}",
     "m.yaml: case m-default.producer_mode: sync cannot run on client java (VerifiableProducer"
     " only sends asynchronously); allowed with client java: async"),
    ("{client: [java], producer_mode: [async], topics: [2]}",
     "m.yaml: case m-default.topics: 2 cannot run on client java"),
    ("{client: [librdkafka], workload: [txn]}",
     "m.yaml: case m-default.workload: txn does not run on client librdkafka; allowed with "
     "client librdkafka: plain"),
])
def test_a_bad_client_is_one_line_naming_file_key_and_allowed_values(tmp_path, dimensions,
                                                                     expected):
    with pytest.raises(MatrixError) as info:
        load_matrix(write_matrix(tmp_path, dimensions))
    assert str(info.value).startswith(str(tmp_path / expected.split(":", 1)[0]))
    assert expected.split(": ", 1)[1] in str(info.value) and "\n" not in str(info.value)


def test_the_default_client_names_no_id_part_and_the_others_do(tmp_path):
    path = write_matrix(tmp_path,
                        "{client: [kafka-python, java, librdkafka], producer_mode: [async]}")
    cases = load_matrix(path).cases
    assert [c.case_id for c in cases] == ["m-default", "m-java", "m-librdkafka"]
    assert "client_java" in cases[1].markers


def test_a_wrong_client_stops_pytest_with_one_line(pytester):
    (pytester.path / "matrices").mkdir()
    (pytester.path / "matrices" / "mine.yaml").write_text(
        "scenario: replication\ndimensions: {client: [kafka-python, jvm]}\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert errors == [f"ERROR: {pytester.path / 'matrices' / 'mine.yaml'}: dimensions.client: "
                      "bad value 'jvm'; allowed: kafka-python | java | librdkafka"]


def test_ci_keeps_exactly_one_case_per_other_client():
    from pytest_kreplica.matrix.catalog import shipped_dir

    ci = [c for path in sorted(shipped_dir().glob("*.yaml"))
          for c in load_matrix(path).cases if "ci" in c.markers]
    leader = [c.client for c in ci if c.client != "kafka-python" and c.target == "leader"
              and c.failure != "none"]
    assert sorted(leader) == ["java", "librdkafka"]
    # and one transactional case on the Java client (its transactional producer)
    assert [c.workload for c in ci if c.client == "java" and c.workload != "plain"] == ["txn"]
    # and one case of the producer process killed mid-run (docs/clients.md)
    assert [c.client for c in ci if c.target == "producer"] == ["librdkafka"]
