"""A one-way partition of a partition leader under an acks=all producer, struck and healed
with the ISR watched: what the process and the docker link-fault tests both prove (the ISR
shrinks while nothing reaches the leader, is full again after the heal, nothing acknowledged
is lost)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from pytest_kreplica.cluster.base import TopicSpec
from pytest_kreplica.errors import ClusterError
from pytest_kreplica.faults import links
from pytest_kreplica.waits import wait_for
from tests.acked import read_partition


def leader_besides_the_controller(cluster: Any, topic: str) -> tuple[int, int]:
    """(partition, leader) of a new 3-partition topic whose leader is not the active
    controller. Cutting the controller's own links is a different fault: the quorum moves,
    and while it does, metadata may show the old ISR for a long time (seen: 30 s)."""
    cluster.create_topics([TopicSpec(topic, partitions=3, replication_factor=3,
                                     config={"min.insync.replicas": "2"})], timeout=60)
    cluster.wait_healthy([topic], timeout=60)
    # a fault of an earlier test may have moved the quorum: take its leader once two reads
    # a second apart agree
    reads: list[int] = []

    def settled() -> str | None:
        reads.append(cluster.active_controller())
        return None if reads[-2:] == [reads[-1]] * 2 else f"quorum leaders read {reads[-2:]}"

    wait_for(settled, 60, "a settled KRaft quorum leader", poll=1.0)
    return next((p, s.leader) for p in range(3)
                if (s := cluster.partition_state(topic, p)).leader != reads[-1])


def quorum_of(cluster: Any) -> str:
    """The KRaft quorum as DescribeQuorum answers it now, for a failure message."""
    try:
        return str(cluster.quorum())
    except Exception as exc:  # noqa: BLE001 - a diagnostic only
        return f"unreadable ({type(exc).__name__}: {exc})"


def one_way_cycle(cluster: Any, topic: str, produce: Callable[..., None]) -> str:
    """Strike and heal a one-way partition of ``topic``'s leader (not the controller) while
    ``produce(cluster, topic, stop, acked, failed, partition)`` runs; asserts the shrink,
    the regrowth and no loss; returns the figures as one line."""
    partition, leader = leader_besides_the_controller(cluster, topic)
    stop, acked, failed = threading.Event(), [], []
    producer = threading.Thread(target=produce,
                                args=(cluster, topic, stop, acked, failed, partition))
    producer.start()
    try:
        wait_for(lambda: None if len(acked) > 20 else f"{len(acked)} acked", 30,
                 "the producer under way")
        links.strike(cluster, leader, "one_way_partition")
        struck = time.monotonic()
        def shrunk() -> str | None:
            state = cluster.partition_state(topic, partition)
            return None if len(state.isr) < 3 else str(state)

        try:
            wait_for(shrunk, 60, "the ISR shrinking while nothing reaches the leader")
        except ClusterError as exc:
            raise ClusterError(f"{exc}; leader {leader}, the quorum at the time-out: "
                               f"{quorum_of(cluster)}") from None
        shrunk_s = time.monotonic() - struck
    finally:
        links.restore(cluster, leader, "one_way_partition")
        healed = time.monotonic()
    try:
        cluster.wait_healthy([topic], timeout=90)
    finally:
        stop.set()
        producer.join(30)
    regrown_s = time.monotonic() - healed
    assert acked, "nothing was acknowledged"
    seen = read_partition(cluster, topic, partition)
    lost = [(a[0], a[1]) for a in acked if (a[0], a[1]) not in seen]
    assert lost == [], f"acknowledged records missing from the log: {lost[:5]}"
    return (f"ISR shrank {shrunk_s:.1f} s after the strike, full {regrown_s:.1f} s after the "
            f"heal; acked {len(acked)}, failed {len(failed)}, lost 0")
