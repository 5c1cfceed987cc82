"""kafka-python's transactional commit after a failed send, on a real 3-node cluster.

Kafka's transactional contract (Java's ``KafkaProducer.commitTransaction``): if a send of
the transaction failed, the commit throws and the transaction is not committed; the failed
batch turns the producer into an abortable error. kafka-python 3.0.12 does so only for
non-retriable errors: a send that failed with a retriable one after its retries (here: its
partition's only replica paused until the delivery timeout) leaves the producer ready, and
``commit_transaction`` commits the rest of the transaction. A read-process-write loop that
commits its consumer positions in that transaction loses the failed copy's source for good,
which is why the ``txn_pipeline`` workload settles every send before it commits
(``workloads/txn.settle_sends``).

The test asserts the contract and is a strict xfail while kafka-python breaks it: the day a
kafka-python release keeps the contract it fails as XPASS, and the guard's docstring and
docs/clients.md are to be updated.
"""

from __future__ import annotations

import pytest

from pytest_kreplica.cluster import ClusterSpec, TopicSpec, create_cluster
from pytest_kreplica.faults.coordinators import coordinator_partition

TXN_ID = "kreplica-contract"
HEALTHY, STALLED = "contract-healthy", "contract-stalled"
# long enough for the coordinator's own writes to outlast the paused replica's time in the
# ISR of its internal partitions (fenced after 3 s, out of the ISR after 5 s)
REQUEST_TIMEOUT_MS, DELIVERY_TIMEOUT_MS = 10_000, 12_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = create_cluster(ClusterSpec(brokers=3), tmp_path_factory.mktemp("txn-contract"))
    c.start(timeout=120)
    try:
        c.create_topics([TopicSpec(HEALTHY, 1, 3), TopicSpec(STALLED, 3, 1)])
        yield c
    finally:
        c.close()


def producer_for(bootstrap: str):
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap.split(","), transactional_id=TXN_ID, acks="all",
        enable_idempotence=True, request_timeout_ms=REQUEST_TIMEOUT_MS, linger_ms=0,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS, max_block_ms=20_000,
        reconnect_backoff_max_ms=500)
    producer.init_transactions()
    return producer


def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), enable_auto_commit=False,
                             isolation_level="read_committed", consumer_timeout_ms=5_000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return [r.value for r in consumer]
    finally:
        consumer.close()


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="kafka-python 3.0.12 commits a transaction one of whose sends failed "
                   "with a retriable error (Java's producer refuses the commit)")
def test_a_transaction_with_a_failed_send_is_not_committed(cluster):
    bootstrap = cluster.bootstrap_servers
    producer = producer_for(bootstrap)
    try:
        _, coordinator_p = coordinator_partition(cluster, "txn_coordinator", TXN_ID)
        spared = {cluster.leader("__transaction_state", coordinator_p),
                  cluster.leader(HEALTHY, 0)}
        leaders = {p: cluster.leader(STALLED, p) for p in range(3)}
        partition, victim = next((p, n) for p, n in leaders.items() if n not in spared)
        producer.begin_transaction()
        producer.send(HEALTHY, b"kept", partition=0).get(timeout=30)
        # the stalled partition joins the transaction while its replica still answers
        producer.send(STALLED, b"first", partition=partition).get(timeout=30)
        cluster.pause(victim)
        try:
            failed = producer.send(STALLED, b"failed", partition=partition)
            with pytest.raises(Exception) as raised:  # noqa: PT011 - any delivery failure
                failed.get(timeout=DELIVERY_TIMEOUT_MS / 1000 + 20)
            print(f"the send to {STALLED}-{partition} (node {victim} paused) failed: "
                  f"{raised.value!r}")
            try:
                producer.commit_transaction()
                committed = True
            except Exception as exc:  # noqa: BLE001 - the contract: the commit refuses
                print(f"commit_transaction refused: {exc!r}")
                committed = False
        finally:
            cluster.resume(victim)
        seen = committed_values(bootstrap, HEALTHY)
        print(f"commit returned: {committed}; read_committed reads of {HEALTHY}: {seen}")
        assert not committed, "commit_transaction returned after a send of the transaction failed"
        assert b"kept" not in seen, "the transaction's other record became visible"
    finally:
        producer.close(timeout=5)
