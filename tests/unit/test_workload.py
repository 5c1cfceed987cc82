"""Pure parts of the workload: record values and how send errors are classified."""

from kafka import errors

from pytest_kreplica.workloads.plain import classify, record_id, record_value


def test_record_value_is_the_id_then_padding():
    assert record_value("17", 0) == b"17"
    assert record_value("17", 3) == b"17"  # no room for a space and padding
    value = record_value("17", 10)
    assert value == b"17 xxxxxxx" and len(value) == 10
    assert record_id(value) == "17" and record_id(b"17") == "17" and record_id(None) == ""


def test_only_definite_failures_are_fail():
    assert classify(errors.NotEnoughReplicasError()) == "fail"
    assert classify(errors.InvalidTopicError()) == "fail"
    assert classify(errors.MessageSizeTooLargeError()) == "fail"
    assert classify(RuntimeError("buffer full"), before_send=True) == "fail"
    # ambiguous: the record may have been appended
    assert classify(errors.NotEnoughReplicasAfterAppendError()) == "info"
    assert classify(errors.KafkaTimeoutError()) == "info"
    assert classify(errors.RequestTimedOutError()) == "info"
    assert classify(errors.KafkaConnectionError()) == "info"


def test_a_retried_send_is_never_a_definite_failure():
    """The last attempt's NotEnoughReplicas says nothing of an earlier attempt that may
    have been appended (a slow_link case read such a record at its offset)."""
    assert classify(errors.NotEnoughReplicasError(), retried=True) == "info"
    assert classify(errors.InvalidTopicError(), retried=True) == "info"
    assert classify(RuntimeError("buffer full"), before_send=True, retried=True) == "fail"
