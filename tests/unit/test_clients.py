"""close_producer: a close that times out is reported, not raised (kafka-python 3.0.12
raises from the flush inside ``close``)."""

import pytest
from kafka import errors

from pytest_kreplica.scenarios.clients import close_producer


class Producer:
    def __init__(self, error: Exception | None):
        self.error = error
        self.timeouts: list[float] = []

    def close(self, timeout: float) -> None:
        self.timeouts.append(timeout)
        if self.error is not None:
            raise self.error


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
