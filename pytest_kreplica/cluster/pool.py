"""Clusters shared between cases: one pool per pytest session (= per xdist worker).

Cases whose ``ClusterSpec`` is equal (brokers, Kafka version, broker settings, backend) reuse
one started cluster; each case brings its own topics. Before a cluster is handed out again it
must pass the health gate; one that cannot heal is closed and replaced. At most
``max_alive`` clusters run at once (the machine is small): asking for another spec closes the
least recently used one, and the plugin orders cases so that equal specs run back to back.
"""

from __future__ import annotations

import logging
import shutil
import zlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ClusterError
from ..faults.registry import facilities_needed
from .base import Cluster, ClusterSpec
from .facilities import key_suffix
from .sizing import broker_heap_mb, case_replicas

if TYPE_CHECKING:
    from ..matrix import Case

log = logging.getLogger(__name__)

ClusterFactory = Callable[[ClusterSpec, Path], Cluster]


def cluster_spec(case: Case) -> ClusterSpec:
    """The cluster a case needs. Topic-level settings (partitions, replication factor,
    segments, min ISR, unclean election) are per topic, so they do not split clusters. The
    node facilities are those the case's failures need (``Failure.facilities``), and the
    remote tier of a ``tiered: on`` case; the brokers' heap grows with the replicas each
    holds (``sizing``: only the production shape's)."""
    tiered = {"tiered_storage"} if getattr(case, "tiered", "off") == "on" else set()
    replicas = case_replicas(case)
    return ClusterSpec(brokers=case.brokers, kafka_version=case.kafka_version,
                       backend=case.backend,
                       facilities=facilities_needed(getattr(case, "failure", None)) | tiered,
                       heap_mb=broker_heap_mb(replicas))


def spec_key(spec: ClusterSpec) -> str:
    """A short, stable label for a spec (group names, directory names)."""
    version = spec.kafka_version or "default"
    extra = f"-c{zlib.crc32(repr(spec.broker_config).encode()):08x}" if spec.broker_config else ""
    role = f"-{spec.role}" if getattr(spec, "role", "") else ""
    heap = f"-h{spec.heap_mb}" if getattr(spec, "heap_mb", None) else ""
    return (f"{spec.backend}-b{spec.brokers}-k{version}{extra}{heap}{role}"
            f"{key_suffix(spec.facilities)}")


def _clear_earlier_run(workdir: Path) -> None:
    """An earlier run into the same ``--kreplica-output`` left its cluster's folder (kept
    for its logs) under the name this one starts: replaced, as its run directories are,
    so that a second run of the same command never meets the first one's nodes."""
    if not workdir.exists():
        return
    try:
        shutil.rmtree(workdir)
    except OSError as exc:
        raise ClusterError(f"{workdir} holds an earlier run's cluster and cannot be removed "
                           f"({exc}); remove it or pass another --kreplica-output") from exc


class ClusterPool:
    """Started clusters by spec; ``acquire`` returns a healthy one or raises ClusterError."""

    def __init__(self, workdir: Path, factory: ClusterFactory, *, max_alive: int = 1,
                 start_timeout: float = 120.0, heal_timeout: float = 60.0):
        self.workdir = Path(workdir)
        self.factory = factory
        self.max_alive = max_alive
        self.start_timeout = start_timeout
        self.heal_timeout = heal_timeout
        self._clusters: OrderedDict[ClusterSpec, Cluster] = OrderedDict()
        self._started = 0
        self.replaced = 0  # clusters closed because they failed the health gate

    def acquire(self, spec: ClusterSpec) -> Cluster:
        cluster = self._clusters.get(spec)
        if cluster is not None:
            self._clusters.move_to_end(spec)
            try:
                cluster.wait_healthy(timeout=self.heal_timeout)
                return cluster
            except ClusterError as exc:
                log.warning("cluster %s failed the health gate, replacing it: %s",
                            cluster.workdir, exc)
                self._close(spec)
                self.replaced += 1
        while len(self._clusters) >= self.max_alive:
            self._close(next(iter(self._clusters)))
        self._started += 1
        workdir = self.workdir / f"cluster-{self._started}-{spec_key(spec)}"
        _clear_earlier_run(workdir)
        cluster = self.factory(spec, workdir)
        try:
            cluster.start(timeout=self.start_timeout)
        except BaseException:
            cluster.close()
            raise
        self._clusters[spec] = cluster
        return cluster

    @property
    def started(self) -> int:
        """How many clusters the pool has started: unchanged across an ``acquire`` that
        handed out a cluster an earlier case started (run.json ``cluster_reused``)."""
        return self._started

    def _close(self, spec: ClusterSpec) -> None:
        cluster = self._clusters.pop(spec)
        try:
            cluster.close()
        except Exception as exc:  # closing must go on for the others
            log.warning("closing cluster %s failed: %s", cluster.workdir, exc)

    def close_all(self) -> None:
        while self._clusters:
            self._close(next(iter(self._clusters)))

    def __len__(self) -> int:
        return len(self._clusters)
