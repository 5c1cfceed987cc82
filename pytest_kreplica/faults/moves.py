"""What the membership faults (``reassign``, ``preferred_election``) share:
an admin client of their own, the partitions they act on, and bounded waits on metadata.

These faults do not hurt a process; they ask the controller to move replicas or leadership
while the producer runs. They act on every partition of the cluster's non-internal topics
(on a cluster the suite owns those are the case's topics: the runner deletes its topics after
each case), so they run only on backends whose clusters the suite starts (process, docker),
never on an external cluster whose other topics they would move too.

A move is verified to act: the new assignment or leader is read back from metadata before
the strike counts, and the figures go into the fault's event.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..cluster.base import NodeState
from ..errors import ClusterError
from ..waits import wait_for
from .failure import SUITE_OWNED

if TYPE_CHECKING:
    from ..cluster import Cluster, PartitionState

Part = tuple[str, int]
BACKENDS = SUITE_OWNED  # clusters the suite owns (see the module docstring)
ACT_TIMEOUT_S = 30.0  # a move must show in metadata within this


@contextlib.contextmanager
def admin_client(cluster: Cluster) -> Iterator[Any]:
    """A kafka-python admin client bootstrapped from the running nodes, closed after use."""
    from kafka import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=cluster.live_bootstrap_servers(),
                              client_id="kreplica-moves", request_timeout_ms=15000,
                              reconnect_backoff_ms=50, reconnect_backoff_max_ms=500,
                              metadata_max_age_ms=1000)
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            client.close()


def topic_states(cluster: Cluster, internal: bool = False) -> dict[Part, PartitionState]:
    """Every partition of the cluster's non-internal topics (with ``internal``: of the
    internal ones too, e.g. ``__consumer_offsets``), from metadata."""
    with admin_client(cluster) as admin:
        names = sorted(t for t in admin.list_topics() if internal or not t.startswith("__"))
    if not names:
        raise ClusterError("no topic to move: the cluster has no non-internal topic")
    return cluster.partition_states(names)


def running_brokers(cluster: Cluster) -> list[int]:
    """The nodes running now: the only candidates for a new replica."""
    return sorted(n.node_id for n in cluster.nodes
                  if cluster.node_state(n.node_id) is NodeState.RUNNING)


def describe(states: dict[Part, PartitionState], parts: list[Part] | None = None) -> str:
    """``t-0 replicas [1, 2, 3] leader 1 isr [1, 2, 3]; ...`` for an event."""
    return "; ".join(f"{t}-{p} replicas {list(s.replicas)} leader {s.leader} isr "
                     f"{sorted(s.isr)}" for (t, p), s in sorted(states.items())
                     if parts is None or (t, p) in parts)


def wait_metadata(cluster: Cluster, parts: list[Part], ok: Any, timeout: float, what: str,
                  every_broker: bool = False) -> tuple[dict[Part, PartitionState], float]:
    """Poll metadata until ``ok(part, state)`` is None for every part (else it says what it
    sees); returns the last states and the seconds waited. With ``every_broker`` the state
    must also be ok in every reachable broker's own metadata: a broker still replaying the
    metadata log answers with the state before (a CI run read a reassignment back as the
    union of old and new replicas from one broker right after another had shown it done)."""
    started = time.monotonic()
    seen: dict[Part, PartitionState] = {}
    topics = sorted({t for t, _ in parts})

    def check() -> str | None:
        seen.clear()
        states = cluster.partition_states(topics)
        seen.update({part: states[part] for part in parts if part in states})
        problems = [f"{t}-{p}: {ok((t, p), seen.get((t, p)))}" for t, p in parts
                    if ok((t, p), seen.get((t, p))) is not None]
        if problems or not every_broker:
            return "; ".join(problems) or None
        views = cluster.topic_views(topics, timeout=5.0)  # one request to each broker
        for node, states in sorted(views.items(), key=lambda kv: str(kv[0])):
            for t, p in parts:
                problem = ok((t, p), states.get((t, p)))
                if problem is not None:
                    problems.append(f"{t}-{p} in node {node}'s metadata: {problem}")
        return "; ".join(problems) or None

    hint = "broker logs: " + ", ".join(str(p) for p in cluster.log_files().values())
    wait_for(check, timeout, what, hint=hint, poll=0.2)
    return dict(seen), time.monotonic() - started
