"""How the nemesis measures what a strike did to leadership: the time until metadata names a
partition leader outside the victim (test case C.2), whether that leader was in the ISR, and
the time until the KRaft quorum names another controller (C.5).

A mixin of :class:`~.nemesis.Nemesis` (it reads the nemesis' ``cluster``, ``writer``,
``election_timeout``, ``progress`` and ``_all_down`` / ``_logs_hint``), apart so the fault
runner stays one screenful of steps.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from ..errors import ClusterError
from ..waits import wait_for, wait_until
from .plan import ALL_DOWN, NO_OTHER_REPLICA, FaultRecord, FaultSpec
from .registry import FAILURES

if TYPE_CHECKING:
    from ..cluster import PartitionState


def now_ns() -> int:
    """The clock of fault records and events (monotonic, ns)."""
    return time.monotonic_ns()


class Elections:
    """The leadership measurements of one fault, written into its :class:`FaultRecord`."""

    def _election_timeout(self, spec: FaultSpec, rec: FaultRecord) -> float | None:
        """How long to wait for a new leader: the election bound, or, for a failure that
        may keep leadership (a pause), only until its restore."""
        if FAILURES[spec.failure].moves_leadership:
            return self.election_timeout
        return max(spec.downtime_s - (now_ns() - rec.strike_ns) / 1e9, 0.1)

    def _measure_election(self, spec: FaultSpec, rec: FaultRecord, replicas: tuple) -> None:
        """Time from the strike to metadata naming a leader other than the victim. A paused
        leader is only replaced once its broker session expires, so the wait ends with the
        pause: a pause shorter than that keeps the leader and is recorded, not failed.
        ``replicas``: seen before the strike (a struck one-node cluster answers nothing)."""
        others = set(replicas) - {rec.node}
        if not others or self._all_down():
            rec.election_note = ALL_DOWN if others else NO_OTHER_REPLICA
            return
        may_keep = not FAILURES[spec.failure].moves_leadership
        timeout = min(self.election_timeout, self._election_timeout(spec, rec))
        try:
            state = self._wait_for_leader(rec.topic, rec.partition, {rec.node}, timeout,
                                          interval=0.1)
        except ClusterError:
            if may_keep:
                rec.election_note = (f"the leader kept its leadership through the "
                                     f"{spec.downtime_s:.1f} s pause")
                return
            raise
        seen_ns = now_ns()
        rec.new_leader = state.leader
        rec.election_s = round((seen_ns - rec.strike_ns) / 1e9, 3)
        rec.elected_from_isr = state.leader in rec.isr_before
        self.writer.event("elect", node=str(state.leader), role="leader", time_ns=seen_ns,
                          detail=(f"{rec.topic}-{rec.partition}: leader {rec.node} -> "
                                  f"{state.leader} after {rec.election_s:.2f} s (epoch "
                                  f"{state.leader_epoch}; isr before {rec.isr_before})"))
        self.progress(f"fault #{spec.index}: new leader {state.leader} after "
                      f"{rec.election_s:.2f} s")

    def _strike_measuring_election(self, spec: FaultSpec, rec: FaultRecord,
                                   replicas: tuple) -> None:
        """Strike the leader and measure its election. A strike that returns only once the
        victim exited (a controlled shutdown) hands leadership over while it runs, so the
        election is watched from the strike on, beside it: measured after the strike, it
        would be the whole shutdown (45-55 s at the plan's shape instead of the handover)."""
        if not FAILURES[spec.failure].hands_over_while_striking:
            self._strike(spec, rec)
            self._measure_election(spec, rec, replicas)
            return
        errors: list[BaseException] = []

        def watch() -> None:
            try:
                # from the strike's own time, which the strike sets just before its signal
                # (after its ISR re-read): set earlier, it would put a composition's second
                # part in effect before its signal (``overlap.second_held``)
                wait_until(lambda: rec.strike_ns is not None, self.election_timeout,
                           f"fault #{spec.index}'s strike to begin", lambda: "not begun",
                           poll=0.02)
                self._measure_election(spec, rec, replicas)
            except BaseException as exc:  # raised below, in the fault's own thread
                errors.append(exc)

        watcher = threading.Thread(target=watch, name=f"kreplica-election-{spec.index}",
                                   daemon=True)
        watcher.start()
        self._strike(spec, rec)  # a strike that raised leaves the watcher to its own bound
        watcher.join(self.election_timeout + 5.0)
        if watcher.is_alive():
            raise ClusterError(f"fault #{spec.index}: the election watch of {rec.topic}-"
                               f"{rec.partition} outlived its {self.election_timeout:.0f} s "
                               f"bound")
        if errors:
            raise errors[0]

    def _measure_controller_failover(self, spec: FaultSpec, rec: FaultRecord) -> None:
        """Time from the strike until the KRaft quorum names another leader (C.5). Bounded
        by the downtime for a pause: a short pause may keep the quorum leader."""
        if self._all_down():
            return
        timeout = self._election_timeout(spec, rec)
        seen: list[int | None] = [None]

        def other_controller() -> str | None:
            # each look bounded too: a controller cut one way leaves DescribeQuorum unanswered
            seen[0] = self.cluster.active_controller(timeout=max(min(timeout, 5.0), 0.5))
            if seen[0] is None or seen[0] == rec.node:
                return f"active controller {seen[0]}"
            return None

        try:
            wait_for(other_controller, timeout,
                     f"a KRaft quorum leader other than node {rec.node}",
                     hint=self._logs_hint(), poll=0.1)
        except ClusterError:
            if FAILURES[spec.failure].moves_leadership:
                raise
            return
        seen_ns = now_ns()
        rec.new_controller = seen[0]
        rec.controller_failover_s = round((seen_ns - rec.strike_ns) / 1e9, 3)
        self.writer.event("elect", node=str(seen[0]), role="controller", time_ns=seen_ns,
                          detail=(f"active controller {rec.node} -> {seen[0]} after "
                                  f"{rec.controller_failover_s:.2f} s"))

    def _wait_for_leader(self, topic: str, partition: int, not_in: set[int],
                         timeout: float | None = None, interval: float = 0.25
                         ) -> PartitionState:
        """Poll metadata until the partition has a leader outside ``not_in``. Our own wait
        (not ``Cluster.wait_for_leader``) so the election time has 0.1 s resolution."""
        timeout = self.election_timeout if timeout is None else timeout
        seen: list[PartitionState] = []

        def leader_outside() -> str | None:
            state = self.cluster.partition_state(topic, partition)
            seen.append(state)
            if state.leader is None or state.leader < 0 or state.leader in not_in:
                return str(state)
            return None

        wait_for(leader_outside, timeout,
                 f"a leader of {topic}-{partition} outside {sorted(not_in)}",
                 hint=self._logs_hint(), poll=interval)
        return seen[-1]
