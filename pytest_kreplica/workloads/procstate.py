"""A client process as a fault sees it: the kernel's state of its pid, and the bounded wait
until a signal sent to it has acted (one that did not is a harness error, never a quiet
case). Shared by the restartable producer / consumer and the consumer-group members."""

from __future__ import annotations

from collections.abc import Callable

import psutil

from ..cluster.base import NodeState
from ..errors import ClusterError
from ..waits import wait_for

# a signal is delivered when its target next runs: on a loaded machine that takes a while
SIGNAL_TIMEOUT_S = 10.0


def process_status(pid: int | None) -> str:
    """The kernel's state of ``pid`` (psutil: "stopped" is /proc/PID/stat's T), "gone" once
    it exited (a zombie counts as gone: it runs no more)."""
    if pid is None:
        return "gone"
    try:
        status = psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return "gone"
    return "gone" if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD) else status


def node_state(pid: int | None, alive: bool) -> NodeState:
    """What a fault reads of the process ``pid`` (``alive``: not yet exited for its parent)."""
    status = process_status(pid) if alive else "gone"
    if status == "gone":
        return NodeState.STOPPED
    return NodeState.PAUSED if status == psutil.STATUS_STOPPED else NodeState.RUNNING


def await_state(state: Callable[[], NodeState], pid: int | None, wanted: NodeState,
                sent: str, victim: str) -> None:
    """Wait (``SIGNAL_TIMEOUT_S``) until ``state()`` is ``wanted`` after the signal ``sent``
    (a process that exited counts as resumed: it runs no more, which its owner handles);
    otherwise ``ClusterError``: the signal did not act on ``victim``."""
    def check() -> str | None:
        now = state()
        if now is wanted or (now is NodeState.STOPPED and wanted is NodeState.RUNNING):
            return None
        return f"state {now.value} (process status {process_status(pid)})"

    try:
        wait_for(check, SIGNAL_TIMEOUT_S, f"its process {wanted.value}", poll=0.05)
    except ClusterError as exc:
        raise ClusterError(f"{sent} did not act on {victim} (pid {pid}): {exc}") from None
