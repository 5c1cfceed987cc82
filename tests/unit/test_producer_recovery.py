"""kafka-python's idempotent producer after its id was reset or its state turned fatal
(``cluster.admin.idempotence``), on broker-less clients: only their own state changes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kafka import KafkaProducer
from kafka.errors import KafkaError
from kafka.producer.transaction_manager import TransactionManager, TransactionState

from pytest_kreplica.cluster.admin import idempotence
from pytest_kreplica.workloads.plain import _replace_producer
from pytest_kreplica.workloads.sends import ProduceStats, Sends


def idempotent_producer() -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=["127.0.0.1:1"], api_version=(3, 5),
                         enable_idempotence=True, acks="all", max_block_ms=100)


@pytest.fixture
def producer():
    client = idempotent_producer()
    yield client
    client.close(timeout=1)


def ready_with_an_id(manager: TransactionManager) -> None:
    """The state after a successful InitProducerId (what the sender does first)."""
    from kafka.producer.transaction_manager import ProducerIdAndEpoch

    manager.init_producer_id()
    manager.set_producer_id_and_epoch(ProducerIdAndEpoch(1000, 0))
    manager._transition_to(TransactionState.READY)


def test_a_reset_producer_asks_for_a_new_id(producer):
    idempotence.install()
    idempotence.install()  # once is enough: the wrapper is not wrapped again
    manager = producer._transaction_manager
    ready_with_an_id(manager)
    manager.reset_producer_id()
    # kafka-python alone would stay READY without an id, and nothing would ask for one
    assert not manager.has_producer_id()
    assert manager.is_bumping_epoch()
    assert not idempotence.stranded(manager)


def test_a_producer_in_a_fatal_error_is_unusable_and_says_why(producer):
    assert not idempotence.unusable(producer)
    producer._transaction_manager.transition_to_fatal_error(
        KafkaError("InitProducerId timed out"))
    assert idempotence.unusable(producer)
    assert "InitProducerId timed out" in idempotence.fatal_error(producer)
    assert not idempotence.unusable(SimpleNamespace())  # not idempotent: never replaced


def test_an_unusable_producer_is_replaced_and_its_sends_written_off(producer):
    events, rows = [], []
    writer = SimpleNamespace(event=lambda kind, **f: events.append((kind, f)),
                             send=lambda *a: rows.append(a))
    sends = Sends(producer, writer, ProduceStats(), process=0)
    sends.pending["7"] = ("t", 0, 1)
    producer._transaction_manager.transition_to_fatal_error(KafkaError("fatal"))
    _replace_producer(sends, idempotent_producer, process=0)
    try:
        assert sends.producer is not producer and not idempotence.unusable(sends.producer)
        assert [r[3] for r in rows] == ["7"] and rows[0][5] == "info"
        assert events[0][0] == "client-crash" and "fatal" in events[0][1]["detail"]
    finally:
        sends.producer.close(timeout=1)
