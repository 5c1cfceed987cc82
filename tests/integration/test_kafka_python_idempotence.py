"""kafka-python's idempotent producer after a sent batch expired, on a real 3-node cluster.

The batch is retried on ``NotEnoughReplicas`` (its partition's follower is down, min ISR 2)
until its delivery timeout; kafka-python then resets the producer id and, left to itself,
never asks for a new one, so every later send stays unanswered, even once the follower is
back (``cluster.admin.idempotence``). With the suite's correction installed, the producer
gets a new id and sends again.
"""

from __future__ import annotations

import time

import pytest

from pytest_kreplica.cluster import ClusterSpec, TopicSpec, create_cluster
from pytest_kreplica.cluster.admin import idempotence

TOPIC = "idempotence-expiry"
DELIVERY_TIMEOUT_MS = 3_000
RESEND_S = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = create_cluster(ClusterSpec(brokers=3), tmp_path_factory.mktemp("idempotence"))
    c.start(timeout=120)
    try:
        c.create_topics([TopicSpec(TOPIC, 1, 2, {"min.insync.replicas": "2"})])
        yield c
    finally:
        c.close()


def wait_for_isr(cluster, wanted: list[int], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while sorted(cluster.isr(TOPIC, 0)) != wanted:
        assert time.monotonic() < deadline, (
            f"expected ISR {wanted} within {timeout:.0f} s; seen {cluster.isr(TOPIC, 0)}")
        time.sleep(0.2)


def test_a_producer_whose_sent_batch_expired_gets_a_new_id_and_sends_again(cluster):
    from kafka import KafkaProducer

    idempotence.install()
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers.split(","), acks="all",
        enable_idempotence=True, linger_ms=0, request_timeout_ms=1_000,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS, retry_backoff_ms=100, max_block_ms=10_000)
    state = cluster.partition_state(TOPIC, 0)
    follower = next(r for r in state.replicas if r != state.leader)
    try:
        assert producer.send(TOPIC, b"before", partition=0).get(timeout=15).offset == 0
        cluster.kill(follower)
        wait_for_isr(cluster, [state.leader])
        with pytest.raises(Exception):  # noqa: B017 - expired or NotEnoughReplicas: not acked
            producer.send(TOPIC, b"unacknowledged", partition=0).get(timeout=15)
        cluster.start_node(follower, timeout=90)
        wait_for_isr(cluster, sorted(state.replicas))
        deadline, errors = time.monotonic() + RESEND_S, []
        while time.monotonic() < deadline:
            try:
                metadata = producer.send(TOPIC, b"after", partition=0).get(timeout=5)
                break
            except Exception as exc:  # the id is being renewed; the next send may pass
                errors.append(type(exc).__name__)
        else:
            pytest.fail(f"expected a send acknowledged within {RESEND_S:.0f} s of the "
                        f"follower's return; every send failed: {errors}")
        assert metadata.offset >= 1
        assert producer._transaction_manager.has_producer_id()
    finally:
        producer.close(timeout=5)
