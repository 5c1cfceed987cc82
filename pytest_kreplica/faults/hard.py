"""hard: SIGKILL (nothing is acknowledged after the strike), then a restart."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .failure import GONE_AT_STRIKE, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster


def strike(cluster: Cluster, node: int) -> None:
    cluster.kill(node)


def restore(cluster: Cluster, node: int, timeout: float) -> None:
    cluster.start_node(node, timeout=timeout)


def strike_component(process: Any) -> None:
    process.kill()


def restore_component(process: Any) -> None:
    process.start()


FAILURE = Failure(
    name="hard", doc="SIGKILL, then a restart", event="kill", restore_event="start",
    colour="#d62728", label="kill (SIGKILL)", backends=None, moves_leadership=True,
    leader_gone=GONE_AT_STRIKE, random=True, strike=strike, restore=restore,
    strike_component=strike_component, restore_component=restore_component)
