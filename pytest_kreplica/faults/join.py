"""broker_join: a broker added to the running cluster while the producer runs, and given
the victim's replicas. A broker that joins holds nothing until replicas
are moved onto it, so the fault is the join and that move together: a new broker-only node
started with the cluster's id and quorum (``cluster.join``), then every replica of the
case's topics the victim holds reassigned to it (the victim left out, the new broker
appended last, as ``reassign`` does).

Verified to act: the new node registered unfenced, and metadata lists it among the moved
partitions' replicas before the strike counts; the restore waits until the replica sets are
exactly the targets with a full ISR (nothing is moved back: the final snapshot holds the new
node's copy). The new broker stays in the cluster until it is closed. Process backend only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cluster.process import join
from . import moves, reassign
from .failure import GONE_AT_RECOVERY, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster, PartitionState

JOIN_TIMEOUT_S = 90.0
_PENDING: dict[tuple[int, int], dict[moves.Part, tuple[int, ...]]] = {}


def strike(cluster: Cluster, node: int) -> str:
    """Start a new broker, move ``node``'s replicas onto it, wait until metadata lists it."""
    before = moves.topic_states(cluster)
    new = join.add_broker(cluster, JOIN_TIMEOUT_S)  # type: ignore[arg-type]
    planned = reassign.plan_moves(before, node, [new])
    reassign.submit(cluster, before, planned)
    _PENDING[(id(cluster), node)] = planned

    def listed(part: moves.Part, state: PartitionState | None) -> str | None:
        if state is not None and new in state.replicas:
            return None
        return f"replicas {list(state.replicas) if state else None}"

    seen, waited = moves.wait_metadata(cluster, list(planned), listed, moves.ACT_TIMEOUT_S,
                                       f"the new broker {new} among the replicas")
    return (f"node {new} joined (brokers {moves.running_brokers(cluster)}); reassigned "
            f"{reassign.assignment(before, planned)}; metadata after {waited:.2f} s: "
            f"{moves.describe(seen)}")


def restore(cluster: Cluster, node: int, timeout: float) -> str | None:
    """Wait until the moves onto the new broker are complete; nothing is moved back."""
    planned = _PENDING.pop((id(cluster), node), None)
    if planned is None:
        return None
    seen, waited = reassign.wait_complete(cluster, planned, timeout)
    return f"moves onto the new broker complete after {waited:.2f} s more: " \
           f"{moves.describe(seen)}"


FAILURE = Failure(
    name="broker_join", doc="a new broker started in the running cluster and given the "
    "node's replicas", event="join", restore_event="joined", colour="#bd9e39",
    label="broker joined (replicas moved to it)", backends=("process",),
    moves_leadership=True, leader_gone=GONE_AT_RECOVERY, random=False, strike=strike,
    restore=restore, keeps_controller=True)
