"""One long-lived thread that forks every child JVM of this process (brokers, tools, clients).

The parent-death signal (``PR_SET_PDEATHSIG``) fires when the *forking thread* exits, so a
short-lived thread would kill its children early: every fork goes through this one daemon
thread. Each child runs in its own process group so a whole node can be signalled at once.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any

PR_SET_PDEATHSIG = 1
FORK_TIMEOUT_S = 60

_libc = ctypes.CDLL(None, use_errno=True)


def die_with(parent_pid: int) -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child die with ``parent_pid``'s forking thread."""
    def preexec() -> None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)
    return preexec


class Launcher:
    """One daemon thread that forks every child of this process; ``Launcher.get().popen``."""

    _instance: Launcher | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self._jobs: list = []
        self._cond = threading.Condition()
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._loop, name="kreplica-launcher",
                                        daemon=True)
        self._thread.start()

    @classmethod
    def get(cls) -> Launcher:
        """The launcher of this process (a new one after a fork or if its thread died)."""
        with cls._guard:
            if cls._instance is None or not cls._instance._thread.is_alive() \
                    or cls._instance._pid != os.getpid():
                cls._instance = cls()
            return cls._instance

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._jobs:
                    self._cond.wait()
                func, future = self._jobs.pop(0)
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(func())
                except BaseException as exc:  # handed to the caller
                    future.set_exception(exc)

    def popen(self, cmd: list[str], *, die_with_parent: bool = True,
              **kwargs: Any) -> subprocess.Popen:
        """``subprocess.Popen`` in a new session, forked by the launcher thread; with
        ``die_with_parent`` the child is SIGKILLed when this process dies."""
        preexec = die_with(os.getpid()) if die_with_parent else None
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._cond:
            self._jobs.append((lambda: subprocess.Popen(
                cmd, start_new_session=True, preexec_fn=preexec, **kwargs), future))
            self._cond.notify()
        return future.result(timeout=FORK_TIMEOUT_S)
