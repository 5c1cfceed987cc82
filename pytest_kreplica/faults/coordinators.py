"""Targets that a case's workload names: the node coordinating its consumer group
(``group_coordinator``) or its transactions (``txn_coordinator``).

Kafka places a group's (a transactional id's) state in one partition of an internal topic,
``abs(key.hashCode()) % partitions`` of ``__consumer_offsets`` (``__transaction_state``),
and the leader of that partition is the coordinator. The nemesis aims at that partition as
a ``leader`` target aims at a case's partition, so the fault's election time is the
coordinator's failover time, measured the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ClusterError

if TYPE_CHECKING:
    from ..cluster import Cluster

COORDINATOR_TOPICS = {"group_coordinator": "__consumer_offsets",
                      "txn_coordinator": "__transaction_state"}
COORDINATOR_TARGETS = tuple(COORDINATOR_TOPICS)
_INT_MIN = -(2**31)


def java_hash(text: str) -> int:
    """Java's ``String.hashCode``: 31-fold over UTF-16 code units, in 32-bit arithmetic."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def partition_for(key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode()) % partitions`` (abs of MIN_VALUE is 0)."""
    h = java_hash(key)
    return (0 if h == _INT_MIN else abs(h)) % partitions


def coordinator_partition(cluster: Cluster, target: str, key: str) -> tuple[str, int]:
    """The internal partition whose leader coordinates ``key`` for ``target``."""
    topic = COORDINATOR_TOPICS[target]
    count = len(cluster.partition_states([topic]))
    if not count:
        raise ClusterError(f"{topic} has no partitions yet: no {target} for {key!r} to aim at")
    return topic, partition_for(key, count)


def resolvers(cluster: Cluster, keys: dict[str, str]) -> dict[str, Callable[[], tuple[str, int]]]:
    """``{target: () -> (topic, partition)}`` for the workload's ``coordinator_keys``."""
    return {target: (lambda t=target, k=key: coordinator_partition(cluster, t, k))
            for target, key in keys.items() if target in COORDINATOR_TOPICS}
