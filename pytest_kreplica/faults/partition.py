"""partition: the node is cut off from its peers (DROP rules in its container's network
namespace), then healed. Docker backend only; never drawn by ``random`` (a soak runs on any
backend); not applicable to a component. The strike measures its effect: the backend reads
the cut back from a peer (its TCP connects to the node time out) and the heal too (they
open again), so a cut that did not act is a harness error, not a quiet case."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .failure import GONE_AT_RECOVERY, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster


def strike(cluster: Cluster, node: int) -> str | None:
    return cluster.partition(node)


def restore(cluster: Cluster, node: int, timeout: float) -> str | None:
    return cluster.heal(node)


FAILURE = Failure(
    name="partition", doc="cut off from its peers, then healed (docker backend only)",
    event="partition", restore_event="heal", colour="#8c564b", label="partition (cut off)",
    backends=("docker",), moves_leadership=True, leader_gone=GONE_AT_RECOVERY, random=False,
    strike=strike, restore=restore)
