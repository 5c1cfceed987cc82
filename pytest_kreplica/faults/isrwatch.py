"""Watch a partition's ISR and leader while a fault holds; record every change as an event.

A degraded link does not stop a node: what it does to replication shows in the ISR (the
followers of a leader nothing reaches fall out of it, and come back after the heal) and,
when the victim's controller links suffer, in its leadership (fenced, replaced, and made
leader again by the preferred-leader check, all within the hold). The nemesis starts a
watch at the strike and stops it once every replica is in sync again, so these are on the
run's timeline: kind ``isr`` (detail ``<topic>-<partition> isr [1, 2, 3] -> [1] (leader
1)``) and kind ``elect`` (role ``leader``), and a leader change the nemesis' own bounded
election wait missed still reaches the fault record (the loss evidence rests on it).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cluster import Cluster
    from ..history import RunWriter
    from .failure import Failure
    from .plan import FaultRecord

POLL_S = 0.25
READ_TIMEOUT_S = 2.0  # one metadata read; a slow answer is skipped, not waited for


class IsrWatch:
    """A daemon thread polling ``cluster.partition_state`` until ``stop()``; each ISR
    different from the last one seen becomes an event. ``changes`` keeps them for tests
    and the fault record."""

    def __init__(self, cluster: Cluster, writer: RunWriter, topic: str, partition: int,
                 node: int | None = None):
        self.cluster, self.writer = cluster, writer
        self.topic, self.partition, self.node = topic, partition, node
        self.changes: list[tuple[int, list[int]]] = []  # (monotonic ns, isr)
        self.leaders: list[tuple[int, int]] = []  # (monotonic ns, new leader)
        self._last: list[int] | None = None
        self._leader: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kreplica-isr-watch",
                                        daemon=True)

    def start(self, isr_before: list[int], leader_before: int | None = None) -> IsrWatch:
        self._last = sorted(isr_before)
        self._leader = leader_before
        self._thread.start()
        return self

    def stop(self) -> list[tuple[int, list[int]]]:
        """One last look, then stop; returns the changes seen."""
        self._stop.set()
        self._thread.join(READ_TIMEOUT_S + 5)
        self._look()
        return self.changes

    def finish(self, rec: FaultRecord) -> None:
        """Stop; a leader change of the watched partition the nemesis' bounded election wait
        missed (the victim fenced late in the hold, then leader again) goes into ``rec``."""
        self.stop()
        seen = self.first_leader_besides(rec.node) if rec.node == rec.leader_before else None
        if rec.new_leader is not None or seen is None or rec.strike_ns is None:
            return
        rec.new_leader = seen[1]
        rec.election_s = round((seen[0] - rec.strike_ns) / 1e9, 3)
        rec.elected_from_isr = seen[1] in rec.isr_before
        rec.election_note = "seen by the ISR watch after the election wait"

    def first_leader_besides(self, node: int) -> tuple[int, int] | None:
        """(time, leader) of the first leader other than ``node`` seen, if any."""
        return next(((ns, leader) for ns, leader in self.leaders if leader != node), None)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            self._look()

    def _look(self) -> None:
        with contextlib.suppress(Exception):  # the cluster is being hurt: skip a bad read
            state = self.cluster.partition_state(self.topic, self.partition,
                                                 timeout=READ_TIMEOUT_S)
            isr, now = sorted(state.isr), time.monotonic_ns()
            leader = state.leader if state.leader is not None and state.leader >= 0 else None
            if leader is not None and leader != self._leader:
                self.writer.event("elect", node=str(leader), role="leader", time_ns=now,
                                  detail=f"{self.topic}-{self.partition}: leader "
                                         f"{self._leader} -> {leader} (seen by the ISR watch; "
                                         f"isr {isr})")
                self.leaders.append((now, leader))
                self._leader = leader
            if isr and isr != self._last:
                self.writer.event("isr", node=None if self.node is None else str(self.node),
                                  time_ns=now,
                                  detail=f"{self.topic}-{self.partition} isr {self._last} -> "
                                         f"{isr} (leader {state.leader})")
                self.changes.append((now, isr))
                self._last = isr


def watch_fault(cluster: Cluster, writer: RunWriter, failure: Failure,
                rec: FaultRecord) -> IsrWatch | None:
    """A started watch of ``rec``'s partition when ``failure`` asks for one (``watch_isr``)."""
    if not failure.watch_isr or rec.topic is None or rec.partition is None:
        return None
    node = rec.node if isinstance(rec.node, int) else None
    return IsrWatch(cluster, writer, rec.topic, rec.partition, node).start(
        rec.isr_before, rec.leader_before)
