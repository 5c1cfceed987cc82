"""clean: SIGTERM, a controlled shutdown (leadership handed over), then a restart."""

from __future__ import annotations

from operator import methodcaller
from typing import TYPE_CHECKING

from .failure import GONE_AT_ELECTION, STOPS, Failure, restart_node

if TYPE_CHECKING:
    from ..cluster import Cluster


def strike(cluster: Cluster, node: int) -> str | None:
    """SIGTERM within the node's stop deadline; what ``terminate`` says when the deadline
    passed and the stop ended in SIGKILL (the fault record then says it became hard)."""
    return cluster.terminate(node)


FAILURE = Failure(
    name="clean", doc="SIGTERM, then a restart", event="terminate", restore_event="start",
    colour="#ff7f0e", label="terminate (SIGTERM)", backends=None, moves_leadership=True,
    leader_gone=GONE_AT_ELECTION, random=True, strike=strike, restore=restart_node,
    strike_component=methodcaller("terminate"), restore_component=methodcaller("start"),
    struck_state="stopped", availability=STOPS, hands_over_while_striking=True)
