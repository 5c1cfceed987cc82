"""A client process the nemesis may fail (targets ``producer`` / ``consumer``), restarted as
a new incarnation after each kill.

:class:`Restartable` is the node-like handle the nemesis strikes (``kill`` / ``terminate`` /
``pause`` / ``resume`` / ``start``, ``pid``, ``state``) around the client's current
``lines.ClientProcess``: ``start`` asks the client's ``spawn`` for incarnation 0, 1, 2, ...
and starts it. Each incarnation is a history process of its own (``incarnation_process``:
0, 100, 200, ... for the producer), so a restarted producer's sends and a restarted
consumer's polls are never judged as one process's sequence, and a producer incarnation
writes ids of its own (``incarnation_id``: ``N``, then ``1.N``, ``2.N``, ...), since a
restarted client counts from 0 again.

``state`` is the kernel's (psutil), never a flag of the signal's sender: a strike returns
once the kernel shows the process gone or stopped, so a signal that did not act is a
``ClusterError`` (the nemesis' fault-did-not-act), not a fault.

``run_producer`` supervises the producer's incarnations on the workload's thread: an
incarnation that a strike ended is written off by the client (its sends in flight become
``info``), and the workload waits, bounded, for the nemesis' restore to start the next.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..cluster.base import NodeState
from ..errors import ClusterError
from ..faults import Component
from ..waits import wait_for
from .lines import ClientProcess, supervise
from .procstate import await_state, node_state
from .reader import DrainingReader

__all__ = ["INCARNATION_STEP", "RESTART_WAIT_S", "Restartable", "RestartableReader",
           "incarnation_id", "incarnation_process", "run_producer"]

INCARNATION_STEP = 100  # history process numbers of one client: 0, 100, 200, ...
STOP_TIMEOUT_S = 15.0
# how long a struck producer's workload waits for the nemesis to start its next incarnation
# (the fault's downtime, then the restore): beyond it the workload ends with what it sent
RESTART_WAIT_S = 300.0
READY_WAIT_S = 60.0  # a client starting up (a JVM on a loaded machine) before a strike


def incarnation_process(base: int, incarnation: int) -> int:
    """The history process number of ``incarnation`` (0, 1, ...) of the client ``base``."""
    return base + incarnation * INCARNATION_STEP


def incarnation_id(incarnation: int, number: int) -> str:
    """The id of message ``number`` of a producer ``incarnation``: ``N`` for the first,
    ``K.N`` after (VerifiableProducer's ``--value-prefix K``): unique across restarts."""
    return str(number) if incarnation == 0 else f"{incarnation}.{number}"


class Restartable:
    """One client role (``producer`` / ``consumer``) across its incarnations."""

    def __init__(self, role: str, label: str,
                 spawn: Callable[[int], ClientProcess] | None = None):
        self.role, self.label, self.spawn = role, label, spawn
        self.incarnation = -1
        self.child: ClientProcess | None = None
        self.struck_ones: set[int] = set()  # the incarnations a fault ended
        self.closed = False  # the workload is done with it: no more incarnations
        self.earlier_lines = 0  # lines of the incarnations before the current one
        # whether the current incarnation is at work (a producer answered a send): a strike
        # waits for it (``READY_WAIT_S``), so it hits a client at work, not one starting up
        self.ready: Callable[[], bool] = lambda: self.child is not None and self.child.lines > 0
        self._lock = threading.RLock()

    # -- what the nemesis reads --------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    @property
    def state(self) -> NodeState:
        return node_state(self.pid, self.alive())

    def lines(self) -> int:
        """Lines the client printed, over every incarnation (its progress)."""
        with self._lock:
            return self.earlier_lines + (self.child.lines if self.child is not None else 0)

    def alive(self) -> bool:
        return self.child is not None and self.child.alive()

    @property
    def struck(self) -> bool:
        """Whether the current incarnation was ended (or is being ended) by a fault."""
        return self.incarnation in self.struck_ones

    def down(self) -> bool:
        """Ended by a fault and not started again yet (the client is still in the run)."""
        return self.struck and not self.closed and not self.alive()

    # -- what the nemesis does ---------------------------------------------------------
    def start(self) -> Restartable:
        """A new incarnation (nothing once the workload closed it, or while one runs)."""
        with self._lock:
            if self.closed or self.alive():
                return self
            if self.spawn is None:
                raise ClusterError(f"the {self.label} has not been started by its workload")
            child = self.spawn(self.incarnation + 1).start()
            if self.child is not None:
                self.earlier_lines += self.child.lines
            # both at once: the workload reads them together (``current``)
            self.child, self.incarnation = child, self.incarnation + 1
        return self

    def current(self) -> tuple[ClientProcess | None, int]:
        """The running incarnation's process and number, read together."""
        with self._lock:
            return self.child, self.incarnation

    def kill(self) -> None:
        """SIGKILL, returning once the kernel shows the process gone."""
        self._struck_child("SIGKILL").kill()
        self._await(NodeState.STOPPED, "SIGKILL")

    def terminate(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (SIGKILL after ``timeout``), returning once the process is gone."""
        self._struck_child("SIGTERM").terminate(timeout)
        self._await(NodeState.STOPPED, "SIGTERM")

    def pause(self) -> None:
        """SIGSTOP, returning once the kernel shows the process stopped."""
        self._running_child("SIGSTOP").pause()
        self._await(NodeState.PAUSED, "SIGSTOP")

    def resume(self) -> None:
        """SIGCONT, returning once the kernel shows it running (one that died meanwhile is
        left to ``start``)."""
        if self.alive():
            self.child.resume()
            self._await(NodeState.RUNNING, "SIGCONT")

    def await_ready(self, timeout: float = READY_WAIT_S) -> None:
        """Return once the running incarnation is at work (``ready``), or is gone (the
        strike then finds nothing to act on); the nemesis calls it before the strike, so a
        fault hits a client at work, not one starting up (a JVM on a loaded machine)."""
        wait_for(lambda: None if not self.alive() or self.ready() else
                 f"incarnation {self.incarnation} starting up", timeout,
                 f"the {self.label} at work before the strike", poll=0.1)

    def _running_child(self, sent: str) -> ClientProcess:
        if not self.alive() or self.closed or self.child is None:
            raise ClusterError(f"cannot send {sent} to the {self.label}: its process is not "
                               f"running (state {self.state.value})")
        return self.child

    def _struck_child(self, sent: str) -> ClientProcess:
        with self._lock:
            child = self._running_child(sent)
            # before the signal: the workload sees the exit as the fault's
            self.struck_ones.add(self.incarnation)
        return child

    def _await(self, wanted: NodeState, sent: str) -> None:
        await_state(lambda: self.state, self.pid, wanted, sent, f"the {self.label}")

    # -- what the workload does --------------------------------------------------------
    def close(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """No more incarnations; SIGTERM the running one (SIGKILL after ``timeout``)."""
        with self._lock:
            self.closed = True
            child = self.child
        return child.terminate(timeout) if child is not None else None

    def wait_restart(self, after: int, timeout: float, give_up: Callable[[], bool]) -> bool:
        """Wait until an incarnation later than ``after`` runs (True), or ``give_up()``
        (False), at most ``timeout`` s (``ClusterError``)."""
        found: list[bool] = []

        def check() -> str | None:
            if self.current()[1] > after:
                found.append(True)
                return None
            if give_up():
                found.append(False)
                return None
            return f"incarnation {self.incarnation} ended by a fault, not started again"

        wait_for(check, timeout, f"the nemesis to start the {self.label} again", poll=0.1)
        return found[-1]

    def component(self) -> Component:
        """The nemesis' view: recovered once the client printed again after the restore
        and is at work (``ready``: a producer answered a send), or the workload is done
        with it."""
        def working(baseline: int, timeout: float) -> None:
            wait_for(lambda: None if self.closed or (self.lines() > baseline and self.ready())
                     else f"{self.lines()} lines ({baseline} at the restore), incarnation "
                          f"{self.incarnation} {'at work' if self.ready() else 'starting up'}",
                     timeout, f"the {self.label} at work again after the restore")

        return Component(self.role, self.label, self, self.lines, working)


def run_producer(handle: Restartable, sent: Callable[[], int], messages: int,
                 stop: threading.Event | None, keep_going: Callable[[], bool] | None,
                 idle_s: float, close_s: float,
                 ended: Callable[[ClientProcess, int, bool], None]) -> None:
    """Start the producer and supervise its incarnations until the workload should stop
    (``lines.supervise``); ``ended(child, incarnation, struck)`` writes off each one that
    exited. A struck incarnation waits (``RESTART_WAIT_S``) for the nemesis' restore."""
    def finished() -> bool:
        return (stop is not None and stop.is_set()) or (
            keep_going is not None and sent() >= messages and not keep_going())

    handle.start()
    try:
        while True:
            (child, incarnation), asked = handle.current(), False
            assert child is not None
            try:
                asked = supervise(child, sent, messages, stop, keep_going, idle_s, close_s)
            finally:
                struck = incarnation in handle.struck_ones and not asked
                if not struck:  # the workload's own end: no incarnation after this one
                    handle.close(close_s)
                ended(child, incarnation, struck)
            if not struck or not handle.wait_restart(incarnation, RESTART_WAIT_S, finished):
                return
    finally:
        handle.close(close_s)


class RestartableReader(DrainingReader):
    """A reader whose client runs in a process of its own, a new one (a new incarnation)
    each time the nemesis restores a struck one (target ``consumer``): a subclass says how
    an incarnation starts (``spawn_incarnation``); this class starts, judges and stops them
    through one ``Restartable``."""

    def __init__(self, writer: Any, process: int, label: str, client: str):
        super().__init__(writer, process)
        self.client_name = client  # the stop event's detail: "<client> stopped"
        self.handle = Restartable("consumer", label, self.spawn_incarnation)

    def spawn_incarnation(self, incarnation: int) -> ClientProcess:
        raise NotImplementedError

    def components(self) -> dict[str, Component]:
        return {self.handle.role: self.handle.component()}

    def start(self) -> RestartableReader:
        self.handle.start()
        return self

    def alive(self) -> bool:
        return self.handle.alive() or self.handle.down()

    def stop(self, timeout: float = 30.0) -> None:
        running = self.handle.alive()
        self.handle.close(min(timeout, 15.0))  # no incarnation after this one
        if running:
            self.writer.event("stop", process=incarnation_process(
                self.process, self.handle.incarnation), detail=f"{self.client_name} stopped")
