"""One long-lived thread that forks every child of this process (brokers, tools, clients).

The parent-death signal (``PR_SET_PDEATHSIG``) fires when the *forking thread* exits, so a
short-lived thread would kill its children early: every fork goes through this one daemon
thread. Each child runs in its own process group so a whole node can be signalled at once.

The signal is set by ``setpriv(1)`` (util-linux, part of every Debian) in the child just
before it execs the command, and a shell checks that the parent is still this process, so
nothing runs Python between fork and exec. A ``preexec_fn`` did: CPython then deletes the
other threads' states in the child, an object freed there whose ``__del__`` logs (py4j's
connection) waited for a logging lock another thread held at the fork, and the launcher
thread hung for good with every later broker start behind it.
"""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import threading
from typing import Any

from ..errors import ClusterError

FORK_TIMEOUT_S = 60
SETPRIV = "setpriv"
# exec the command only while the parent that asked for it is alive (else exit 1): closes the
# window between the fork and setpriv's prctl, in which a dying parent sends no signal
_PARENT_CHECK = '[ "$PPID" = "$0" ] || exit 1; exec "$@"'


def bound_to_parent(cmd: list[str], parent_pid: int | None = None) -> list[str]:
    """``cmd`` wrapped so that it is SIGKILLed when the forking thread of ``parent_pid``
    (this process) exits, and never starts once that process is gone."""
    pid = os.getpid() if parent_pid is None else parent_pid
    return [SETPRIV, "--pdeathsig", "KILL", "--", "/bin/sh", "-c", _PARENT_CHECK, str(pid),
            *cmd]


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
        argv = bound_to_parent(cmd) if die_with_parent else cmd
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._cond:
            self._jobs.append((lambda: subprocess.Popen(
                argv, start_new_session=True, **kwargs), future))
            self._cond.notify()
        return future.result(timeout=FORK_TIMEOUT_S)

    def run(self, cmd: list[str], *, timeout: float, what: str,
            merge_output: bool = False) -> subprocess.CompletedProcess:
        """``cmd`` to its end within ``timeout`` seconds, forked like ``popen`` (it dies with
        this process): its exit code and text output (stderr in stdout with
        ``merge_output``). One that runs longer is killed: ClusterError naming ``what``."""
        proc = self.popen(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if merge_output else subprocess.PIPE,
                          stdin=subprocess.DEVNULL, text=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise ClusterError(f"{what} did not finish within {timeout:.0f} s (expected exit "
                               f"0)") from None
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
