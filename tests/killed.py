"""A session killed with SIGKILL, for the tests that prove nothing outlives one: the child
session starts something, prints its pid, and sleeps; the test kills the session and waits
(bounded) until that pid is gone (a zombie counts as gone: nothing runs)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator

import psutil

from pytest_kreplica.waits import wait_for


def gone(pid: int) -> str | None:
    """None once ``pid`` no longer runs, else what it still is."""
    try:
        status = psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return None
    return None if status == psutil.STATUS_ZOMBIE else f"pid {pid} {status}"


@contextlib.contextmanager
def child_session(script: str) -> Iterator[tuple[int, Callable[[float, str], None]]]:
    """Run ``script`` as its own Python session; yields the pid it printed and
    ``sigkill(timeout, what)``, which SIGKILLs the session and waits until that pid is gone."""
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)

    def sigkill(timeout: float, what: str) -> None:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        wait_for(lambda: gone(pid), timeout, f"{what} (pid {pid}) gone after its session's "
                                              f"SIGKILL")
    try:
        pid = int(child.stdout.readline())
        yield pid, sigkill
    finally:
        child.kill()
        child.wait(10)
