"""The log model's pure logic, the replay file format and the rule weights (no Kafka)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_kreplica.logmodel.machine import WEIGHTS, LogMachine
from pytest_kreplica.logmodel.model import Batch, LogModel, ModelMismatch, Record
from pytest_kreplica.logmodel.replay import load_replay, render

pytestmark = pytest.mark.log_model


def model_with(timestamps: list[int]) -> LogModel:
    model = LogModel()
    model.append([(None, b"v%d" % i, ts) for i, ts in enumerate(timestamps)])
    return model


def test_append_gives_dense_offsets_and_reads_return_them():
    model = model_with([5, 1, 9])
    assert model.high_watermark == 3
    assert [r.offset for r in model.read(1, 10)] == [1, 2]
    assert model.readable(0) and model.readable(3) and not model.readable(4)


def test_check_read_names_expected_and_seen():
    model = model_with([5, 1, 9])
    good = model.read(0, 3)
    model.check_read(0, good, "here", 3)
    with pytest.raises(ModelMismatch, match="expected 3 records .* seen 2"):
        model.check_read(0, good[:2], "here", 3)
    wrong = [good[0], Record(1, None, b"other", 1)]
    with pytest.raises(ModelMismatch, match="record #1: expected"):
        model.check_read(0, wrong, "here", 2)
    with pytest.raises(ModelMismatch, match="past the high watermark"):
        model.check_read(2, [good[2], Record(3, None, b"x", 0)], "here", 1)


def test_low_watermark_may_lag_below_the_log_start_but_not_below_the_request():
    """A new leader answers DeleteRecords with the least log start it knows of its live
    replicas, which may lag the leader's own (a CI-like run saw low watermark 0 while the
    log started at 12). Below the requested offset it would be a broken promise."""
    model = model_with(list(range(20)))
    model.delete_records(12)
    model.check_low_watermark(0, 0, "DeleteRecords(0) on a new leader")
    model.check_low_watermark(12, 12, "DeleteRecords(12)")
    with pytest.raises(ModelMismatch, match="requested offset 15 .* seen 13"):
        model.check_low_watermark(15, 13, "DeleteRecords(15)")
    with pytest.raises(ModelMismatch, match="highest log start 12, seen 14"):
        model.check_low_watermark(12, 14, "DeleteRecords(12)")
    assert model.log_start == 12  # a low watermark never moves the model's log start


def test_delete_records_moves_the_log_start_only_forward():
    model = model_with([1, 2, 3, 4])
    assert model.delete_records(2) == 2
    assert model.delete_records(1) == 2
    assert not model.readable(1)
    with pytest.raises(ValueError):
        model.delete_records(5)
    model.observe_log_start(2, "x")
    with pytest.raises(ModelMismatch, match="expected 2, seen 3"):
        model.observe_log_start(3, "x")


def test_retention_is_a_range_up_to_the_first_record_to_keep():
    model = model_with([10, 30, 20, 50, 15])
    # cutoff 25: offsets 0 may go; offset 1 (ts 30) blocks everything after it
    assert model.allow_retention(25) == (0, 1)
    model.observe_log_start(0, "no segment deleted yet")  # allowed: segment-granular
    model.observe_log_start(1, "first segment deleted")
    with pytest.raises(ModelMismatch, match="between 1 and 1|expected 1"):
        model.observe_log_start(2, "too far")
    # cutoff past every timestamp: the whole log may go
    assert model.allow_retention(100) == (1, 5)
    model.observe_log_start(5, "all gone")
    assert model.read(5, 10) == []


def test_a_new_leader_may_report_a_lower_log_start_but_not_below_delete_records():
    """Retention is per replica: CI saw earliest 1 on the old leader and 0 after a clean
    restart of it. DeleteRecords is acknowledged only once every live replica reached it."""
    model = model_with([10, 30, 20, 50])
    model.delete_records(1)
    model.allow_retention(25)  # offset 1 (ts 30) is the first record to keep: nothing more
    model.allow_retention(100)  # everything may go
    model.observe_log_start(3, "the old leader's retention")
    with pytest.raises(ModelMismatch, match="between 3 and 4"):
        model.observe_log_start(1, "the same leader cannot go back")
    model.leadership_may_have_moved()
    model.observe_log_start(1, "a new leader whose retention had not run yet")
    assert model.readable(1) and model.read(1, 1)[0].timestamp == 30
    with pytest.raises(ModelMismatch, match="between 1 and 4"):
        model.observe_log_start(0, "below what DeleteRecords made durable")


@given(st.lists(st.integers(0, 100), max_size=30), st.integers(0, 30), st.integers(-1, 101))
def test_offset_for_time_is_the_first_offset_at_or_after(timestamps, start, target):
    model = model_with(timestamps)
    model.delete_records(min(start, model.high_watermark))
    want = next((o for o in range(model.log_start, len(timestamps))
                 if timestamps[o] >= target), None)
    assert model.offset_for_time(target) == want


def test_a_deleted_record_reaching_the_time_lets_kafka_answer_none_and_nothing_else():
    """Kafka searches the first segment whose largest timestamp reaches the target, which
    still counts records below the log start: none is allowed then, and only then."""
    model = model_with([10, 90, 20, 95, 30])
    model.delete_records(2)
    assert model.time_answers(80) == (3, None)  # offset 1 (90) is deleted but reaches 80
    assert model.time_answers(93) == (3,)  # no deleted record reaches 93
    assert model.time_answers(96) == (None,)  # nothing reaches 96: none is the answer
    assert model.time_answers(5) == (2, None)  # the log start itself, or none (10 and 90)
    model.delete_records(4)
    assert model.time_answers(25) == (4, None)  # 90 and 95 now deleted
    assert model.time_answers(94) == (None,)


def test_the_first_record_reaching_the_time_since_the_local_start():
    """What the remote tier's search by time may answer instead (a Kafka finding): the first
    qualifying record at or past the local log start."""
    model = model_with([10, 90, 20, 95, 30, 99])
    model.delete_records(2)
    assert model.offset_for_time(80) == 3
    assert model.offset_for_time(80, since=4) == 5
    assert model.offset_for_time(80, since=1) == 3  # never below the log start
    assert model.offset_for_time(100, since=4) is None


def test_the_tiered_machine_adds_the_local_answer_only_where_none_is_allowed():
    from types import SimpleNamespace

    from pytest_kreplica.logmodel.tiered import TieredLogMachine

    asked = []
    machine = TieredLogMachine.__new__(TieredLogMachine)
    machine.model = model_with([10, 90, 20, 95, 30, 99])
    machine.model.delete_records(2)
    machine.topic = "t"
    machine.system = SimpleNamespace(list_offset=lambda topic, spec: asked.append(spec) or 4)
    assert machine.time_answers(80) == (3, None, 5)  # 90 is deleted and reaches 80
    assert machine.time_answers(96) == (5,)  # nothing deleted reaches 96
    assert machine.time_answers(100) == (None,)
    assert asked == ["earliest-local"]  # the local start asked only when it matters


def test_replay_file_round_trips(tmp_path):
    program = [("create_topic", {"segment_bytes": 1024}),
               ("produce", {"batch": Batch(((b"k", None, 7), (None, b"\x00v", 9)), "gzip", "1")}),
               ("read", {"position": 100, "isolation": "read_committed", "limit": 3})]
    path = tmp_path / "replay.py"
    path.write_text(render(program, LogMachine, 'ModelMismatch: boom """quoted"""\nmore'))
    steps, machine = load_replay(path)
    assert steps == program
    assert machine is LogMachine
    text = path.read_text()
    assert "pytest --kreplica-replay" in text and "def test_replay(kreplica_log_replay)" in text
    compile(text, str(path), "exec")


def test_rules_are_registered_by_weight():
    names = [r.function.__name__ for r in LogMachine.setup_state().rules]
    for name, weight in WEIGHTS.items():
        assert names.count(name) == weight, name


def _deleting_machine(disruptions: int, earliest: int):
    """A LogMachine whose system's DeleteRecords is never answered (a stand-in)."""
    from collections import Counter
    from types import SimpleNamespace

    from pytest_kreplica.logmodel.system import DeleteRecordsUnanswered

    def unanswered(topic, offset):
        raise DeleteRecordsUnanswered(f"expected DeleteRecords {topic} up to offset {offset}")

    machine = LogMachine.__new__(LogMachine)
    machine.model = model_with([10, 20, 30, 40, 50])
    machine.model.delete_records(1)
    machine.topic, machine.disruptions = "t", disruptions
    machine.env = SimpleNamespace(observed=Counter())
    machine.system = SimpleNamespace(delete_records=unanswered,
                                     list_offset=lambda topic, spec: earliest)
    return machine


def test_an_unanswered_delete_records_after_a_leadership_change_is_the_finding():
    machine = _deleting_machine(disruptions=1, earliest=3)
    machine.unanswered_delete(3, "DeleteRecords(3)")
    assert machine.model.log_start == 3 and machine.model.durable_start == 1
    assert machine.env.observed["DeleteRecords unanswered after a leadership change"] == 1
    machine.model.leadership_may_have_moved()  # the replica that kept 1 may lead next
    assert machine.model.log_start == 1


def test_an_unanswered_delete_records_whose_deletion_did_not_act_is_a_mismatch():
    machine = _deleting_machine(disruptions=1, earliest=1)
    with pytest.raises(ModelMismatch, match="unanswered: ListOffsets earliest"):
        machine.unanswered_delete(3, "DeleteRecords(3)")


def test_an_unanswered_delete_records_without_a_leadership_change_fails_the_example():
    from pytest_kreplica.logmodel.system import DeleteRecordsUnanswered

    machine = _deleting_machine(disruptions=0, earliest=3)
    machine.env.record = lambda name, kwargs: None
    with pytest.raises(DeleteRecordsUnanswered):
        machine.delete_records(position=50)
    moved = _deleting_machine(disruptions=1, earliest=3)
    moved.env.record = lambda name, kwargs: None
    moved.delete_records(position=50)  # offset 3 of HW 5: the finding, accepted
    assert moved.model.log_start == 3
