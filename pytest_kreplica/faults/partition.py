"""partition: the node is cut off from its peers (its container leaves the cluster network),
then healed. Docker backend only; never drawn by ``random`` (a soak runs on any backend);
not applicable to a component."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .failure import GONE_AT_RECOVERY, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster


def strike(cluster: Cluster, node: int) -> None:
    cluster.partition(node)


def restore(cluster: Cluster, node: int, timeout: float) -> None:
    cluster.heal(node)


FAILURE = Failure(
    name="partition", doc="cut off from its peers, then healed (docker backend only)",
    event="partition", restore_event="heal", colour="#8c564b", label="partition (cut off)",
    backends=("docker",), moves_leadership=True, leader_gone=GONE_AT_RECOVERY, random=False,
    strike=strike, restore=restore)
