"""What one failure type is: how it strikes and restores a node (or a component), the events
it writes, how the report draws it, where it runs and what it means for leadership.

Every reader of the failure vocabulary (the matrix, the nemesis, the loss evidence, the
report) asks a :class:`Failure` from ``registry.FAILURES`` instead of keeping its own table,
so a new failure type is one module defining ``FAILURE`` plus one line in the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..cluster import Cluster

# Until when a struck leader could still acknowledge records on its own (loss evidence):
GONE_AT_STRIKE = "strike"  # the process is dead at once (SIGKILL)
GONE_AT_ELECTION = "election"  # it hands over leadership, until a new leader is seen
GONE_AT_RECOVERY = "recovery"  # it keeps running: until every replica is in sync again
LEADER_GONE = (GONE_AT_STRIKE, GONE_AT_ELECTION, GONE_AT_RECOVERY)
# backends whose clusters the suite starts on this machine: faults that act on the cluster as
# a whole (replica moves) or on the node's host-mounted log dir (disk, power loss) need one
SUITE_OWNED = ("process", "docker")


@dataclass(frozen=True)
class Allowance:
    """What one fault may cost availability: the longest stretch with neither an
    acknowledgement nor a poll progressing that overlaps its window (strike to every replica
    back in sync) may last this long. On top of it the validation adds the cluster's
    follower lag bound (an acks=all leader waits that long for a dead follower to leave the
    ISR) and, for a case that cannot write without the victim (replication factor 1, or
    acks=all with min ISR above the replicas left), the whole window. Generous on purpose:
    a false red is the worst thing this check could do."""

    follower_s: float = 30.0  # the victim led no partition of the case
    leader_s: float = 60.0  # it led one (or what it led is not known): election + retries
    # plus the fault's own length (strike to restore): the victim keeps its role while it
    # is paused, cut off or degraded, so clients wait for it
    downtime: bool = True

    def allowed_s(self, led: bool, downtime_s: float | None) -> float:
        base = self.leader_s if led else self.follower_s
        return base + ((downtime_s or 0.0) if self.downtime else 0.0)


# a node that stops at once (SIGKILL, SIGTERM): a follower costs little beyond the lag
# bound, a leader one election and the client's retry, whatever its downtime
STOPS = Allowance(follower_s=10.0, leader_s=40.0, downtime=False)


@dataclass(frozen=True)
class Failure:
    """One value of the matrix's ``failure`` dimension."""

    name: str  # the matrix value and the fault record's ``failure``
    doc: str  # one line for people: what is done to the victim
    event: str  # event kind written at the strike (the report's fault bar)
    restore_event: str  # event kind written at the restore
    colour: str  # the report's bar and shading colour
    label: str  # the report's legend entry
    # cluster backends that can apply it; None: every backend (its strike and restore are
    # abstract methods of ``Cluster``, so a third-party backend has them too)
    backends: tuple[str, ...] | None
    moves_leadership: bool  # False: the victim may keep leading (a short pause)
    leader_gone: str  # one of LEADER_GONE
    random: bool  # whether failure ``random`` may draw it
    # strike and restore may return what they measured (text for the strike's event and
    # the recovery's): a fault verified to act says how it acted
    strike: Callable[[Cluster, int], str | None]
    restore: Callable[[Cluster, int, float], str | None]  # (cluster, node, timeout)
    # a component (e.g. MirrorMaker 2) has terminate / kill / pause / resume / start;
    # None: the failure cannot hit a component
    strike_component: Callable[[Any], None] | None = None
    restore_component: Callable[[Any], None] | None = None
    watch_isr: bool = False  # the victim runs on: record ISR and leader changes (isrwatch)
    # the victim's process runs on as a voter (a replica move, an election): the KRaft quorum
    # leader need not move, so the nemesis does not wait for a controller failover
    keeps_controller: bool = False
    # the strike returns only once the victim exited and it hands its leadership over
    # before that (a controlled shutdown): its election is watched while the strike runs
    hands_over_while_striking: bool = False
    # a failure that drops what a node had not fsynced (power loss): from the strike's
    # measured text, each "topic-partition" whose segments lost bytes, with those nodes (the
    # loss evidence: a partition cut on every replica may lose acknowledged records)
    segments_cut: Callable[[str | None], dict[str, set[int]]] | None = None
    # the victim's state once the strike acted ("stopped", "paused"), read back by the
    # nemesis from the cluster's ``node_state`` (a component's ``state``) after the strike:
    # a strike that left the victim running did not act, and the fault is a harness error.
    # None: the strike measures its own effect (links, clock, disk, moves) and raises.
    struck_state: str | None = None
    # what a fault of this type may cost availability (``validation.availability``); a
    # matrix's ``max_unavailable_s`` overrides it
    availability: Allowance = Allowance()
    # the node facilities its cluster needs (names in ``cluster.facilities.FACILITIES``: a
    # proxy in front of the links, small disks, ...); the pool starts such a cluster for it
    facilities: frozenset[str] = frozenset()

    def runs_on(self, backend: str) -> bool:
        return self.backends is None or backend in self.backends


def restart_node(cluster: Cluster, node: int, timeout: float) -> None:
    """The restore of every failure that stops a node: start it again, bounded."""
    cluster.start_node(node, timeout=timeout)


def degrading(name: str, doc: str, restore_event: str, colour: str, label: str,
              strike: Callable[[Cluster, int, str], str],
              restore: Callable[[Cluster, int, str, float], str],
              backends: tuple[str, ...] = ("process",),
              facilities: frozenset[str] = frozenset()) -> Failure:
    """A fault that degrades a node which runs on (links, clock): the victim may keep
    leading and acknowledges until it is back in sync, never drawn by ``random``, its ISR
    watched. ``strike`` / ``restore`` take the failure's name."""
    return Failure(
        name=name, doc=doc, event=name, restore_event=restore_event, colour=colour,
        label=label, backends=backends, moves_leadership=False,
        leader_gone=GONE_AT_RECOVERY, random=False,
        strike=lambda cluster, node: strike(cluster, node, name),
        restore=lambda cluster, node, timeout: restore(cluster, node, name, timeout),
        watch_isr=True, facilities=facilities)  # struck_state None: the strike measures
