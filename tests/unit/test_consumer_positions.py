"""The kafka-python consumer's positions after a poll: one pass over the assignment, not a
public ``position()`` call per partition (which scans the whole assignment each time)."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, TopicPartition

from pytest_kreplica.workloads.plain import _fetch_positions, _seek_known


@pytest.fixture
def consumer():
    # no broker is contacted: assign and seek only change the client's own state
    client = KafkaConsumer(bootstrap_servers=["127.0.0.1:1"], api_version=(3, 0),
                           group_id=None, enable_auto_commit=False)
    yield client
    client.close()


def test_positions_of_sought_partitions_only(consumer, monkeypatch):
    tps = [TopicPartition(f"t{i // 10}", i % 10) for i in range(2000)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    consumer.seek(tps[3], 7)
    consumer.seek(tps[1999], 42)

    def per_partition(*_args, **_kwargs):
        raise AssertionError("position() called per partition")

    monkeypatch.setattr(consumer, "position", per_partition)
    assert _fetch_positions(consumer) == {("t0", 3): 7, ("t199", 9): 42}


def test_public_position_is_the_fallback():
    class Client:  # a client without kafka-python's subscription state
        def assignment(self):
            return {TopicPartition("a", 0), TopicPartition("a", 1)}

        def position(self, tp, timeout_ms=None):
            if tp.partition == 1:
                raise RuntimeError("no position yet")
            return 5

    assert _fetch_positions(Client()) == {("a", 0): 5}


def test_rebuilt_client_seeks_in_one_pass(consumer, monkeypatch):
    tps = [TopicPartition(f"t{i // 10}", i % 10) for i in range(10_000)]
    consumer.assign(tps)
    consumer.seek_to_beginning()

    def per_partition(*_args, **_kwargs):
        raise AssertionError("public seek() called per partition")

    monkeypatch.setattr(consumer, "seek", per_partition)
    _seek_known(consumer, {tp: tp.partition + 100 for tp in tps})
    positions = _fetch_positions(consumer)
    assert len(positions) == 10_000
    assert positions[("t7", 3)] == 103


def test_public_seek_is_the_fallback():
    sought = {}

    class Client:  # a client without kafka-python's subscription state
        def seek(self, tp, offset):
            sought[tp] = offset

    _seek_known(Client(), {TopicPartition("a", 0): 4})
    assert sought == {TopicPartition("a", 0): 4}
