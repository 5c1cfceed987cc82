"""An acks=all producer that records what was acknowledged, and a reader of a whole
partition: what the fault tests compare to prove nothing acknowledged was lost."""

from __future__ import annotations

import threading
from typing import Any

from pytest_kreplica.cluster.admin.clients import close_producer

REQUEST_TIMEOUT_MS, DELIVERY_TIMEOUT_MS = 4000, 8000
# seconds ``produce_until`` lets its producer finish the last send: its delivery timeout and
# one more request's. Even with 12 s CI saw the flush in close time out after a one-way
# partition (``close_producer`` reports that instead of raising it in the thread). The
# callers wait 30 s for the thread: the last send's wait (15 s) and this.
CLOSE_TIMEOUT_S = (DELIVERY_TIMEOUT_MS + REQUEST_TIMEOUT_MS) / 1000


def producer(cluster: Any):
    """acks=all, one request in flight, short timeouts: a send to a dead leader fails fast."""
    from kafka import KafkaProducer

    return KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                         request_timeout_ms=REQUEST_TIMEOUT_MS,
                         delivery_timeout_ms=DELIVERY_TIMEOUT_MS, retries=3,
                         max_block_ms=8000, max_in_flight_requests_per_connection=1)


def produce_until(cluster: Any, topic: str, stop: threading.Event,
                  acked: list[tuple[int, bytes]], failed: list[bytes],
                  partition: int | None = None) -> None:
    """Send ``m0``, ``m1``, ... one at a time (to ``partition`` if given) until ``stop``;
    (offset, value) of each acknowledged send goes to ``acked``, each failed value to
    ``failed``."""
    p = producer(cluster)
    try:
        i = 0
        while not stop.is_set():
            value = f"m{i}".encode()
            try:
                sent = p.send(topic, value, partition=partition)
                acked.append((sent.get(timeout=15).offset, value))
            except Exception:
                failed.append(value)
            i += 1
    finally:
        # the last send may still be pending after a heal; its outcome is not in ``acked``
        if trouble := close_producer(p, CLOSE_TIMEOUT_S):
            print(f"produce_until: {trouble}")


def read_partition(cluster: Any, topic: str, partition: int = 0) -> set[tuple[int, bytes]]:
    """Every (offset, value) of the partition, from the beginning (10 s without a record
    ends the read)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                             enable_auto_commit=False, consumer_timeout_ms=10000)
    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    seen = {(r.offset, r.value) for r in consumer}
    consumer.close()
    return seen
