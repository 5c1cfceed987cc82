"""The nemesis: fails the partition leader, a follower or the active controller of a live
cluster, or a component beside it (MirrorMaker 2, target ``mirror-maker``), on a seeded
schedule, restores it, and records every step as run-directory events.

Each fault resolves its victim at the moment it strikes (the roles move while the cluster
heals), so the schedule is fixed by the seed while the node follows the cluster. Faults run
in sequence: strike, wait the downtime, restore, wait until every partition is healthy
again; only then the next one. When the victim led the partition the nemesis watched, the
time until metadata names a new leader outside the victim is measured (test case C.2) and
the new leader is checked against the ISR seen just before the fault.

Event kinds written (``shared/HISTORY.md`` events table): ``terminate`` / ``kill`` /
``pause`` / ``partition`` at the strike, ``resume`` / ``start`` / ``heal`` at the restore
(partition: docker backend only), and two observations the
report draws on its timeline: ``elect`` (a new leader outside the victim, with the election
time) and ``recovered`` (every replica back in sync; for a component: its work moving
again).

A component is anything with the node fault methods (``terminate`` / ``kill`` / ``pause`` /
``resume`` / ``start``) that is not a broker; it comes wrapped in a :class:`Component` that
says how its recovery is observed, so there is one fault runner, one record and one event
vocabulary for brokers and components alike.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    retry_if_result,
    stop_after_delay,
    wait_fixed,
)

from ..cluster.base import LINK_FAILURES
from ..errors import ClusterError, InputError
from . import links
from .isrwatch import IsrWatch

FAILURES = ("clean", "hard", "soft")  # the B.2 failure types the nemesis applies
TARGETS = ("leader", "follower", "controller")
# targets that are components beside the cluster (``Component``), never drawn by ``random``
COMPONENT_TARGETS = ("mirror-maker",)
RANDOM = "random"  # failure or target drawn per fault from the seed (C.8 soak runs)
PARTITION = "partition"  # cut off from its peers (docker backend only: never drawn at random)

# strike method of the Cluster API and the event kind written for each failure type
STRIKE = {"clean": ("terminate", "terminate"), "hard": ("kill", "kill"),
          "soft": ("pause", "pause"), PARTITION: ("partition", "partition"),
          **{f: (f, f) for f in LINK_FAILURES}}
RESTORE_KIND = {"clean": "start", "hard": "start", "soft": "resume", PARTITION: "heal",
                **{f: "heal" for f in LINK_FAILURES}}
KEEPS_LEADER = ("soft", *LINK_FAILURES)  # the victim runs on and may keep leading

# An election slower than this fails the C.2 check: the tuned cluster settings
# (KAFKA-NOTES "Faults") fail a leader over in about 3 s, the defaults in about 9 s.
ELECTION_BOUND_S = 20.0
PROGRESS_READ_S = 10.0  # how long a component's progress is retried before its restore
NO_OTHER_REPLICA = "no other replica can lead (replication factor 1)"
FAULT_RECORD_PHASES = ("fault_s", "recovery_s", "election_s")  # the timings a record carries


@dataclass(frozen=True)
class FaultSpec:
    """One planned fault: everything the seed decides before the cluster is looked at."""

    index: int  # 1-based position in the sequence
    failure: str  # clean | hard | soft
    target: str  # leader | follower | controller
    delay_s: float  # quiet time before the strike (after the previous fault recovered)
    downtime_s: float  # from the strike to the restore
    pick: float  # in [0, 1): which topic-partition, and which follower, to use

    def describe(self) -> str:
        return (f"#{self.index} {self.failure} {self.target} after {self.delay_s:.1f} s, "
                f"down {self.downtime_s:.1f} s")


@dataclass
class FaultRecord:
    """What one fault did, for verdict.json, the report and the test's assertions. For a
    component, ``node`` is its name and ``topic`` / ``partition`` are None."""

    index: int
    failure: str
    target: str
    topic: str | None
    partition: int | None
    node: int | str | None = None
    leader_before: int | None = None
    isr_before: list[int] = field(default_factory=list)
    led_before: list[str] | None = None  # "topic-partition"s of the case the victim led
    strike_ns: int | None = None
    restore_ns: int | None = None
    recovered_ns: int | None = None
    new_leader: int | None = None
    election_s: float | None = None
    elected_from_isr: bool | None = None
    election_note: str | None = None
    controller_before: int | None = None
    new_controller: int | None = None
    controller_failover_s: float | None = None  # when the victim was the active controller
    state_after_strike: str | None = None  # the victim's state right after the strike
    progress_at_restore: int | None = None  # a component's work done when it was restored
    error: str | None = None

    @property
    def fault_s(self) -> float | None:
        """Strike to restore (the node's real downtime)."""
        if self.strike_ns is None or self.restore_ns is None:
            return None
        return (self.restore_ns - self.strike_ns) / 1e9

    @property
    def recovery_s(self) -> float | None:
        """Restore to every replica back in sync."""
        if self.restore_ns is None or self.recovered_ns is None:
            return None
        return (self.recovered_ns - self.restore_ns) / 1e9

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fault_s"] = self.fault_s
        d["recovery_s"] = self.recovery_s
        return d


@dataclass(frozen=True)
class FaultPlan:
    """A seeded fault schedule. ``failures`` faults in sequence, or, with ``duration_s``,
    faults until that much time has passed (soak runs)."""

    seed: int
    failure: str
    target: str
    failures: int = 1
    downtime_s: float = 5.0
    delay_s: tuple[float, float] = (1.0, 3.0)
    duration_s: float | None = None
    failure_choices: tuple[str, ...] = FAILURES
    target_choices: tuple[str, ...] = TARGETS

    def __post_init__(self) -> None:
        for key, value, allowed in (("failure", self.failure, (*FAILURES, PARTITION,
                                                                *LINK_FAILURES)),
                                    ("target", self.target, TARGETS + COMPONENT_TARGETS)):
            if value not in (*allowed, RANDOM):
                raise InputError(f"nemesis: {key} {value!r} is not allowed; allowed: "
                                 f"{', '.join((*allowed, RANDOM))}")
        if self.failures < 0 or self.downtime_s < 0:
            raise InputError("nemesis: failures and downtime must not be negative")

    def faults(self) -> Iterator[FaultSpec]:
        """The schedule; the same seed always yields the same specs."""
        rng = random.Random(self.seed)
        index = 0
        while self.duration_s is not None or index < self.failures:
            index += 1
            failure = rng.choice(self.failure_choices) if self.failure == RANDOM else self.failure
            target = rng.choice(self.target_choices) if self.target == RANDOM else self.target
            yield FaultSpec(index=index, failure=failure, target=target,
                            delay_s=round(rng.uniform(*self.delay_s), 3),
                            downtime_s=self.downtime_s, pick=rng.random())

    def preview(self, limit: int = 20) -> list[FaultSpec]:
        out = []
        for spec in self.faults():
            if len(out) >= limit:
                break
            out.append(spec)
        return out

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["schedule"] = [asdict(s) for s in self.preview()]
        return d


def _join(error: str | None, note: str) -> str:
    """A fault record's errors, in the order they happened."""
    return f"{error}; {note}" if error else note


def _now() -> int:
    return time.monotonic_ns()


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


class Nemesis:
    """Runs a :class:`FaultPlan` against a live ``Cluster``, writing events to ``writer``.

    ``partitions`` are the case's topic-partitions: each fault picks one of them (by the
    seeded ``pick``) to find its leader or follower, and recovery waits until all of the
    case's topics have a full ISR again.
    """

    def __init__(self, cluster: Any, writer: Any, plan: FaultPlan,
                 partitions: list[tuple[str, int]], *,
                 election_timeout: float = 60.0, recovery_timeout: float = 120.0,
                 progress: Callable[[str], None] | None = None,
                 components: dict[str, Component] | None = None):
        if not partitions:
            raise InputError("nemesis: the case has no topic-partitions to aim at")
        self.components = dict(components or {})
        if plan.target in COMPONENT_TARGETS and plan.target not in self.components:
            raise InputError(f"nemesis: target {plan.target!r} needs that component "
                             f"(a two-cluster case); allowed here: {', '.join(TARGETS)}")
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
        self._abort = threading.Event()

    # -- running ------------------------------------------------------------------------
    def abort(self) -> None:
        """Stop before the next strike (a fault already struck is still restored)."""
        self._abort.set()

    def run(self, stop: threading.Event | None = None) -> list[FaultRecord]:
        """Run the plan. ``stop`` ends a duration-bounded (soak) plan early; a count-bounded
        plan always runs all its faults so a case cannot pass with fewer than it asked for.
        Raises ``ClusterError`` when a fault could not be applied or the cluster did not
        recover; the record of that fault carries the reason too."""
        started = time.monotonic()
        for spec in self.plan.faults():
            if self.plan.duration_s is not None and (
                    time.monotonic() - started >= self.plan.duration_s
                    or (stop is not None and stop.is_set())):
                break
            self.next_fault = spec.describe()
            self.progress(f"next fault {spec.describe()}")
            if self._abort.wait(spec.delay_s):
                break
            self.next_fault, self.current_fault = None, spec.describe()
            record = self.run_fault(spec)
            self.current_fault = None
            if record.error:
                raise ClusterError(f"nemesis fault {spec.describe()}: {record.error}")
        self.next_fault = None
        return self.records

    def run_fault(self, spec: FaultSpec) -> FaultRecord:
        if spec.target in self.components:
            return self._run_component_fault(spec, self.components[spec.target])
        topic, partition = self.partitions[int(spec.pick * len(self.partitions))]
        rec = FaultRecord(spec.index, spec.failure, spec.target, topic, partition)
        self.records.append(rec)
        struck = False
        watch: IsrWatch | None = None
        try:
            state = self._wait_for_leader(topic, partition, set())
            rec.leader_before = state.leader
            rec.isr_before = sorted(state.isr)
            rec.controller_before = self.cluster.active_controller()
            rec.node = self._choose_victim(spec, state)
            rec.led_before = self._led_by(rec.node)
            struck = True
            if spec.failure in LINK_FAILURES:  # the victim runs on: its ISR tells the effect
                watch = IsrWatch(self.cluster, self.writer, topic, partition, rec.node)
                watch.start(rec.isr_before, rec.leader_before)
            self._strike(spec, rec)
            if rec.node == rec.leader_before:
                self._measure_election(spec, rec)
            else:
                rec.election_note = "the victim did not lead the partition"
            if rec.node == rec.controller_before:
                self._measure_controller_failover(spec, rec)
            remaining = spec.downtime_s - (_now() - rec.strike_ns) / 1e9
            if remaining > 0:
                time.sleep(remaining)
        except Exception as exc:  # recorded, restored below, raised by run()
            rec.error = f"{type(exc).__name__}: {exc}"
        finally:
            if struck:
                self._restore(spec, rec)
            if watch is not None:
                watch.stop()
                self._election_from_watch(rec, watch)
        return rec

    @staticmethod
    def _election_from_watch(rec: FaultRecord, watch: IsrWatch) -> None:
        """A leader change the bounded election wait missed (the victim fenced later in
        the hold, then made leader again) still goes into the record."""
        seen = watch.first_leader_besides(rec.node) if rec.node == rec.leader_before else None
        if rec.new_leader is not None or seen is None or rec.strike_ns is None:
            return
        rec.new_leader = seen[1]
        rec.election_s = round((seen[0] - rec.strike_ns) / 1e9, 3)
        rec.elected_from_isr = seen[1] in rec.isr_before
        rec.election_note = "seen by the ISR watch after the election wait"

    def _run_component_fault(self, spec: FaultSpec, comp: Component) -> FaultRecord:
        """Strike the component, hold for the downtime, restore it, wait for its work to
        move again; the same record and events as a node's fault."""
        rec = FaultRecord(spec.index, spec.failure, spec.target, None, None, node=comp.name)
        self.records.append(rec)
        struck = False
        try:
            if spec.failure not in FAILURES:
                raise InputError(f"nemesis: failure {spec.failure!r} cannot hit "
                                 f"{comp.label}; allowed: {', '.join(FAILURES)}")
            method, kind = STRIKE[spec.failure]
            rec.strike_ns = _now()
            self.writer.event(kind, node=comp.name, role=spec.target, time_ns=rec.strike_ns,
                              detail=f"fault #{spec.index}: {spec.failure} failure of "
                                     f"{comp.label} (pid {comp.process.pid})")
            self.progress(f"fault #{spec.index}: {kind} {comp.label}")
            struck = True
            getattr(comp.process, method)()
            rec.state_after_strike = comp.process.state.value
            remaining = spec.downtime_s - (_now() - rec.strike_ns) / 1e9
            if remaining > 0:
                time.sleep(remaining)
        except Exception as exc:  # recorded, restored below, raised by run()
            rec.error = f"{type(exc).__name__}: {exc}"
        finally:
            if struck:
                self._restore_component(spec, rec, comp)
        return rec

    def _restore_component(self, spec: FaultSpec, rec: FaultRecord, comp: Component) -> None:
        kind = RESTORE_KIND[spec.failure]
        # The baseline is read from the target cluster; a client error there must not keep
        # the component down, so it is retried briefly and, failing that, only noted.
        try:
            rec.progress_at_restore = Retrying(
                stop=stop_after_delay(PROGRESS_READ_S), wait=wait_fixed(0.5),
                retry=retry_if_exception_type(Exception), reraise=True)(comp.progress)
        except Exception as exc:
            rec.error = _join(rec.error, f"progress of {comp.label} unread before the "
                                         f"restore: {type(exc).__name__}: {exc}")
        try:
            rec.restore_ns = _now()
            self.writer.event(kind, node=comp.name, role=spec.target, time_ns=rec.restore_ns,
                              detail=f"fault #{spec.index}: restore {comp.label}")
            (comp.process.resume if kind == "resume" else comp.process.start)()
            comp.wait_progress(rec.progress_at_restore or 0, self.recovery_timeout)
            rec.recovered_ns = _now()
            self.writer.event("recovered", node=comp.name, role=spec.target,
                              time_ns=rec.recovered_ns,
                              detail=f"fault #{spec.index}: {comp.label} working again "
                                     f"{rec.recovery_s:.2f} s after the restore")
            self.progress(f"fault #{spec.index}: recovered in {rec.recovery_s:.1f} s")
        except Exception as exc:
            rec.error = _join(rec.error, f"restore of {comp.label} failed: "
                                         f"{type(exc).__name__}: {exc}")

    # -- steps ----------------------------------------------------------------------------
    def _choose_victim(self, spec: FaultSpec, state: Any) -> int:
        if spec.target == "leader":
            return state.leader
        if spec.target == "controller":
            return self.cluster.active_controller()
        followers = sorted(set(state.isr) - {state.leader}) or sorted(
            set(state.replicas) - {state.leader})
        if not followers:
            raise InputError(f"nemesis: {state.topic}-{state.partition} has no follower "
                             f"(replicas {list(state.replicas)}); a follower target needs "
                             f"replication_factor >= 2")
        return followers[int(spec.pick * 7919) % len(followers)]

    def _led_by(self, node: int) -> list[str] | None:
        """The case's partitions ``node`` leads now: the evidence a lost acks=1 record of
        a partition other than the watched one is checked against (``evidence``)."""
        try:
            return [f"{t}-{p}" for t, p in self.partitions
                    if self.cluster.partition_state(t, p).leader == node]
        except Exception:  # unknown: no partition but the watched one can be excused
            return None

    def _strike(self, spec: FaultSpec, rec: FaultRecord) -> None:
        method, kind = STRIKE[spec.failure]
        rec.strike_ns = _now()
        detail = (f"fault #{spec.index}: {spec.failure} failure of the {spec.target} (node "
                  f"{rec.node}); {rec.topic}-{rec.partition} leader {rec.leader_before} isr "
                  f"{rec.isr_before}")
        self.progress(f"fault #{spec.index}: {kind} node {rec.node} ({spec.target})")
        if spec.failure in LINK_FAILURES:  # measured while it holds: the event says so
            measured = None
            try:
                measured = links.strike(self.cluster, rec.node, spec.failure)
            finally:
                self.writer.event(kind, node=str(rec.node), role=spec.target,
                                  time_ns=rec.strike_ns,
                                  detail=f"{detail}; measured: {measured or 'nothing'}")
            return
        self.writer.event(kind, node=str(rec.node), role=spec.target, time_ns=rec.strike_ns,
                          detail=detail)
        getattr(self.cluster, method)(rec.node)
        with contextlib.suppress(Exception):  # informative only
            rec.state_after_strike = self.cluster.node_state(rec.node).value

    def _measure_election(self, spec: FaultSpec, rec: FaultRecord) -> None:
        """Time from the strike to metadata naming a leader other than the victim. A paused
        leader is only replaced once its broker session expires, so the wait ends with the
        pause: a pause shorter than that keeps the leader and is recorded, not failed."""
        others = set(self.cluster.partition_state(rec.topic, rec.partition).replicas) - {
            rec.node}
        if not others:
            rec.election_note = NO_OTHER_REPLICA
            return
        timeout = self.election_timeout
        if spec.failure in KEEPS_LEADER:
            timeout = min(timeout, max(spec.downtime_s - (_now() - rec.strike_ns) / 1e9, 0.1))
        try:
            state = self._wait_for_leader(rec.topic, rec.partition, {rec.node}, timeout,
                                          interval=0.1)
        except ClusterError:
            if spec.failure in KEEPS_LEADER:
                rec.election_note = (f"the leader kept its leadership through the "
                                     f"{spec.downtime_s:.1f} s pause")
                return
            raise
        seen_ns = _now()
        rec.new_leader = state.leader
        rec.election_s = round((seen_ns - rec.strike_ns) / 1e9, 3)
        rec.elected_from_isr = state.leader in rec.isr_before
        self.writer.event("elect", node=str(state.leader), role="leader", time_ns=seen_ns,
                          detail=(f"{rec.topic}-{rec.partition}: leader {rec.node} -> "
                                  f"{state.leader} after {rec.election_s:.2f} s (epoch "
                                  f"{state.leader_epoch}; isr before {rec.isr_before})"))
        self.progress(f"fault #{spec.index}: new leader {state.leader} after "
                      f"{rec.election_s:.2f} s")

    def _measure_controller_failover(self, spec: FaultSpec, rec: FaultRecord) -> None:
        """Time from the strike until the KRaft quorum names another leader (C.5). Bounded
        by the downtime for a pause: a short pause may keep the quorum leader."""
        timeout = self.election_timeout
        if spec.failure in KEEPS_LEADER:
            timeout = max(spec.downtime_s - (_now() - rec.strike_ns) / 1e9, 0.1)
        retrying = Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(0.1),
                            retry=retry_if_result(lambda c: c is None or c == rec.node)
                            | retry_if_exception_type(Exception))
        try:
            # each look bounded too: a controller link cut one way leaves DescribeQuorum
            # unanswered, and the cluster's own 30 s retry would hold the fault that long
            controller = retrying(lambda: self.cluster.active_controller(
                timeout=max(min(timeout, 5.0), 0.5)))
        except RetryError:
            if spec.failure not in KEEPS_LEADER:
                raise ClusterError(f"expected a KRaft quorum leader other than node {rec.node} "
                                   f"within {timeout:.1f} s; broker logs: " + ", ".join(
                                       str(p) for p in self.cluster.log_files().values())
                                   ) from None
            return
        seen_ns = _now()
        rec.new_controller = controller
        rec.controller_failover_s = round((seen_ns - rec.strike_ns) / 1e9, 3)
        self.writer.event("elect", node=str(controller), role="controller", time_ns=seen_ns,
                          detail=(f"active controller {rec.node} -> {controller} after "
                                  f"{rec.controller_failover_s:.2f} s"))

    def _restore(self, spec: FaultSpec, rec: FaultRecord) -> None:
        kind = RESTORE_KIND[spec.failure]
        try:
            rec.restore_ns = _now()
            self.writer.event(kind, node=str(rec.node), role=spec.target,
                              time_ns=rec.restore_ns,
                              detail=f"fault #{spec.index}: restore node {rec.node}")
            if spec.failure in LINK_FAILURES:
                healed = links.restore(self.cluster, rec.node, spec.failure)
                self.progress(f"fault #{spec.index}: healed, {healed}")
            elif kind == "resume":
                self.cluster.resume(rec.node)
            elif kind == "heal":
                self.cluster.heal(rec.node)
            else:
                self.cluster.start_node(rec.node, timeout=self.recovery_timeout)
            self.cluster.wait_healthy(self.topics, timeout=self.recovery_timeout)
            rec.recovered_ns = _now()
            self.writer.event("recovered", node=str(rec.node), role=spec.target,
                              time_ns=rec.recovered_ns,
                              detail=(f"fault #{spec.index}: every replica in sync "
                                      f"{rec.recovery_s:.2f} s after the restore"))
            self.progress(f"fault #{spec.index}: recovered in {rec.recovery_s:.1f} s")
        except Exception as exc:
            rec.error = _join(rec.error, f"restore of node {rec.node} failed: "
                                         f"{type(exc).__name__}: {exc}")

    def _wait_for_leader(self, topic: str, partition: int, not_in: set[int],
                         timeout: float | None = None, interval: float = 0.25) -> Any:
        """Poll metadata until the partition has a leader outside ``not_in``. Our own loop
        (not ``Cluster.wait_for_leader``) so the election time has 0.1 s resolution."""
        timeout = self.election_timeout if timeout is None else timeout
        seen: list[Any] = []

        def lookup() -> Any:
            state = self.cluster.partition_state(topic, partition)
            seen.append(state)
            return state

        def leaderless(state: Any) -> bool:
            return state.leader is None or state.leader < 0 or state.leader in not_in

        retrying = Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(interval),
                            retry=retry_if_result(leaderless)
                            | retry_if_exception_type(Exception))
        try:
            return retrying(lookup)
        except RetryError as exc:
            last = seen[-1] if seen else exc.last_attempt.exception()
            raise ClusterError(
                f"expected a leader of {topic}-{partition} outside {sorted(not_in)} within "
                f"{timeout:.1f} s; last seen {last}; broker logs: "
                f"{', '.join(str(p) for p in self.cluster.log_files().values())}") from None


def run_in_thread(nemesis: Nemesis, stop: threading.Event | None = None
                  ) -> tuple[threading.Thread, dict[str, Any]]:
    """Start ``nemesis.run`` in a daemon thread; the returned dict receives ``error`` (the
    exception) when it fails, so the caller can re-raise it after joining."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            nemesis.run(stop)
        except BaseException as exc:  # handed to the joining thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="kreplica-nemesis", daemon=True)
    thread.start()
    return thread, outcome


def scenario_checks(records: list[FaultRecord], *, unclean_leader_election: bool = False,
                    election_bound_s: float = ELECTION_BOUND_S) -> list[dict[str, Any]]:
    """Checks beyond the history verdict, one per fault and property: every fault struck
    and recovered; where the victim led the watched partition (C.2) a new leader appeared
    within ``election_bound_s`` and it was in the ISR before the fault (not required with
    unclean leader election, which exists to allow the opposite; then it is reported)."""
    checks: list[dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str) -> None:
        checks.append({"name": name, "ok": bool(ok), "detail": detail})

    for r in records:
        tag = f"fault #{r.index} ({r.failure} {r.target}, node {r.node})"
        if r.error:
            detail = r.error
        elif r.recovery_s is not None:
            detail = (f"{'working again' if r.topic is None else 'in sync'} "
                      f"{r.recovery_s:.2f} s after the restore")
        else:
            detail = "no recovery recorded"
        add(f"{tag} recovered", r.error is None and r.recovered_ns is not None, detail)
        if r.node is None or r.node != r.leader_before:
            continue
        if r.election_s is None:
            # a clean or hard leader failure with another replica must move leadership
            must = r.failure not in KEEPS_LEADER and r.election_note != NO_OTHER_REPLICA
            add(f"{tag} new leader elected", not must,
                r.election_note or "no new leader was seen")
            continue
        add(f"{tag} new leader within {election_bound_s:g} s",
            r.election_s <= election_bound_s,
            f"leader {r.leader_before} -> {r.new_leader} after {r.election_s:.2f} s")
        add(f"{tag} new leader was in the ISR",
            bool(r.elected_from_isr) or unclean_leader_election,
            f"new leader {r.new_leader}, ISR before the fault {r.isr_before}"
            + ("" if r.elected_from_isr else " (allowed: unclean leader election)"))
    return checks
