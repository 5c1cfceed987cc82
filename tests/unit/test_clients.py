"""close_producer: a close that times out is reported, not raised (kafka-python 3.0.12
raises from the flush inside ``close``)."""

import pytest
from kafka import errors

from pytest_kreplica.cluster.admin.clients import FORCED_CLOSE_S, close_producer


class Sender:
    def __init__(self):
        self.forced = False

    def force_close(self) -> None:
        self.forced = True


class Producer:
    """kafka-python's close as far as close_producer sees it: raises ``error`` while its
    sender has not been forced to close (the flush waits for the pending batch)."""

    def __init__(self, error: Exception | None, sender: Sender | None = None,
                 error_after_force: Exception | None = None):
        self.error = error
        self.error_after_force = error_after_force
        self.timeouts: list[float] = []
        if sender is not None:
            self._sender = sender

    def close(self, timeout: float) -> None:
        self.timeouts.append(timeout)
        forced = getattr(self, "_sender", None) is not None and self._sender.forced
        error = self.error_after_force if forced else self.error
        if error is not None:
            raise error


def test_a_clean_close_reports_nothing():
    producer = Producer(None)
    assert close_producer(producer, 10.0) is None
    assert producer.timeouts == [10.0]


def test_a_timed_out_close_is_one_line_naming_the_error():
    trouble = close_producer(Producer(errors.KafkaTimeoutError("Timeout waiting for future")),
                             12.0)
    assert trouble is not None and "\n" not in trouble
    assert "after 12 s" in trouble and "KafkaTimeoutError" in trouble


def test_other_errors_still_raise():
    with pytest.raises(ValueError):
        close_producer(Producer(ValueError("Invalid timeout")), 1.0)


def test_a_timed_out_close_forces_the_sender_and_closes_again():
    sender = Sender()
    producer = Producer(errors.KafkaTimeoutError("Timeout waiting for future"), sender)
    trouble = close_producer(producer, 12.0)
    assert sender.forced
    assert producer.timeouts == [12.0, FORCED_CLOSE_S]
    assert trouble is not None and "\n" not in trouble
    assert trouble.endswith("pending records dropped and the sender stopped"), trouble


def test_a_forced_close_that_fails_is_reported_not_raised():
    producer = Producer(errors.KafkaTimeoutError("Timeout waiting for future"), Sender(),
                        error_after_force=errors.KafkaTimeoutError("still waiting"))
    trouble = close_producer(producer, 12.0)
    assert trouble is not None and "forced close failed as well" in trouble
    assert "still waiting" in trouble


def test_without_a_sender_to_force_it_says_the_thread_is_left():
    trouble = close_producer(Producer(errors.KafkaTimeoutError("Timeout")), 12.0)
    assert trouble is not None and "left to end with the process" in trouble
