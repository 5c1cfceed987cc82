"""server.properties for combined broker+controller KRaft nodes, backend-neutral.

The process backend and the docker backend both render node configs here, so both run
Kafka with the same tuned settings; only the listener addresses differ.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Fault detection tuned for tests (KAFKA-NOTES "Faults"): a leader failover near 3 s
# instead of 9 s, a paused broker fenced after 3 s.
TUNED_FAULT_SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "controller.quorum.fetch.timeout.ms": "1000",
    "controller.quorum.election.timeout.ms": "500",
    "controller.quorum.election.backoff.max.ms": "500",
    "replica.lag.time.max.ms": "5000",
    # No leader moves the nemesis did not make: Kafka's automatic preferred-leader election
    # (default on, every 300 s) moved leadership back to a restarted node a few seconds
    # after a fault, unrecorded, and with acks=1 truncated records the interim leader had
    # acknowledged, which the loss evidence then could not explain. A preferred-leader
    # election is a fault of its own, to be struck and recorded.
    "auto.leader.rebalance.enable": "false",
}

# Kafka's own default of the follower lag bound (a cluster started without the tuned settings)
KAFKA_DEFAULT_LAG_MS = 30000
LAG_KEY = "replica.lag.time.max.ms"


def follower_lag_bound_ms(extra: Mapping[str, str] | Iterable[tuple[str, str]] = (),
                          tuned: bool = True) -> int | None:
    """``replica.lag.time.max.ms`` of a node rendered by ``server_properties`` with these
    ``extra`` settings (None when the value is not a whole number of ms)."""
    value = {**(TUNED_FAULT_SETTINGS if tuned else {}), **dict(extra)}.get(
        LAG_KEY, str(KAFKA_DEFAULT_LAG_MS))
    return int(value) if str(value).strip().isdigit() else None


# Small thread pools and buffers: several clusters share a 2-core machine.
SMALL_FOOTPRINT = {
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.replica.fetchers": "1",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
    "log.cleaner.threads": "1",
    "log.cleaner.dedupe.buffer.size": "2097152",  # must exceed 1 MiB per cleaner thread
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
    "auto.create.topics.enable": "false",
}

# Kafka 4.x rejects segment.bytes below this; the topic config internal.segment.bytes
# takes smaller values (the test plan's 1K/2K/10K segments).
MIN_SEGMENT_BYTES_4X = 1024 * 1024


@dataclass(frozen=True)
class NodeAddress:
    """Where one node listens (inside its host or container) and what it advertises."""

    node_id: int
    host: str  # address the node's listeners bind to
    port: int  # PLAINTEXT (client and inter-broker)
    controller_port: int
    advertised_host: str | None = None  # default: host
    advertised_port: int | None = None  # default: port


def new_cluster_id() -> str:
    """16 random bytes, url-safe base64 without padding, never starting with '-'
    (the storage tool would read it as an option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def quorum_voters(nodes: Iterable[NodeAddress]) -> str:
    """Static ``controller.quorum.voters``: every node is a voter."""
    return ",".join(f"{n.node_id}@{n.advertised_host or n.host}:{n.controller_port}"
                    for n in nodes)


def dynamic_quorum(nodes: Iterable[NodeAddress]) -> tuple[str, str]:
    """A dynamic quorum of every node (KIP-853): ``controller.quorum.bootstrap.servers``
    and the format tool's ``--initial-controllers`` (each voter with a new directory id)."""
    nodes = list(nodes)
    bootstrap = ",".join(f"{n.advertised_host or n.host}:{n.controller_port}" for n in nodes)
    initial = ",".join(f"{n.node_id}@{n.advertised_host or n.host}:{n.controller_port}:"
                       f"{new_cluster_id()}" for n in nodes)
    return bootstrap, initial


def server_properties(node: NodeAddress, voters: str, log_dir: str, brokers: int,
                      extra: Mapping[str, str] | Iterable[tuple[str, str]] = (),
                      tuned: bool = True) -> dict[str, str]:
    """All settings of one node; ``extra`` (a spec's broker_config) wins over defaults."""
    replication = str(min(3, brokers))
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{node.host}:{node.port},"
                     f"CONTROLLER://{node.host}:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{node.advertised_host or node.host}:"
                                f"{node.advertised_port or node.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": log_dir,
        "offsets.topic.replication.factor": replication,
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": str(min(2, brokers)),
        **SMALL_FOOTPRINT,
    }
    if tuned:
        props.update(TUNED_FAULT_SETTINGS)
    props.update(dict(extra))
    return props


def render_properties(props: Mapping[str, str]) -> str:
    """Java properties text, one ``key=value`` per line (values escaped for ``\\``)."""
    lines = ["# generated by pytest-kreplica"]
    for key, value in props.items():
        lines.append(f"{key}={str(value).replace(chr(92), chr(92) * 2)}")
    return "\n".join(lines) + "\n"


def topic_configs(kafka_version: str, config: Mapping[str, str]) -> dict[str, str]:
    """Topic configs as this Kafka version accepts them: on 4.x a ``segment.bytes`` below
    1 MiB is sent as ``internal.segment.bytes`` (3.x takes small values directly)."""
    out = {k: str(v) for k, v in config.items()}
    major = int(kafka_version.split(".")[0])
    if major >= 4 and "segment.bytes" in out and int(out["segment.bytes"]) < MIN_SEGMENT_BYTES_4X:
        out["internal.segment.bytes"] = out.pop("segment.bytes")
    return out
