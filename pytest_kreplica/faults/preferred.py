"""preferred_election: leadership handed over by a preferred-leader election while the
producer runs.

Test clusters run without automatic preferred-leader election (docs/cluster.md), and a
healthy partition is led by its preferred replica, so an election alone would do nothing.
The fault first makes another in-sync replica the preferred one (a reassignment that only
reorders the replica set: no data moves, the leader stays, now away from its preferred
replica), then asks the controller for a preferred-leader election (ElectLeaders) and waits
until metadata names the new leader.

Which partitions: those the victim leads lose their leader to the first other in-sync
replica (target ``leader``); when the victim leads none, it is made the leader of the
partitions where it is an in-sync follower (target ``follower``). Verified to act: the
leader before and after, and the preferred replica in between, go into the event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ClusterError
from . import moves
from .failure import GONE_AT_RECOVERY, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster, PartitionState


def plan_leaders(states: dict[moves.Part, PartitionState], node: int
                 ) -> dict[moves.Part, int]:
    """The new leader per partition: away from ``node`` where it leads, else to ``node``
    where it is an in-sync follower."""
    led = {part: s for part, s in states.items() if s.leader == node}
    if led:
        planned = {}
        for (t, p), s in sorted(led.items()):
            others = [r for r in s.replicas if r != node and r in s.isr]
            if not others:
                raise ClusterError(f"preferred_election: {t}-{p} has no other in-sync "
                                   f"replica to lead (replicas {list(s.replicas)}, isr "
                                   f"{sorted(s.isr)}); needs replication_factor >= 2")
            planned[(t, p)] = others[0]
        return planned
    planned = {part: node for part, s in sorted(states.items())
               if node in s.isr and s.leader is not None and s.leader >= 0}
    if not planned:
        raise ClusterError(f"preferred_election: node {node} neither leads nor follows in "
                           f"sync any partition ({moves.describe(states)})")
    return planned


def strike(cluster: Cluster, node: int) -> str:
    """Make the planned replica preferred, then elect it; returns the leaders before, the
    reordered replica sets and the leaders after (with the election's time)."""
    from kafka import TopicPartition

    before = moves.topic_states(cluster)
    planned = plan_leaders(before, node)
    order = {part: (leader, *(r for r in before[part].replicas if r != leader))
             for part, leader in planned.items()}
    with moves.admin_client(cluster) as admin:
        answer = admin.alter_partition_reassignments(
            {TopicPartition(t, p): list(r) for (t, p), r in order.items()},
            timeout_ms=int(moves.ACT_TIMEOUT_S * 1000))
        refused = {f"{tp.topic}-{tp.partition}": e.__name__ for tp, e in answer.items() if e}
        if refused:
            raise ClusterError(f"preferred_election: the controller refused the reorder "
                               f"{refused}")

        def reordered(part: moves.Part, state: PartitionState | None) -> str | None:
            if state is not None and tuple(state.replicas) == order[part]:
                return None
            return f"replicas {list(state.replicas) if state else None}"

        between, _ = moves.wait_metadata(cluster, list(order), reordered,
                                         moves.ACT_TIMEOUT_S, "the reordered replica sets")
        away = {part: s.leader for part, s in between.items() if s.leader != planned[part]}
        admin.elect_leaders(0, {t: sorted(p for tt, p in planned if tt == t)
                                for t in sorted({t for t, _ in planned})},
                            timeout_ms=int(moves.ACT_TIMEOUT_S * 1000))

    def elected(part: moves.Part, state: PartitionState | None) -> str | None:
        if state is not None and state.leader == planned[part]:
            return None
        return f"leader {state.leader if state else None} (expected {planned[part]})"

    after, waited = moves.wait_metadata(cluster, list(planned), elected, moves.ACT_TIMEOUT_S,
                                        "the preferred replicas elected leaders")
    changes = "; ".join(f"{t}-{p} leader {before[(t, p)].leader} -> {after[(t, p)].leader} "
                        f"(preferred now {planned[(t, p)]}, replicas "
                        f"{list(after[(t, p)].replicas)}, leader still away from it before "
                        f"the election: {(t, p) in away})"
                        for t, p in sorted(planned))
    return f"preferred-leader election: {changes}; elected {waited:.2f} s after the request"


def restore(cluster: Cluster, node: int, timeout: float) -> str | None:
    """Nothing to undo: leadership stays with the new preferred replicas (no automatic
    rebalance in test clusters); the nemesis then waits for a full ISR."""
    return None


FAILURE = Failure(
    name="preferred_election", doc="another in-sync replica made preferred, then a "
    "preferred-leader election while producing (the leader loses leadership; a follower "
    "target gains it)", event="preferred-election", restore_event="election-settled",
    colour="#8ca252", label="preferred-leader election", backends=moves.BACKENDS,
    moves_leadership=True, leader_gone=GONE_AT_RECOVERY, random=False, strike=strike,
    restore=restore, keeps_controller=True)
