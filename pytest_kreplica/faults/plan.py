"""The seeded fault schedule (:class:`FaultPlan` of :class:`FaultSpec`) and what each fault
did (:class:`FaultRecord`, verdict.json ``faults``)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ..cluster.base import KILLED_AT_DEADLINE
from ..errors import InputError
from .registry import (
    COMPONENT_TARGETS,
    FAILURES,
    RANDOM,
    RANDOM_FAILURES,
    TARGETS,
    WORKLOAD_TARGETS,
    composition_problem,
    is_composed,
    parts_of,
)

# a composition's second part strikes this share of the downtime after the first (drawn)
OVERLAP_AT = (0.2, 0.5)
NO_OTHER_REPLICA = "no other replica can lead (replication factor 1)"
ALL_DOWN = "every node was down: nothing could lead until the restore"
FAULT_RECORD_PHASES = ("fault_s", "recovery_s", "election_s")  # the timings a record carries


@dataclass(frozen=True)
class FaultSpec:
    """One planned fault: everything the seed decides before the cluster is looked at."""

    index: int  # 1-based position in the sequence
    failure: str  # a name of ``FAILURES``
    target: str  # leader | follower | controller | a component target
    delay_s: float  # quiet time before the strike (after the previous fault recovered)
    downtime_s: float  # from the strike to the restore
    pick: float  # in [0, 1): which topic-partition, and which follower, to use
    # a composition's second part: the index of the fault it overlaps, struck ``after_s``
    # after that fault's strike while it still holds (None: a fault on its own)
    overlaps: int | None = None
    after_s: float | None = None

    def describe(self) -> str:
        if self.overlaps is not None:
            return (f"#{self.index} {self.failure} {self.target} {self.after_s:.1f} s into "
                    f"#{self.overlaps}, down {self.downtime_s:.1f} s")
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
    # every replica in the ISR read when the victim was chosen or right before the strike:
    # a follower that rejoined in between may be elected cleanly
    isr_before: list[int] = field(default_factory=list)
    led_before: list[str] | None = None  # "topic-partition"s of the case the victim led
    # when the first metadata read of the fault began: every ISR above was read after it
    before_ns: int | None = None
    # the follower lag bound (replica.lag.time.max.ms) the cluster runs with, None unknown:
    # with ``before_ns`` it bounds the loss evidence's window from below
    lag_bound_ms: int | None = None
    # every partition of the case before the strike, "topic-partition" -> {"leader", "isr"},
    # and each one's leader once the cluster recovered (``leadership``); None: unread
    partitions_before: dict[str, dict[str, Any]] | None = None
    leaders_after: dict[str, int | None] | None = None
    after_ns: int | None = None  # when ``leaders_after`` was read
    strike_ns: int | None = None  # just before the strike was sent
    struck_ns: int | None = None  # once it returned: a killed process is gone by then
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
    measured: str | None = None  # what the strike measured (the strike event's "measured")
    # "hard": a controlled stop outlasted its deadline and ended in SIGKILL (at ``struck_ns``),
    # so the fault is judged as the hard failure it became
    became: str | None = None
    error: str | None = None
    # a composition's part: the other part's index and the measured overlap of the two
    # strike-to-restore windows (s)
    overlaps: int | None = None
    overlap_s: float | None = None

    @property
    def fault_s(self) -> float | None:
        """Strike to restore (the node's real downtime)."""
        if self.strike_ns is None or self.restore_ns is None:
            return None
        return (self.restore_ns - self.strike_ns) / 1e9

    def struck(self, at_ns: int, measured: str | None) -> None:
        """The strike returned at ``at_ns`` having measured ``measured``."""
        self.struck_ns, self.measured = at_ns, measured
        if measured and measured.startswith(KILLED_AT_DEADLINE):
            self.became = "hard"

    @property
    def killed_after_s(self) -> float | None:
        """Strike to the SIGKILL of a controlled stop that became hard (None: it did not)."""
        if self.became != "hard" or self.strike_ns is None or self.struck_ns is None:
            return None
        return (self.struck_ns - self.strike_ns) / 1e9

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
    failure_choices: tuple[str, ...] = RANDOM_FAILURES
    target_choices: tuple[str, ...] = TARGETS
    # components a ``random`` target may draw besides the roles (MirrorMaker 2 in a
    # two-cluster case); a component's fault is always on its own: a composition drawn onto
    # one strikes only its first part
    component_choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if is_composed(self.failure) and (problem := composition_problem(self.failure)):
            raise InputError(f"nemesis: failure {self.failure!r}: {problem}")
        for key, value, allowed in (("failure", "" if is_composed(self.failure) else
                                     self.failure, ("", *FAILURES)),
                                    ("target", self.target,
                                     TARGETS + WORKLOAD_TARGETS + COMPONENT_TARGETS)):
            if value not in (*allowed, RANDOM):
                raise InputError(f"nemesis: {key} {value!r} is not allowed; allowed: "
                                 f"{', '.join((*allowed, RANDOM))}")
        for component in self.component_choices:
            if component not in COMPONENT_TARGETS:
                raise InputError(f"nemesis: component {component!r} is not allowed; allowed: "
                                 f"{', '.join(COMPONENT_TARGETS)}")
        if self.failures < 0 or self.downtime_s < 0:
            raise InputError("nemesis: failures and downtime must not be negative")

    def steps(self) -> Iterator[tuple[FaultSpec, ...]]:
        """The schedule, one step at a time: a fault, or a composition's two parts (the
        second overlapping the first); the same seed always yields the same specs. A
        composition counts as one of ``failures``; its parts take an index each."""
        rng = random.Random(self.seed)
        index = step = 0
        while self.duration_s is not None or step < self.failures:
            step += 1
            failure = rng.choice(self.failure_choices) if self.failure == RANDOM else self.failure
            target = (rng.choice(self.target_choices + self.component_choices)
                      if self.target == RANDOM else self.target)
            # a composition's ``random`` parts: each one of the random failures, in order
            first, *more = (rng.choice(self.failure_choices) if part == RANDOM else part
                            for part in parts_of(failure))
            index += 1
            spec = FaultSpec(index=index, failure=first, target=target,
                             delay_s=round(rng.uniform(*self.delay_s), 3),
                             downtime_s=self.downtime_s, pick=rng.random())
            if not more or target in self.component_choices:
                yield (spec,)
                continue
            index += 1
            second = FaultSpec(index=index, failure=more[0], target=rng.choice(TARGETS),
                               delay_s=0.0, downtime_s=self.downtime_s, pick=rng.random(),
                               overlaps=spec.index,
                               after_s=round(rng.uniform(*OVERLAP_AT) * self.downtime_s, 3))
            yield spec, second

    def faults(self) -> Iterator[FaultSpec]:
        """Every planned fault in order (a composition's parts one after the other)."""
        for step in self.steps():
            yield from step

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
