"""The log model's bounded retry: which Kafka errors it waits through and which it reports."""

from __future__ import annotations

import pytest
from kafka.errors import NotLeaderForPartitionError, UnknownBrokerIdError, UnknownError

from pytest_kreplica.logmodel.system import SystemFailure, retrying


def answers(*outcomes):
    """A call that raises or returns each outcome in turn."""
    it = iter(outcomes)

    def call():
        outcome = next(it)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome
    return call


def test_a_stale_controller_drops_the_client_and_is_retried():
    dropped = []
    answer = retrying(answers(UnknownBrokerIdError(1), UnknownBrokerIdError(1), "ok"),
                      "reordering", timeout=5, on_stale=lambda: dropped.append(True))
    assert answer == "ok"
    assert dropped == [True, True]


def test_a_retriable_answer_is_waited_through_without_dropping_the_client():
    dropped = []
    assert retrying(answers(NotLeaderForPartitionError(), 7), "ListOffsets", timeout=5,
                    on_stale=lambda: dropped.append(True)) == 7
    assert dropped == []


def test_an_answer_the_model_rules_out_is_a_failure_at_once():
    with pytest.raises(SystemFailure, match="expected an answer, seen UnknownError"):
        retrying(answers(UnknownError("boom")), "DeleteRecords", timeout=5)


def test_a_stale_client_past_the_bound_is_a_failure_naming_the_wait():
    with pytest.raises(SystemFailure, match="reordering"):
        retrying(answers(*[UnknownBrokerIdError(1)] * 1000), "reordering", timeout=0.5)


def test_a_failure_past_the_bound_carries_the_last_error():
    from kafka.errors import RequestTimedOutError

    with pytest.raises(SystemFailure) as failed:
        retrying(answers(*[RequestTimedOutError()] * 1000), "DeleteRecords", timeout=0.5)
    assert isinstance(failed.value.last_error, RequestTimedOutError)
