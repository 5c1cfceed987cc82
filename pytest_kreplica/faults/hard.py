"""hard: SIGKILL (nothing is acknowledged after the strike), then a restart."""

from __future__ import annotations

from operator import methodcaller
from typing import TYPE_CHECKING

from .failure import GONE_AT_STRIKE, STOPS, Failure, restart_node

if TYPE_CHECKING:
    from ..cluster import Cluster


def strike(cluster: Cluster, node: int) -> None:
    cluster.kill(node)


FAILURE = Failure(
    name="hard", doc="SIGKILL, then a restart", event="kill", restore_event="start",
    colour="#d62728", label="kill (SIGKILL)", backends=None, moves_leadership=True,
    leader_gone=GONE_AT_STRIKE, random=True, strike=strike, restore=restart_node,
    strike_component=methodcaller("kill"), restore_component=methodcaller("start"),
    struck_state="stopped", availability=STOPS)
