"""The one Cluster API every backend implements (process today; docker, external later).

Tests, the workload, the nemesis and the replica snapshot talk only to this
interface, so a backend can be swapped without touching them. Roles (leader,
ISR, active controller) always come from the cluster's own APIs, never from
log lines.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from . import sizing

# how ``Cluster.terminate`` says that a controlled stop outlasted its deadline and ended in
# SIGKILL: a clean failure that became a hard one (the fault record says so)
KILLED_AT_DEADLINE = "killed at the stop deadline"


class NodeState(enum.Enum):
    RUNNING = "running"
    PAUSED = "paused"  # SIGSTOP / docker pause: the soft failure
    STOPPED = "stopped"  # exited after terminate / kill / stop


@dataclass(frozen=True)
class ClusterSpec:
    """What makes two clusters interchangeable: cases with equal specs share one cluster."""

    brokers: int = 3
    kafka_version: str | None = None  # None: the newest version whose artifacts all exist
    broker_config: tuple[tuple[str, str], ...] = ()  # extra server.properties, sorted pairs
    backend: str = "process"
    # tells apart clusters a case needs several of (mirrored runs: "source" / "target");
    # "" for the single cluster of an ordinary case
    role: str = ""
    # the node facilities the cluster's faults need (names of ``cluster.facilities``'s
    # FACILITIES: a proxy in front of the links, small disks, ...); the backend attaches them
    facilities: frozenset[str] = frozenset()
    # each broker's JVM heap (MB); None: the backend's small default. Set for a cluster whose
    # brokers hold many replicas (``cluster.sizing``: the production shape)
    heap_mb: int | None = None

    def with_config(self, **settings: Any) -> ClusterSpec:
        merged = dict(self.broker_config)
        merged.update({k.replace("_", "."): str(v) for k, v in settings.items()})
        return dataclasses.replace(self, broker_config=tuple(sorted(merged.items())))


@dataclass
class Node:
    """One combined broker+controller KRaft node."""

    node_id: int
    host: str
    port: int  # PLAINTEXT client / inter-broker listener
    controller_port: int
    log_dir: Path  # Kafka's log.dirs (the replica logs live here)
    log_file: Path  # the node's own server log (stdout+stderr and log4j)
    pid: int | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int | None  # None (or -1 from Kafka) while no leader is elected
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    @property
    def isr_full(self) -> bool:
        return set(self.isr) == set(self.replicas)


@dataclass
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = 1
    config: dict[str, str] = field(default_factory=dict)


class Cluster(abc.ABC):
    """A running Kafka cluster the suite may inspect and hurt.

    Every wait is bounded: methods that wait take ``timeout`` seconds and raise
    ``ClusterError`` / ``NodeError`` whose message says what was expected, what was
    seen, and which log files to read.
    """

    spec: ClusterSpec
    workdir: Path

    # -- lifecycle ---------------------------------------------------------------
    @abc.abstractmethod
    def start(self, timeout: float = 60.0) -> None:
        """Start every node in parallel; return when all brokers are registered
        (unfenced) and a quorum leader is elected."""

    @abc.abstractmethod
    def close(self, timeout: float = 30.0) -> None:
        """Stop every node (in parallel, kill after the deadline) and release ports.
        Idempotent; never raises for nodes that are already gone."""

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- description ---------------------------------------------------------------
    @property
    @abc.abstractmethod
    def bootstrap_servers(self) -> str:
        """Comma-separated host:port of every node (clients skip dead ones)."""

    @property
    @abc.abstractmethod
    def nodes(self) -> list[Node]: ...

    def node(self, node_id: int) -> Node:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no node {node_id}; nodes are {[n.node_id for n in self.nodes]}")

    @abc.abstractmethod
    def node_state(self, node_id: int) -> NodeState: ...

    def facility(self, name: str) -> Any:
        """What the node facility ``name`` (``cluster.facilities``) gives this cluster's
        faults to act through (a link proxy, the disks), None when it was not started with
        it; only clusters the suite starts have facilities."""
        return None

    def live_bootstrap_servers(self) -> str:
        """Bootstrap list without stopped or paused nodes (a paused node hangs requests)."""
        return ",".join(n.address for n in self.nodes
                        if self.node_state(n.node_id) is NodeState.RUNNING)

    def log_dirs(self) -> dict[int, Path]:
        return {n.node_id: n.log_dir for n in self.nodes}

    def log_files(self) -> dict[int, Path]:
        return {n.node_id: n.log_file for n in self.nodes}

    def follower_lag_bound_ms(self) -> int | None:
        """The ``replica.lag.time.max.ms`` the brokers run with (the loss evidence's window,
        ``validation.evidence``): a follower that has not caught up for that long leaves the
        ISR. Here, a cluster the suite does not configure: only a spec's own setting is
        known (None otherwise); the backends that render server.properties say theirs."""
        value = dict(self.spec.broker_config).get("replica.lag.time.max.ms")
        return int(value) if value is not None and str(value).strip().isdigit() else None

    def describe(self) -> dict[str, Any]:
        """JSON-able description for run.json."""
        return {
            "backend": self.spec.backend,
            "kafka_version": self.spec.kafka_version,
            "brokers": self.spec.brokers,
            "broker_config": dict(self.spec.broker_config),
            "follower_lag_bound_ms": self.follower_lag_bound_ms(),
            "bootstrap_servers": self.bootstrap_servers,
            "nodes": {str(n.node_id): {"address": n.address, "log_dir": str(n.log_dir),
                                       "log_file": str(n.log_file)} for n in self.nodes},
        }

    # -- roles, from the cluster's own APIs ----------------------------------------
    @abc.abstractmethod
    def partition_state(self, topic: str, partition: int) -> PartitionState: ...

    def leader(self, topic: str, partition: int) -> int | None:
        return self.partition_state(topic, partition).leader

    def isr(self, topic: str, partition: int) -> tuple[int, ...]:
        return self.partition_state(topic, partition).isr

    def partition_views(self, topic: str, partition: int, timeout: float = 30.0
                        ) -> dict[int | None, PartitionState]:
        """The partition as each broker shows it in its own metadata, by node id (a broker
        still replaying the metadata log answers with an older ISR). The admin backends ask
        every broker they reach; this default has one answer, under ``None`` (``timeout`` bounds
        the retries where a backend retries)."""
        return {None: self.partition_state(topic, partition)}

    def topic_views(self, topics: list[str], timeout: float = 30.0
                    ) -> dict[int | None, dict[tuple[str, int], PartitionState]]:
        """``partition_views`` for every partition of ``topics`` at once (the admin backends
        send one Metadata request to each broker); this default has one answer, under
        ``None``."""
        return {None: self.partition_states(topics, timeout)}

    # whether ``active_controller`` can answer (an external cluster may not expose its
    # controller: ``capabilities.controller: false``, or a broker without KRaft like Tansu)
    finds_controller: bool = True

    @abc.abstractmethod
    def active_controller(self, timeout: float = 30.0) -> int:
        """The KRaft quorum leader (DescribeQuorum), not DescribeCluster's random broker;
        ``timeout`` bounds the retries while the quorum moves."""

    @abc.abstractmethod
    def wait_for_leader(self, topic: str, partition: int, *, not_in: set[int] = frozenset(),
                        timeout: float = 30.0) -> PartitionState:
        """Wait until the partition has a leader outside ``not_in``."""

    # -- topics --------------------------------------------------------------------
    @abc.abstractmethod
    def create_topics(self, topics: list[TopicSpec], timeout: float = 30.0) -> None:
        """Create topics and wait until every partition has a leader and a full ISR."""

    @abc.abstractmethod
    def delete_topics(self, names: list[str], timeout: float = 30.0) -> None: ...

    # -- faults -----------------------------------------------------------------------
    @abc.abstractmethod
    def terminate(self, node_id: int, timeout: float | None = None) -> str | None:
        """Controlled failure: SIGTERM, wait until the process exited. At the deadline
        (default: ``stop_deadline``) SIGKILL it and return a text starting with
        ``KILLED_AT_DEADLINE``; None when the controlled shutdown finished."""

    def stop_deadline(self, node_id: int) -> float:
        """How long ``node_id``'s controlled shutdown may take: it hands over every
        leadership and closes every log it holds, so it grows with the replicas in its log
        dir (``sizing.stop_deadline``)."""
        return sizing.stop_deadline(sizing.replicas_in(self.node(node_id).log_dir))

    @staticmethod
    def killed_at_deadline(node_id: int, deadline_s: float) -> str:
        """``terminate``'s answer when the controlled stop did not finish in time."""
        return (f"{KILLED_AT_DEADLINE}: node {node_id}'s controlled shutdown outlasted "
                f"{deadline_s:.0f} s, so it was SIGKILLed")

    @abc.abstractmethod
    def kill(self, node_id: int) -> None:
        """Hard failure: SIGKILL, wait until the process is gone."""

    @abc.abstractmethod
    def pause(self, node_id: int) -> None:
        """Soft failure: SIGSTOP (or the cgroup freezer)."""

    @abc.abstractmethod
    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node."""

    @abc.abstractmethod
    def start_node(self, node_id: int, timeout: float = 60.0) -> None:
        """Start a stopped (or resume a paused) node on its old log dir and wait until it
        is registered again."""

    def partition(self, node_id: int, from_clients: bool = False) -> str | None:
        """Network failure: cut the node off from every other node (and from clients when
        ``from_clients``) while its process keeps running, and return how the cut was seen
        (raising ``ClusterError`` when it did not act). Only the docker backend can."""
        raise self._no_partitions()

    def heal(self, node_id: int | None = None, timeout: float = 60.0) -> str | None:
        """Undo faults. With ``node_id``: that node's ``partition`` (its links work again),
        returning how the heal was seen. Without: every fault (paused nodes resumed,
        stopped ones started), then the health gate."""
        if node_id is not None:
            raise self._no_partitions()
        for node in self.nodes:
            if self.node_state(node.node_id) is not NodeState.RUNNING:
                self.start_node(node.node_id, timeout)
        self.wait_healthy(timeout=timeout)

    def _no_partitions(self) -> Exception:
        return InputError(f"failure type 'partition' needs the docker backend "
                          f"(--kreplica-backend docker); this cluster's backend is "
                          f"{self.spec.backend!r}")

    def restart(self, node_id: int, timeout: float = 60.0) -> None:
        self.terminate(node_id)
        self.start_node(node_id, timeout)

    # -- health ---------------------------------------------------------------------
    @abc.abstractmethod
    def wait_healthy(self, topics: list[str] | None = None, timeout: float = 60.0) -> None:
        """Health gate: every node running and registered, every partition of ``topics``
        (default: all non-internal topics) with a leader and a full ISR."""

    @abc.abstractmethod
    def log_end_offsets(self, topic: str, partition: int) -> dict[int, int]:
        """Log end offset of the partition on each replica (node id -> offset)."""

    @abc.abstractmethod
    def high_watermark(self, topic: str, partition: int, timeout: float = 30.0) -> int:
        """The partition's high watermark, as its current leader reports it."""

    # -- many partitions at once (the admin backends batch these; these loops are the meaning)
    def partition_states(self, topics: list[str], timeout: float = 30.0
                         ) -> dict[tuple[str, int], PartitionState]:
        """Every partition of ``topics`` (the admin backends ask once for all of them)."""
        raise NotImplementedError

    def replica_log_end_offsets(self, states: dict[tuple[str, int], PartitionState]
                                ) -> dict[tuple[str, int], dict[int, int | str]]:
        """Each running replica's log end offset (or an error's name) per partition."""
        return {(t, p): self.log_end_offsets(t, p) for t, p in states}

    def high_watermarks(self, parts: list[tuple[str, int]], timeout: float = 30.0
                        ) -> dict[tuple[str, int], int]:
        """Each partition's high watermark, as its current leader reports it."""
        return {(t, p): self.high_watermark(t, p, timeout) for t, p in parts}
