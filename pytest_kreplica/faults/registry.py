"""FAILURES: the one table of failure types (name -> :class:`Failure`), and the nemesis'
target vocabulary. The matrix, the nemesis, the loss evidence and the report read these;
none keeps a copy. To add a failure type: a module beside ``hard.py`` defining
``FAILURE``, and its line below."""

from __future__ import annotations

from . import (
    clean,
    clock,
    decommission,
    disk,
    empty_restart,
    hard,
    join,
    links,
    partition,
    power,
    preferred,
    quorum,
    reassign,
    remote_store,
    soft,
)
from .coordinators import COORDINATOR_TARGETS
from .failure import Failure

FAILURES: dict[str, Failure] = {f.name: f for f in (
    clean.FAILURE,
    hard.FAILURE,
    empty_restart.FAILURE,
    soft.FAILURE,
    partition.FAILURE,
    links.SLOW_LINK,
    links.LOSSY_LINK,
    links.FLAKY_LINK,
    links.ONE_WAY_PARTITION,
    *clock.CLOCK_FAILURES,
    disk.DISK_FULL,
    disk.DISK_READONLY,
    power.POWER_LOSS,
    power.POWER_LOSS_ALL,
    power.POWER_LOSS_REPLICAS,
    reassign.FAILURE,
    preferred.FAILURE,
    join.FAILURE,
    decommission.FAILURE,
    quorum.FAILURE,
    remote_store.FAILURE,
)}

NONE = "none"  # the matrix value for a case without a nemesis
RANDOM = "random"  # failure or target drawn per fault from the seed (C.8 soak runs)
FAILURE_VALUES = (NONE, *FAILURES, RANDOM)  # the matrix's ``failure`` vocabulary
RANDOM_FAILURES = tuple(n for n, f in FAILURES.items() if f.random)  # what random draws

TARGETS = ("leader", "follower", "controller")  # roles of a node, resolved at the strike
# components beside the cluster (MirrorMaker 2; a client process of the txn workloads),
# never drawn at random
GROUP_MEMBER = "group-member"  # the first consumer-group member process of a txn workload
# the plain workload's client processes (clients java and librdkafka): each restore starts
# a new incarnation of the process
CLIENT_TARGETS = ("producer", "consumer")
COMPONENT_TARGETS = ("mirror-maker", GROUP_MEMBER, *CLIENT_TARGETS)
# nodes the case's workload names (its group's / transactions' coordinator), never random
WORKLOAD_TARGETS = COORDINATOR_TARGETS
# the matrix's ``target`` vocabulary
TARGET_VALUES = (*TARGETS, *WORKLOAD_TARGETS, *COMPONENT_TARGETS, RANDOM)

# a composed failure ("hard+slow_link"): its parts strike overlapping in time, the second
# while the first is still in effect, each on its own victim (docs/failures.md "Composed
# faults"). A part acts on one node of a running cluster; what acts on the cluster as a
# whole (membership, every replica's power, the remote store) composes with nothing.
COMPOSE = "+"
COMPOSABLE = tuple(n for n in FAILURES if n not in (
    "empty_restart", "power_loss_all", "power_loss_replicas", "reassign",
    "preferred_election", "broker_join", "broker_decommission", "controller_membership",
    "remote_store_readonly"))
# a part that takes its node out of the KRaft quorum (stopped, paused, cut off): two of them
# need a quorum that survives two voters out
OUTAGE_BROKERS = 5


def parts_of(failure: str | None) -> tuple[str, ...]:
    """The failure types of a matrix ``failure`` value: one, or a composition's parts."""
    return tuple(failure.split(COMPOSE)) if failure else ()


def is_composed(failure: str | None) -> bool:
    return bool(failure) and COMPOSE in str(failure)


def takes_out(name: str) -> bool:
    """Whether a failure takes its node out of the quorum (stopped, paused or cut off); a
    ``random`` part may (every type it draws does)."""
    if name == RANDOM:
        return any(takes_out(drawn) for drawn in RANDOM_FAILURES)
    return FAILURES[name].struck_state is not None or name == "partition"


def composition_problem(value: str) -> str | None:
    """Why ``value`` is not a composition the nemesis can run (None: it is): two parts, each
    a composable failure type or ``random`` (one of ``RANDOM_FAILURES`` per fault, drawn
    from the seed: ``random+random`` is the soak's composed nemesis)."""
    parts = parts_of(value)
    if len(parts) != 2:
        return f"a composition has two parts joined by {COMPOSE!r}, got {len(parts)}"
    for part in parts:
        if part not in (*COMPOSABLE, RANDOM):
            return (f"part {part!r} is not a failure type that composes; allowed parts: "
                    f"{' | '.join((*COMPOSABLE, RANDOM))}")
    return None


STRIKE_EVENTS: dict[str, Failure] = {f.event: f for f in FAILURES.values()}
RESTORE_EVENTS = frozenset(f.restore_event for f in FAILURES.values())


def facilities_needed(failure: str | None) -> frozenset[str]:
    """The node facilities a case whose ``failure`` is this needs its cluster to have: the
    failure's own, a composition's parts' together, or (``random``) those of every failure
    ``random`` may draw."""
    parts = parts_of(failure)
    drawn = [FAILURES[name] for name in RANDOM_FAILURES] if RANDOM in parts else []
    drawn += [FAILURES[part] for part in parts if part in FAILURES]
    return frozenset().union(*(f.facilities for f in drawn))


def failures_on(backend: str) -> tuple[str, ...]:
    """The matrix ``failure`` values a case on ``backend`` may take."""
    return (NONE, *(n for n, f in FAILURES.items() if f.runs_on(backend)), RANDOM)
