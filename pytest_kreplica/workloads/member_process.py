"""A consumer-group member in a process of its own (the ``txn`` workloads' read_committed
readers), so that the nemesis crashes a real client (target ``group-member``): SIGKILL,
SIGTERM or SIGSTOP of a real process, as Jepsen crashes its clients.

The child (``python -m pytest_kreplica.workloads.member_process``) runs a ``GroupReader``
whose writer prints each history row as one JSON line on stdout; the parent copies the lines
into the run's writer. A line cut short by a kill was never a row and is dropped. Each start
is a new incarnation with a process number of its own (1, 101, 201, ...): a restarted member
is a new reader that resumes at the group's committed positions, not the old one rewinding.
The child dies with the parent (parent-death signal, through the launcher thread).

``state`` is the process's own, read from the kernel (psutil), never a flag set by the
signal's sender: ``pause`` and ``resume`` return once the kernel shows the process stopped
(or running again), so a SIGSTOP that did not act is a ``ClusterError``, not a pause.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cluster.base import NodeState
from ..cluster.launcher import Launcher
from ..errors import ClusterError
from ..history import ISOLATION_LEVELS
from .lines import LineWriter
from .procstate import await_state, node_state, process_status
from .txn_group import RC, GroupReader

INCARNATION_STEP = 100
STOP_TIMEOUT_S = 15.0


class MemberProcess:
    """The parent's handle on one member: what the drain asks (``seen``, ``polled``) and the
    node-like process the nemesis fails (``kill`` / ``terminate`` / ``pause`` / ``resume`` /
    ``start``, ``pid``, ``state``)."""

    def __init__(self, topics: list[str], group: str, bootstrap: Callable[[], str],
                 writer: Any, process: int, isolation: str = RC):
        self.topics, self.group, self.bootstrap = topics, group, bootstrap
        self.isolation = isolation
        self.writer = writer
        self.process = process - INCARNATION_STEP
        self.seen: set[str] = set()
        self.polled = 0
        self.joins = 0  # rebalances that gave this member an assignment, every incarnation
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._pump: threading.Thread | None = None
        run_dir = getattr(writer, "run_dir", None)
        self._log_dir = Path(run_dir) / "clients" if run_dir is not None else None

    # -- the node-like interface -----------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def state(self) -> NodeState:
        return node_state(self.pid, self.alive())

    def status(self) -> str:
        """The kernel's state of the process, "gone" once it exited."""
        return process_status(self.pid)

    def start(self) -> MemberProcess:
        """A new incarnation (its own process number) joining the group."""
        if self.alive():
            return self
        self.process += INCARNATION_STEP
        cmd = [sys.executable, "-m", __name__, "--bootstrap", self.bootstrap(),
               "--group", self.group, "--topics", ",".join(self.topics),
               "--process", str(self.process), "--isolation", self.isolation]
        log = subprocess.DEVNULL
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            log = open(self._log_dir / f"member-{self.process}.log", "ab")  # noqa: SIM115
        try:
            self._proc = Launcher.get().popen(cmd, stdout=subprocess.PIPE, stderr=log)
        finally:
            if log is not subprocess.DEVNULL:
                log.close()
        self.writer.event("start", process=self.process,
                          detail=f"group member process (pid {self._proc.pid}) of {self.group}")
        self._pump = threading.Thread(target=self._copy_rows, args=(self._proc,), daemon=True,
                                      name=f"kreplica-member-{self.process}")
        self._pump.start()
        return self

    def kill(self) -> None:
        self._signal(signal.SIGKILL)
        self._reap(STOP_TIMEOUT_S)

    def terminate(self, timeout: float = STOP_TIMEOUT_S) -> None:
        self._signal(signal.SIGCONT)
        self._signal(signal.SIGTERM)
        if not self._reap(timeout):
            self.kill()

    def pause(self) -> None:
        """SIGSTOP, returning once the kernel shows the process stopped."""
        if not self.alive():
            raise ClusterError(f"cannot pause group member {self.process}: its process is "
                               f"not running (state {self.state.value})")
        self._signal(signal.SIGSTOP)
        self._await_state(NodeState.PAUSED, "SIGSTOP")

    def resume(self) -> None:
        """SIGCONT, returning once the kernel shows the process running again (a member
        that died meanwhile is left to ``start``)."""
        if not self.alive():
            return
        self._signal(signal.SIGCONT)
        self._await_state(NodeState.RUNNING, "SIGCONT")

    def _await_state(self, wanted: NodeState, sent: str) -> None:
        await_state(lambda: self.state, self.pid, wanted, sent, f"group member {self.process}")

    # -- the reader interface of the drain -------------------------------------------------
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        if self.alive():
            self.terminate(timeout)

    def _signal(self, sig: int) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(sig)

    def _reap(self, timeout: float) -> bool:
        """Wait for the process to exit and its last rows to be copied."""
        if self._proc is None:
            return True
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        if self._pump is not None:
            self._pump.join(timeout)
        return True

    def _copy_rows(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                row = json.loads(line)
            except ValueError:  # cut short by a kill: never a row
                continue
            kind, args, kwargs = row["k"], row["a"], row["kw"]
            if kind == "poll":
                self.writer.poll(*args, **kwargs)
                with self.lock:
                    self.seen.add(args[5])
                    self.polled += 1
            elif kind == "event":
                self.writer.event(*args, **kwargs)
                if args[0] == "rebalance" and kwargs.get("assignment"):
                    with self.lock:
                        self.joins += 1
                if args[0] == "client-crash":
                    self.errors.append(str(kwargs.get("detail")))
        proc.stdout.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topics", required=True)
    parser.add_argument("--process", type=int, required=True)
    parser.add_argument("--isolation", choices=ISOLATION_LEVELS, default=RC)
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    reader = GroupReader(args.topics.split(","), args.group, lambda: args.bootstrap,
                         LineWriter(), args.process, args.isolation).start()
    while reader.alive() and not stop.wait(0.5):
        pass
    reader.stop(STOP_TIMEOUT_S - 5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
