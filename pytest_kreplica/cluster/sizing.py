"""What a broker needs, and how long a cluster's waits may take, as the replicas each broker
holds grow: the plan's C.8 shape (1000 topics x 10 partitions, rf 3, on 8 brokers: 3,750
replicas a broker) next to the few dozen of every other matrix. The figures are measured by
``benchmarks/bench_shape.py`` (docs/benchmarks.md); a cluster at or below
``SMALL_REPLICAS`` a broker keeps the small footprint exactly as before."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import TopicSpec

DEFAULT_HEAP_MB = 256  # the small footprint's heap (KAFKA-NOTES)
SMALL_REPLICAS = 300  # replicas a broker up to which nothing changes (production-small: 60)
# a broker's live heap grows by about 27 MB per 1000 replicas (after a full GC, bench_shape:
# 167-182 MB at 3,750); this leaves it over twice that, for the young generation and the
# fetchers' buffers under load (512 MB at the plan's shape)
HEAP_MB_PER_1000_REPLICAS = 64
HEAP_ROUND_MB = 128
# a batch of CreateTopics: the controller writes every partition's records in one batch,
# and the wait that follows (every ISR full, every replica answering) covers the batch
TOPIC_BATCH_PARTITIONS = 1000
# how long creating a batch may take per 1000 replicas it makes, cluster-wide: bench_shape
# measured 2.6 s (7 s with the machine's load above 40)
CREATE_S_PER_1000_REPLICAS = 10.0
# how much longer a wait that covers every partition may take per 1000 replicas a broker
# holds (a restarted broker recovers each log and its followers catch up, one fetcher a
# source): a bound, not a measurement; the plan's shape gets 138 s more than a small cluster
WAIT_S_PER_1000_REPLICAS = 40.0
# how long a controlled shutdown (SIGTERM) of a small broker may take before it is killed: it
# hands every leadership over and closes every log it holds, so a broker holding more gets
# more (``stop_deadline``); at the plan's shape under load, 30 s ended in SIGKILL
STOP_TIMEOUT_S = 30.0
# a replica's directory in a log dir: "<topic>-<partition>" (also "-delete", "-future" ...
# directories of a moving replica, which the broker closes all the same)
_REPLICA_DIR = re.compile(r".+-\d+(\.[0-9a-f]+-(delete|future|stray))?$")

# MirrorMaker 2's heap: its small default up to SMALL_MIRRORED partitions, and more for a
# mirror of the plan's shape, whose one consumer and one producer span every partition and
# whose tasks keep an offset sync per partition: a bound, not a measurement (10,000
# partitions: 640 MB)
MIRROR_HEAP_MB = 256
SMALL_MIRRORED = 1000
MIRROR_HEAP_MB_PER_1000_PARTITIONS = 32
# how often MirrorMaker 2 looks for new topics and consumer groups: each look lists and
# describes every mirrored topic on both clusters, which took 2-5 s at 10,000 partitions,
# so a 1 s interval kept it busy all the time; a large mirror's topics exist before it starts
MIRROR_REFRESH_S = 1
LARGE_MIRROR_REFRESH_S = 30


def mirror_heap_mb(partitions: int) -> int:
    """The heap of a MirrorMaker 2 mirroring ``partitions`` partitions."""
    if partitions <= SMALL_MIRRORED:
        return MIRROR_HEAP_MB
    return _rounded_heap(MIRROR_HEAP_MB + MIRROR_HEAP_MB_PER_1000_PARTITIONS * partitions / 1000)


def mirror_refresh_s(partitions: int) -> int:
    """MirrorMaker 2's topic and group refresh interval for ``partitions`` mirrored."""
    return MIRROR_REFRESH_S if partitions <= SMALL_MIRRORED else LARGE_MIRROR_REFRESH_S


def _rounded_heap(wanted_mb: float) -> int:
    return int(math.ceil(wanted_mb / HEAP_ROUND_MB) * HEAP_ROUND_MB)


def creation_bound(base_s: float, replicas: int) -> float:
    """``base_s`` plus the time a cluster may take to create ``replicas`` replicas."""
    return base_s + CREATE_S_PER_1000_REPLICAS * replicas / 1000


def replicas_per_broker(topics: int, partitions: int, replication_factor: int,
                        brokers: int) -> int:
    """The replicas the busiest broker holds when partitions spread evenly."""
    return math.ceil(topics * partitions * replication_factor / max(brokers, 1))


def case_replicas(case: Any) -> int:
    """``replicas_per_broker`` of a matrix case's topics on its cluster."""
    return replicas_per_broker(getattr(case, "topics", 1), getattr(case, "partitions", 1),
                               getattr(case, "replication_factor", 1), case.brokers)


def broker_heap_mb(replicas: int) -> int | None:
    """The heap a broker holding ``replicas`` replicas runs with; None: the default (a small
    cluster, unchanged)."""
    if replicas <= SMALL_REPLICAS:
        return None
    return _rounded_heap(DEFAULT_HEAP_MB + HEAP_MB_PER_1000_REPLICAS * replicas / 1000)


def scaled_wait(base_s: float, replicas: int) -> float:
    """``base_s`` for a small cluster; more, in proportion, for a broker holding more."""
    extra = max(0, replicas - SMALL_REPLICAS)
    return base_s + WAIT_S_PER_1000_REPLICAS * extra / 1000


def replicas_in(log_dir: Path) -> int:
    """The replicas a broker holds, counted from its log dir (0 when it cannot be read)."""
    try:
        return sum(1 for e in log_dir.iterdir() if _REPLICA_DIR.match(e.name) and e.is_dir())
    except OSError:
        return 0


def stop_deadline(replicas: int) -> float:
    """How long a controlled shutdown of a broker holding ``replicas`` may take."""
    return scaled_wait(STOP_TIMEOUT_S, replicas)


def topic_batches(specs: Iterable[TopicSpec], limit: int = TOPIC_BATCH_PARTITIONS
                  ) -> list[list[TopicSpec]]:
    """The topics in order, in batches of at most ``limit`` partitions (a topic larger than
    that is a batch of its own)."""
    batches: list[list[TopicSpec]] = [[]]
    held = 0
    for spec in specs:
        if batches[-1] and held + spec.partitions > limit:
            batches.append([])
            held = 0
        batches[-1].append(spec)
        held += spec.partitions
    return [b for b in batches if b]


def create_topics_in_batches(cluster: Any, specs: list[TopicSpec], base_timeout_s: float
                             ) -> None:
    """``cluster.create_topics`` a batch at a time (``topic_batches``), each batch bounded by
    ``base_timeout_s`` plus its share of ``CREATE_S_PER_1000_REPLICAS``: one request for the
    production shape's 30,000 replicas outlasts any single bound and says nothing on the way."""
    for batch in topic_batches(specs):
        replicas = sum(s.partitions * s.replication_factor for s in batch)
        cluster.create_topics(batch, timeout=creation_bound(base_timeout_s, replicas))
