"""The nemesis: fails the partition leader, a follower or the active controller of a live
cluster, or a component beside it (MirrorMaker 2, target ``mirror-maker``), on a seeded
schedule, restores it, and records every step as run-directory events.

Each fault resolves its victim at the moment it strikes (the roles move while the cluster
heals), so the schedule is fixed by the seed while the node follows the cluster. Faults run
in sequence: strike, wait the downtime, restore, wait until every partition is healthy
again; only then the next one. When the victim led the partition the nemesis watched, the
time until metadata names a new leader outside the victim is measured (test case C.2) and
the new leader is checked against the ISR every broker showed just before the fault
(``isrviews``).

How a failure strikes and restores, and the event kinds it writes, come from its
``registry.FAILURES`` entry (``shared/HISTORY.md`` events table); the nemesis adds three
observations for the report's timeline: ``elect`` (a new leader outside the victim, with its
election time), ``recovered`` (every replica in sync; a component: its work moving again)
and ``fault-did-not-act`` (the strike raised or its victim read back unchanged: a harness
error, the victim restored all the same).

A component is anything with the node fault methods (``terminate`` / ``kill`` / ``pause`` /
``resume`` / ``start``) that is not a broker; it comes wrapped in a :class:`Component` that
says how its recovery is observed, so there is one fault runner, one record and one event
vocabulary for brokers and components alike.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ClusterError, InputError
from ..waits import wait_for, wait_until
from .elections import Elections, now_ns
from .failure import Failure
from .isrviews import isr_before
from .isrwatch import watch_fault
from .leadership import leaders, led_by, read_partitions
from .overlap import HOLD_BOUND_S, run_overlapping
from .plan import FaultPlan, FaultRecord, FaultSpec
from .registry import COMPONENT_TARGETS, FAILURES, TARGETS, WORKLOAD_TARGETS

if TYPE_CHECKING:
    from ..cluster import Cluster, PartitionState
    from ..history import RunWriter

PROGRESS_READ_S = 10.0  # how long a component's progress is retried before its restore
DID_NOT_ACT = "fault-did-not-act"  # the event of a strike that did not act (a harness error)
ELECTION_TIMEOUT_S, RECOVERY_TIMEOUT_S = 60.0, 120.0  # a small cluster's bounds


def _join(error: str | None, note: str) -> str:
    """A fault record's errors, in the order they happened."""
    return f"{error}; {note}" if error else note


def _verify_struck(failure: Failure, victim: str, state: Callable[[], str]) -> None:
    """A strike that did not leave the victim in ``failure.struck_state`` did not act: the
    case would test nothing, so the fault is a harness error naming expected and seen."""
    if failure.struck_state is None:
        return
    seen = state()
    if seen != failure.struck_state:
        raise ClusterError(f"{failure.name} did not act on {victim}: expected its state "
                           f"{failure.struck_state} after the strike, seen {seen}")


@dataclass
class Component:
    """A process beside the cluster that the nemesis fails like a node.

    ``process`` has ``terminate`` / ``kill`` / ``pause`` / ``resume`` / ``start``, ``pid``
    and ``state`` (e.g. ``mirror.MirrorMaker``, whatever its backend). Its recovery is
    observed, never slept: ``progress()`` counts the work it has done (records mirrored)
    and ``wait_progress(baseline, timeout)`` returns once that moved past ``baseline`` (or
    nothing is left to do), raising when it did not in time."""

    name: str  # the ``node`` of its events and records
    label: str  # for people: "MirrorMaker 2"
    process: Any
    progress: Callable[[], int]
    wait_progress: Callable[[int, float], Any]
    recovery_timeout: float | None = None  # its restart's bound, if longer than a node's


class Nemesis(Elections):
    """Runs a :class:`FaultPlan` against a live ``Cluster``, writing events to ``writer``.

    ``partitions`` are the case's topic-partitions: each fault picks one of them (by the
    seeded ``pick``) to find its leader or follower, and recovery waits until all of the
    case's topics have a full ISR again.
    """

    def __init__(self, cluster: Cluster, writer: RunWriter, plan: FaultPlan,
                 partitions: list[tuple[str, int]], *,
                 election_timeout: float = ELECTION_TIMEOUT_S,
                 recovery_timeout: float = RECOVERY_TIMEOUT_S,
                 progress: Callable[[str], None] | None = None,
                 components: dict[str, Component] | None = None,
                 roles: dict[str, Callable[[], tuple[str, int]]] | None = None):
        if not partitions:
            raise InputError("nemesis: the case has no topic-partitions to aim at")
        self.components, self.roles = dict(components or {}), dict(roles or {})
        if plan.target in WORKLOAD_TARGETS and plan.target not in self.roles:
            raise InputError(f"nemesis: target {plan.target!r} needs a workload that names "
                             f"it (workload txn or txn_pipeline)")
        if plan.target in COMPONENT_TARGETS and plan.target not in self.components:
            raise InputError(f"nemesis: target {plan.target!r} needs that component (a "
                             f"two-cluster case; a txn workload); allowed here: "
                             f"{', '.join(TARGETS)}")
        self.cluster = cluster
        self.writer = writer
        self.plan = plan
        self.partitions = sorted(partitions)
        self.topics = sorted({t for t, _ in partitions})
        self.election_timeout = election_timeout
        self.recovery_timeout = recovery_timeout
        self.progress = progress or (lambda _msg: None)
        self.records: list[FaultRecord] = []
        self.next_fault: str | None = None  # planned, not struck yet
        self.current_fault: str | None = None  # struck, not recovered yet
        # nodes struck and not yet recovered: a composition's second part strikes another
        self.struck_nodes: set[int] = set()
        # of those, the ones not restored yet: a part's recovery (every replica in sync)
        # waits for the other part's restore first
        self.unrestored: set[int] = set()
        # a fault's index -> what must be true before its restore (a composition's first
        # part holds until its second struck)
        self.hold_until: dict[int, Callable[[], bool]] = {}

    # -- running ------------------------------------------------------------------------
    def run(self, stop: threading.Event | None = None) -> list[FaultRecord]:
        """Run the plan. ``stop`` ends a duration-bounded (soak) plan early; a count-bounded
        plan always runs all its faults so a case cannot pass with fewer than it asked for.
        Raises ``ClusterError`` when a fault could not be applied or the cluster did not
        recover; the record of that fault carries the reason too."""
        started = time.monotonic()
        bounded_by_time = self.plan.duration_s is not None
        for step in self.plan.steps():
            spec = step[0]
            if bounded_by_time and (time.monotonic() - started >= self.plan.duration_s
                                    or (stop is not None and stop.is_set())):
                break
            self.next_fault = spec.describe()
            self.progress(f"next fault {spec.describe()}")
            # the seeded quiet time before the strike (a soak cut short strikes no more)
            if bounded_by_time and stop is not None:
                if stop.wait(spec.delay_s):
                    break
            else:
                time.sleep(spec.delay_s)
            self.next_fault = None
            self.current_fault = " + ".join(s.describe() for s in step)
            done = run_overlapping(self, *step) if len(step) > 1 else [self.run_fault(spec)]
            self.current_fault = None
            for s, record in zip(step, done, strict=True):
                if record.error:
                    raise ClusterError(f"nemesis fault {s.describe()}: {record.error}")
        self.next_fault = None
        return self.records

    def run_fault(self, spec: FaultSpec) -> FaultRecord:
        if spec.target in self.components:
            return self._run_component_fault(spec, self.components[spec.target])
        topic, partition = (self.roles[spec.target]() if spec.target in self.roles else
                            self.partitions[int(spec.pick * len(self.partitions))])
        rec = FaultRecord(spec.index, spec.failure, spec.target, topic, partition)
        self.records.append(rec)
        struck, watch = False, None
        rec.lag_bound_ms = self._lag_bound()
        try:
            state = self._wait_for_leader(topic, partition, set(self.struck_nodes))
            rec.leader_before, rec.before_ns = state.leader, now_ns()
            rec.isr_before, _ = isr_before(self.cluster, topic, partition)
            rec.controller_before = (self.cluster.active_controller()
                                     if getattr(self.cluster, "finds_controller", True) else None)
            rec.node = self._choose_victim(spec, state)
            self.struck_nodes.add(rec.node)
            self.unrestored.add(rec.node)
            rec.partitions_before = read_partitions(self.cluster, self.partitions)
            rec.led_before = led_by(rec.partitions_before, rec.node)
            struck = True
            watch = watch_fault(self.cluster, self.writer, FAILURES[spec.failure], rec)
            if rec.node == rec.leader_before:
                self._strike_measuring_election(spec, rec, state.replicas)
            else:
                self._strike(spec, rec)
                rec.election_note = "the victim did not lead the partition"
            if rec.node == rec.controller_before and \
                    not FAILURES[spec.failure].keeps_controller:
                self._measure_controller_failover(spec, rec)
            self._hold(spec, rec)
        except Exception as exc:  # recorded, restored below, raised by run()
            rec.error = f"{type(exc).__name__}: {exc}"
        finally:
            if struck:
                self._restore(spec, rec)
                if rec.recovered_ns is not None:  # every replica in sync: leaders settled
                    rec.leaders_after = leaders(read_partitions(self.cluster, self.partitions))
                    rec.after_ns = now_ns()
            if watch is not None:
                watch.finish(rec)
            self.struck_nodes.discard(rec.node)
            self.unrestored.discard(rec.node)
        return rec

    def _lag_bound(self) -> int | None:
        """The cluster's follower lag bound, as its description in run.json says it."""
        try:
            return self.cluster.follower_lag_bound_ms()
        except Exception:  # a cluster that cannot say: no window, nothing excused by it
            return None

    def _hold(self, spec: FaultSpec, rec: FaultRecord) -> None:
        """Keep the victim down until ``downtime_s`` after the strike (a planned hold, not
        a wait for a state), and, for a composition's first part, until its second struck
        (bounded)."""
        remaining = spec.downtime_s - (now_ns() - (rec.strike_ns or now_ns())) / 1e9
        if remaining > 0:
            time.sleep(remaining)
        if spec.index in self.hold_until:
            wait_until(self.hold_until[spec.index], HOLD_BOUND_S,
                       f"the fault overlapping #{spec.index} struck while it holds",
                       lambda: "not struck yet")

    def _run_component_fault(self, spec: FaultSpec, comp: Component) -> FaultRecord:
        """Strike the component, hold for the downtime, restore it, wait for its work to
        move again; the same record and events as a node's fault."""
        rec = FaultRecord(spec.index, spec.failure, spec.target, None, None, node=comp.name)
        self.records.append(rec)
        failure = FAILURES[spec.failure]
        struck = False
        try:
            if failure.strike_component is None:
                able = [n for n, f in FAILURES.items() if f.strike_component is not None]
                raise InputError(f"nemesis: failure {spec.failure!r} cannot hit "
                                 f"{comp.label}; allowed: {', '.join(able)}")
            if hasattr(comp.process, "await_ready"):  # a client still starting up
                comp.process.await_ready()
            rec.strike_ns = now_ns()
            self.writer.event(failure.event, node=comp.name, role=spec.target,
                              time_ns=rec.strike_ns,
                              detail=f"fault #{spec.index}: {spec.failure} failure of "
                                     f"{comp.label} (pid {comp.process.pid})")
            self.progress(f"fault #{spec.index}: {failure.event} {comp.label}")
            struck = True
            try:
                failure.strike_component(comp.process)
                rec.state_after_strike = comp.process.state.value
                _verify_struck(failure, comp.label, lambda: comp.process.state.value)
            except Exception as exc:
                self._did_not_act(spec, comp.name, exc)
                raise
            self._hold(spec, rec)
        except Exception as exc:  # recorded, restored below, raised by run()
            rec.error = f"{type(exc).__name__}: {exc}"
        finally:
            if struck:
                self._restore_component(spec, rec, comp, failure)
        return rec

    def _restore_component(self, spec: FaultSpec, rec: FaultRecord, comp: Component,
                           failure: Failure) -> None:
        # The baseline is read from the target cluster; a client error there must not keep
        # the component down, so it is retried briefly and, failing that, only noted.
        def read() -> str | None:
            rec.progress_at_restore = comp.progress()
            return None

        try:
            wait_for(read, PROGRESS_READ_S, f"the progress of {comp.label} readable",
                     poll=0.5)
        except ClusterError as exc:
            rec.error = _join(rec.error, f"progress of {comp.label} unread before the "
                                         f"restore: {exc}")
        try:
            rec.restore_ns = now_ns()
            self.writer.event(failure.restore_event, node=comp.name, role=spec.target,
                              time_ns=rec.restore_ns,
                              detail=f"fault #{spec.index}: restore {comp.label}")
            assert failure.restore_component is not None  # paired with strike_component
            failure.restore_component(comp.process)
            comp.wait_progress(rec.progress_at_restore or 0,
                               comp.recovery_timeout or self.recovery_timeout)
            rec.recovered_ns = now_ns()
            self.writer.event("recovered", node=comp.name, role=spec.target,
                              time_ns=rec.recovered_ns,
                              detail=f"fault #{spec.index}: {comp.label} working again "
                                     f"{rec.recovery_s:.2f} s after the restore")
            self.progress(f"fault #{spec.index}: recovered in {rec.recovery_s:.1f} s")
        except Exception as exc:
            rec.error = _join(rec.error, f"restore of {comp.label} failed: "
                                         f"{type(exc).__name__}: {exc}")

    def _choose_victim(self, spec: FaultSpec, state: PartitionState) -> int:
        if spec.target == "leader" or spec.target in self.roles:  # roles lead their partition
            return state.leader
        if spec.target == "controller":
            return self._live_controller()
        busy = {state.leader, *self.struck_nodes}
        followers = sorted(set(state.isr) - busy) or sorted(set(state.replicas) - busy)
        if not followers:
            raise InputError(f"nemesis: {state.topic}-{state.partition} has no follower "
                             f"(replicas {list(state.replicas)}); a follower target needs "
                             f"replication_factor >= 2")
        return followers[int(spec.pick * 7919) % len(followers)]

    def _live_controller(self) -> int:
        """The active controller, once it is not a node another fault holds (bounded)."""
        seen: list[int | None] = [None]

        def other() -> str | None:
            seen[0] = self.cluster.active_controller()
            return None if seen[0] is not None and seen[0] not in self.struck_nodes else \
                f"active controller {seen[0]}, struck {sorted(self.struck_nodes)}"

        wait_for(other, self.election_timeout, "an active controller no fault holds",
                 hint=self._logs_hint(), poll=0.25)
        assert seen[0] is not None
        return seen[0]

    def _strike(self, spec: FaultSpec, rec: FaultRecord) -> None:
        failure = FAILURES[spec.failure]
        disagreed = None
        if rec.topic is not None:  # a follower back in the ISR since the first read counts
            with contextlib.suppress(Exception):  # the first read stands
                again, disagreed = isr_before(self.cluster, rec.topic, rec.partition, 0)
                rec.isr_before = sorted(set(rec.isr_before) | set(again))
        rec.strike_ns, measured = now_ns(), None
        self.progress(f"fault #{spec.index}: {failure.event} node {rec.node} ({spec.target})")
        try:
            try:  # the event follows the strike (at its time) to carry what it measured
                measured = failure.strike(self.cluster, rec.node)
                rec.struck(now_ns(), measured)
            finally:
                self.writer.event(failure.event, node=str(rec.node), role=spec.target,
                                  time_ns=rec.strike_ns,
                                  detail=(f"fault #{spec.index}: {spec.failure} failure of "
                                          f"the {spec.target} (node {rec.node}); {rec.topic}-"
                                          f"{rec.partition} leader {rec.leader_before} isr "
                                          f"{rec.isr_before}"
                                          + (f"; {disagreed}" if disagreed else "")
                                          + (f"; measured: {measured}" if measured else "")))
            with contextlib.suppress(Exception):  # read again below where it is the proof
                rec.state_after_strike = self.cluster.node_state(rec.node).value
            _verify_struck(failure, f"node {rec.node}",
                           lambda: self.cluster.node_state(rec.node).value)
        except Exception as exc:
            self._did_not_act(spec, str(rec.node), exc)
            raise

    def _did_not_act(self, spec: FaultSpec, node: str, exc: Exception) -> None:
        """The timeline shows the harness finding beside the strike's own event: a strike
        that raised, or whose victim read back unchanged, did not act."""
        with contextlib.suppress(Exception):  # the record's error carries it all the same
            self.writer.event(DID_NOT_ACT, node=node, role=spec.target, time_ns=now_ns(),
                              detail=f"fault #{spec.index}: {type(exc).__name__}: {exc}")

    def _restore(self, spec: FaultSpec, rec: FaultRecord) -> None:
        failure = FAILURES[spec.failure]
        try:
            rec.restore_ns = now_ns()
            self.writer.event(failure.restore_event, node=str(rec.node), role=spec.target,
                              time_ns=rec.restore_ns,
                              detail=f"fault #{spec.index}: restore node {rec.node}")
            healed = failure.restore(self.cluster, rec.node, self.recovery_timeout)
            self.unrestored.discard(rec.node)
            wait_until(lambda: not self.unrestored, self.recovery_timeout,
                       "the restore of every node another fault holds",
                       lambda: f"nodes {sorted(self.unrestored)} not restored yet")
            self.cluster.wait_healthy(self.topics, timeout=self.recovery_timeout)
            rec.recovered_ns = now_ns()
            self.writer.event("recovered", node=str(rec.node), role=spec.target,
                              time_ns=rec.recovered_ns,
                              detail=(f"fault #{spec.index}: every replica in sync "
                                      f"{rec.recovery_s:.2f} s after the restore"
                                      + (f"; healed: {healed}" if healed else "")))
            self.progress(f"fault #{spec.index}: recovered in {rec.recovery_s:.1f} s")
        except Exception as exc:
            rec.error = _join(rec.error, f"restore of node {rec.node} failed: "
                                         f"{type(exc).__name__}: {exc}")

    def _all_down(self) -> bool:
        """Every node stopped (a power loss of all): nothing can lead until the restore, and
        a metadata request would only wait out its own timeout."""
        nodes = getattr(self.cluster, "nodes", None) or []  # unknown: not all down
        return bool(nodes) and all(self.cluster.node_state(n.node_id).value != "running"
                                   for n in nodes)

    def _logs_hint(self) -> str:
        """Where to look when a wait times out (empty when the cluster cannot say)."""
        try:
            return "broker logs: " + ", ".join(str(p) for p in self.cluster.log_files().values())
        except Exception:  # a hint only
            return ""
