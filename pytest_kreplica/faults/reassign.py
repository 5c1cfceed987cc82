"""reassign: the victim's replicas moved to a spare broker while the producer runs
(AlterPartitionReassignments through the admin client), then waited for (bounded) until the
move is complete. Issue 16, part 5.

Every partition of the case's topics that the victim replicates gets a new replica set: the
victim left out, a broker outside the set appended. Appended, not put in the victim's place:
when the victim led, the new preferred leader is then a replica that was in sync before the
fault (the C.2 check "new leader was in the ISR" holds for a reassignment as for a crash).
The case needs more brokers than its replication factor (``brokers: [4]`` with rf 3).

Verified to act: the strike returns only once metadata lists the new replica (during the move
the replica set is the union of old and new); the restore waits until the replica set is
exactly the target with a full ISR in every broker's metadata. Both events carry the old and
the new assignment. Nothing is moved back: the final replica snapshot must show the new assignment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ClusterError, InputError
from . import moves
from .failure import GONE_AT_RECOVERY, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster, PartitionState

# the moves submitted by a strike, until its restore has seen them complete
_PENDING: dict[tuple[int, int], dict[moves.Part, tuple[int, ...]]] = {}


def plan_moves(states: dict[moves.Part, PartitionState], node: int, brokers: list[int]
               ) -> dict[moves.Part, tuple[int, ...]]:
    """The new replica set of every partition ``node`` replicates: ``node`` left out, a
    spare broker (one outside the set, rotating over the partitions) appended."""
    planned: dict[moves.Part, tuple[int, ...]] = {}
    for i, (part, state) in enumerate(sorted(states.items())):
        if node not in state.replicas:
            continue
        spares = [b for b in brokers if b not in state.replicas]
        if not spares:
            raise InputError(
                f"reassign needs a running broker outside the replica set of "
                f"{part[0]}-{part[1]} (replicas {list(state.replicas)}, running brokers "
                f"{brokers}); allowed: brokers > replication_factor")
        planned[part] = (*(r for r in state.replicas if r != node), spares[i % len(spares)])
    if not planned:
        raise ClusterError(f"reassign: node {node} holds no replica of the case's topics "
                           f"({moves.describe(states)}); nothing to move")
    return planned


def assignment(before: dict[moves.Part, PartitionState],
                planned: dict[moves.Part, tuple[int, ...]]) -> str:
    return "; ".join(f"{t}-{p} {list(before[(t, p)].replicas)} -> {list(r)}"
                     for (t, p), r in sorted(planned.items()))


def submit(cluster: Cluster, before: dict[moves.Part, PartitionState],
           planned: dict[moves.Part, tuple[int, ...]]) -> None:
    """Ask the controller for ``planned`` (AlterPartitionReassignments); raises when it
    refuses or leaves a partition unanswered."""
    from kafka import TopicPartition

    with moves.admin_client(cluster) as admin:
        answer = admin.alter_partition_reassignments(
            {TopicPartition(t, p): list(r) for (t, p), r in planned.items()},
            timeout_ms=int(moves.ACT_TIMEOUT_S * 1000))
    refused = {f"{tp.topic}-{tp.partition}": err.__name__ for tp, err in answer.items()
               if err is not None}
    missing = sorted(f"{t}-{p}" for t, p in planned if TopicPartition(t, p) not in answer)
    if refused or missing:
        raise ClusterError(f"reassign: expected the controller to accept "
                           f"{assignment(before, planned)}; refused {refused}, "
                           f"unanswered {missing}")


def wait_complete(cluster: Cluster, planned: dict[moves.Part, tuple[int, ...]],
                  timeout: float) -> tuple[dict[moves.Part, PartitionState], float]:
    """Wait until every moved partition's replica set is exactly its target (the move is
    over: during it the set is the union of old and new) and its ISR is full."""
    def complete(part: moves.Part, state: PartitionState | None) -> str | None:
        if state is None:
            return "not in metadata"
        if tuple(state.replicas) != planned[part] or not state.isr_full:
            return (f"replicas {list(state.replicas)} isr {sorted(state.isr)} (target "
                    f"{list(planned[part])})")
        return None

    return moves.wait_metadata(
        cluster, list(planned), complete, timeout,
        "the reassignment complete in every broker's metadata: replicas equal to the target, "
        "ISR full", every_broker=True)


def strike(cluster: Cluster, node: int) -> str:
    """Submit the reassignment away from ``node`` and wait until metadata lists the new
    replicas; returns the old and new assignment and what metadata showed."""
    before = moves.topic_states(cluster)
    planned = plan_moves(before, node, moves.running_brokers(cluster))
    submit(cluster, before, planned)
    _PENDING[(id(cluster), node)] = planned

    def adding(part: moves.Part, state: PartitionState | None) -> str | None:
        if state is not None and planned[part][-1] in state.replicas:
            return None
        return f"replicas {list(state.replicas) if state else None}"

    seen, waited = moves.wait_metadata(cluster, list(planned), adding, moves.ACT_TIMEOUT_S,
                                       "the new replicas listed in metadata")
    return (f"reassigned {assignment(before, planned)}; metadata after {waited:.2f} s: "
            f"{moves.describe(seen)}")


def restore(cluster: Cluster, node: int, timeout: float) -> str | None:
    """Wait (at most ``timeout`` s) until every moved partition's replica set is exactly its
    target and its ISR full; returns the final assignment. Nothing is moved back."""
    planned = _PENDING.pop((id(cluster), node), None)
    if planned is None:
        return None  # the strike failed before the controller took a move
    seen, waited = wait_complete(cluster, planned, timeout)
    return f"reassignment complete after {waited:.2f} s more: {moves.describe(seen)}"


FAILURE = Failure(
    name="reassign", doc="its replicas reassigned to a spare broker while producing "
    "(needs brokers > replication_factor)", event="reassign", restore_event="reassigned",
    colour="#5254a3", label="reassignment (replicas moved)", backends=moves.BACKENDS,
    moves_leadership=True, leader_gone=GONE_AT_RECOVERY, random=False, strike=strike,
    restore=restore, keeps_controller=True)
