"""soft: SIGSTOP, then SIGCONT. The process keeps its sockets; a pause shorter than the
broker session keeps its leadership, so an election is observed, never required."""

from __future__ import annotations

from operator import methodcaller
from typing import TYPE_CHECKING

from .failure import GONE_AT_RECOVERY, Allowance, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster


def strike(cluster: Cluster, node: int) -> None:
    cluster.pause(node)


def restore(cluster: Cluster, node: int, timeout: float) -> None:
    cluster.resume(node)


FAILURE = Failure(
    name="soft", doc="SIGSTOP, then SIGCONT", event="pause", restore_event="resume",
    colour="#9467bd", label="pause (SIGSTOP)", backends=None, moves_leadership=False,
    leader_gone=GONE_AT_RECOVERY, random=True, strike=strike, restore=restore,
    strike_component=methodcaller("pause"), restore_component=methodcaller("resume"),
    struck_state="paused",
    # a paused leader keeps leading while paused shorter than the broker session, then
    # is replaced: its pause, plus the session timeout and the client's retry
    availability=Allowance(follower_s=10.0, leader_s=40.0, downtime=True))
