"""clean: SIGTERM, a controlled shutdown (leadership handed over), then a restart."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .failure import GONE_AT_ELECTION, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster


def strike(cluster: Cluster, node: int) -> None:
    cluster.terminate(node)


def restore(cluster: Cluster, node: int, timeout: float) -> None:
    cluster.start_node(node, timeout=timeout)


def strike_component(process: Any) -> None:
    process.terminate()


def restore_component(process: Any) -> None:
    process.start()


FAILURE = Failure(
    name="clean", doc="SIGTERM, then a restart", event="terminate", restore_event="start",
    colour="#ff7f0e", label="terminate (SIGTERM)", backends=None, moves_leadership=True,
    leader_gone=GONE_AT_ELECTION, random=True, strike=strike, restore=restore,
    strike_component=strike_component, restore_component=restore_component)
