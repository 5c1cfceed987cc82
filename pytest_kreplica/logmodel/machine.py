"""``LogMachine``: the Hypothesis state machine that drives one topic's log and the model
side by side, and checks after every action that they agree (seed 000, against a running
cluster through the protocol).

Rules are weighted as in the seed: Hypothesis picks uniformly among enabled rules, so a rule
of weight w is registered w times (``weigh_rules``). Every rule records its name and arguments
in the environment's program, so the shrunk failing example (Hypothesis runs it once more at the
end) can be written out as a replay file. Argument reprs are valid Python.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from ..cluster.kafka.config import topic_configs
from ..errors import ClusterError
from ..waits import wait_for
from .model import Batch, LogModel, ModelMismatch
from .system import (
    COMPRESSIONS,
    ISOLATIONS,
    DeleteRecordsUnanswered,
    LogSystem,
    OutOfRange,
    SystemFailure,
)

TIME_SPAN_MS = 600_000  # record timestamps lie in the 10 minutes before the example began
RETENTION_CHECK_MS = 250  # broker log.retention.check.interval.ms of the log-model cluster
RETENTION_WAIT_S = 2 * RETENTION_CHECK_MS / 1000 + 0.4
SEGMENT_BYTES = (1024, 4096, 16384)
READ_CHUNK = 500
HW_WAIT_S = 10.0

WEIGHTS = {"produce": 6, "read": 3, "read_acked": 2, "offsets_for_times": 2,
           "delete_records": 2, "alter_segments": 1, "retention": 2, "restart_node": 1,
           "move_leader": 1}


@dataclass
class LogEnv:
    """What every example of one test shares: the system, where to write, the limits, and
    the program of the example that ran last."""

    system: LogSystem
    run_dir: Path
    topic_prefix: str = "logmodel"
    max_disruptions: int = 1  # restarts + leader moves per example (each costs seconds)
    topics: list[str] = field(default_factory=list)
    program: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    examples: int = 0
    steps: int = 0
    rules: Counter[str] = field(default_factory=Counter)  # steps per rule, over all examples
    # what the broker was seen doing by itself, over all examples (the tiered profile's
    # uploads, local deletions and reads served by the remote tier)
    observed: Counter[str] = field(default_factory=Counter)

    def new_topic(self) -> str:
        self.examples += 1
        name = f"{self.topic_prefix}-{self.examples}"
        self.topics.append(name)
        return name

    def record(self, name: str, kwargs: dict[str, Any]) -> None:
        self.program.append((name, dict(kwargs)))
        self.steps += 1
        self.rules[name] += 1


def recorded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Append the step (rule name and arguments) to the environment's program first."""

    @functools.wraps(fn)
    def wrapper(self: LogMachine, **kwargs: Any) -> Any:
        self.env.record(fn.__name__, kwargs)
        with self.failing():
            return fn(self, **kwargs)
    return wrapper


@st.composite
def batches(draw: st.DrawFn) -> Batch:
    """A batch of 1..30 records: keys none / one fixed key / distinct keys, values of any
    bytes (null where a key exists: kafka-python refuses a record with neither),
    timestamps anywhere in the span (not ordered)."""
    count = draw(st.integers(1, 30), label="records")
    keys = draw(st.sampled_from(["none", "fixed", "distinct"]), label="keys")
    records = []
    for i in range(count):
        key = None if keys == "none" else b"k" if keys == "fixed" else b"k%d" % i
        value = draw(st.binary(max_size=64) if key is None
                     else st.one_of(st.binary(max_size=64), st.none()))
        records.append((key, value, draw(st.integers(0, TIME_SPAN_MS))))
    return Batch(tuple(records), draw(st.sampled_from(COMPRESSIONS)),
                 draw(st.sampled_from(["all", "1"])))


class LogMachine(RuleBasedStateMachine):
    """One example = one new topic (replication 3, small segments) and a program of
    actions; the invariant runs after each of them."""

    acked = Bundle("acked")

    def __init__(self, env: LogEnv):
        super().__init__()
        self.env = env
        env.program = []
        self.model = LogModel()
        self.system = env.system
        self.topic: str | None = None
        self.base_ms = int(time.time() * 1000) - TIME_SPAN_MS
        self.disruptions = 0
        self.failed = False  # a rule or an invariant raised: the teardown's read is skipped

    @contextlib.contextmanager
    def failing(self) -> Iterator[None]:
        """Mark the example failed when the body raises (and re-raise)."""
        try:
            yield
        except BaseException:
            self.failed = True
            raise

    # -- helpers ----------------------------------------------------------------------------
    def _offset_at(self, position: int) -> int:
        """Position 0..100 maps onto offsets 0..HW+1 (both ends are interesting)."""
        return round(position / 100 * (self.model.high_watermark + 1))

    def _latest_log_start(self, where: str) -> None:
        self.model.observe_log_start(self.system.list_offset(self.topic, "earliest"), where)

    def _read(self, offset: int, isolation: str, limit: int, where: str) -> None:
        if not self.model.readable(offset):
            try:
                seen = self.system.read(self.topic, offset, 1, isolation)
            except OutOfRange:
                return
            raise ModelMismatch(f"{where}: read {isolation} from {offset} expected "
                                f"OFFSET_OUT_OF_RANGE (log {self.model.log_start}.."
                                f"{self.model.high_watermark}), seen {len(seen)} records")
        count = min(limit, self.model.high_watermark - offset)
        try:
            seen = self.system.read(self.topic, offset, count, isolation)
        except OutOfRange as exc:
            self._latest_log_start(where)  # retention's slack may have moved it meanwhile
            if offset < self.model.log_start:
                return
            raise ModelMismatch(f"{where}: read {isolation} from {offset} expected records "
                                f"(log {self.model.log_start}..{self.model.high_watermark}), "
                                f"seen OFFSET_OUT_OF_RANGE: {exc}") from None
        self.model.check_read(offset, seen, f"{where} ({isolation})", count)

    def read_everything(self, where: str) -> None:
        """Nothing acknowledged below the high watermark disappeared."""
        offset = self.model.log_start
        while offset < self.model.high_watermark:
            self._read(offset, "read_uncommitted", READ_CHUNK, where)
            offset = max(offset + READ_CHUNK, self.model.log_start)

    def topic_settings(self) -> dict[str, str]:
        """Topic settings beyond the segment size and the replication (a profile's own)."""
        return {}

    def retention_settings(self, retention_ms: int | None) -> dict[str, str | None]:
        """The topic settings of the retention rule: ``retention.ms`` shortened, or back to
        the broker default (None)."""
        return {"retention.ms": None if retention_ms is None else str(retention_ms)}

    # -- rules ----------------------------------------------------------------------------
    @initialize(segment_bytes=st.sampled_from(SEGMENT_BYTES))
    @recorded
    def create_topic(self, segment_bytes: int) -> None:
        self.topic = self.env.new_topic()
        self.system.create_topic(self.topic, segment_bytes, self.topic_settings())

    @rule(target=acked, batch=batches())
    @recorded
    def produce(self, batch: Batch) -> int:
        return self.append_batch(batch)

    def append_batch(self, batch: Batch) -> int:
        """Send ``batch``, check its acknowledged offsets, append it to the model (acks=1:
        after a bounded wait for the high watermark); returns its first offset."""
        records = [(k, v, self.base_ms + d) for k, v, d in batch.records]
        first = self.model.high_watermark
        offsets = self.system.produce(self.topic, records, batch.compression, batch.acks)
        expected = list(range(first, first + len(records)))
        if offsets != expected:
            raise ModelMismatch(f"produce {len(records)} records: acknowledged offsets "
                                f"expected {expected}, seen {offsets}")
        self.model.append(records)
        if batch.acks != "all":  # acks=1 returns before the followers have it
            def committed() -> str | None:
                hw = self.system.list_offset(self.topic, "latest")
                return None if hw == self.model.high_watermark else f"high watermark {hw}"
            try:
                wait_for(committed, HW_WAIT_S,
                         f"high watermark {self.model.high_watermark} after an acks=1 produce")
            except ClusterError as exc:
                raise SystemFailure(str(exc)) from None
        return first

    @rule(position=st.integers(0, 100), isolation=st.sampled_from(ISOLATIONS),
          limit=st.integers(1, 200))
    @recorded
    def read(self, position: int, isolation: str, limit: int) -> None:
        self._read(self._offset_at(position), isolation, limit, "read")

    @rule(offset=acked, isolation=st.sampled_from(ISOLATIONS))
    @recorded
    def read_acked(self, offset: int, isolation: str) -> None:
        self._read(offset, isolation, 50, "read from an acknowledged offset")

    @rule(at=st.integers(-1000, TIME_SPAN_MS + 1000))
    @recorded
    def offsets_for_times(self, at: int) -> None:
        timestamp = self.base_ms + at
        seen = self.system.list_offset(self.topic, timestamp)
        if seen not in self.time_answers(timestamp):
            self._latest_log_start("offsets for times")  # retention slack: re-ask the model
            answers = self.time_answers(timestamp)
            if seen not in answers:
                raise ModelMismatch(f"offsets for time base+{at}: expected "
                                    f"{' or '.join(map(str, answers))}, seen {seen}")

    def time_answers(self, timestamp: int) -> tuple[int | None, ...]:
        """What ListOffsets by ``timestamp`` may answer (``LogModel.time_answers``; the
        tiered machine adds the remote tier's finding)."""
        return self.model.time_answers(timestamp)

    @rule(position=st.integers(0, 100))
    @recorded
    def delete_records(self, position: int) -> None:
        offset = self._offset_at(position)
        where = f"DeleteRecords({offset})"
        if offset > self.model.high_watermark:
            try:
                low = self.system.delete_records(self.topic, offset)
            except OutOfRange:
                return
            raise ModelMismatch(f"{where}: expected OFFSET_OUT_OF_RANGE past the high "
                                f"watermark {self.model.high_watermark}, seen low watermark {low}")
        try:
            low = self.system.delete_records(self.topic, offset)
        except DeleteRecordsUnanswered:
            if not self.disruptions:  # the Kafka finding needs a leadership change first
                raise
            self.unanswered_delete(offset, where)
            return
        self.model.delete_records(offset)
        self.model.check_low_watermark(offset, low, where)
        self._latest_log_start(where)  # the leader's own log start, which must be exact

    def unanswered_delete(self, offset: int, where: str) -> None:
        """A Kafka finding (docs/log-model.md): after a leadership change in the example, a
        DeleteRecords may never be answered, since a replica that led a moment before does
        not take the new log start from the leader while no record arrives. The leader must
        still have deleted up to ``offset``; as nothing was acknowledged, a later leader may
        report the old log start (the floor DeleteRecords made durable stays where it was)."""
        self.env.observed["DeleteRecords unanswered after a leadership change"] += 1
        self.model.log_start = max(self.model.log_start, offset)
        self.model.observe_log_start(self.system.list_offset(self.topic, "earliest"),
                                     f"{where}, unanswered: ListOffsets earliest")

    @rule(segment_ms=st.sampled_from([None, 100]),
          segment_bytes=st.sampled_from([None, *SEGMENT_BYTES]))
    @recorded
    def alter_segments(self, segment_ms: int | None, segment_bytes: int | None) -> None:
        """Roll segments by time or size from now on (None: the broker default)."""

        version = getattr(self.system.cluster, "kafka_version", None) or "4"
        key = next(iter(topic_configs(version, {"segment.bytes": "1"})))
        self.system.set_config(self.topic, {
            "segment.ms": None if segment_ms is None else str(segment_ms),
            key: None if segment_bytes is None else str(segment_bytes)})

    @rule(keep_after=st.integers(0, TIME_SPAN_MS))
    @recorded
    def retention(self, keep_after: int) -> None:
        """Shorten retention.ms so records older than base+keep_after expire, wait (bounded)
        for the broker's retention pass, restore the default."""
        retention_ms = max(1, int(time.time() * 1000) - (self.base_ms + keep_after))
        where = f"retention keeping base+{keep_after}"
        self.system.set_config(self.topic, self.retention_settings(retention_ms))
        deadline = time.monotonic() + RETENTION_WAIT_S
        while time.monotonic() < deadline:
            limit = self.model.retention_limit(int(time.time() * 1000) - retention_ms)
            if limit == self.model.log_start:
                break  # nothing may go
            if self.system.list_offset(self.topic, "earliest") >= limit:
                break
            time.sleep(0.05)
        self.system.set_config(self.topic, self.retention_settings(None))
        time.sleep(RETENTION_CHECK_MS / 1000)  # a retention pass already under way ends
        self.model.allow_retention(int(time.time() * 1000) - retention_ms)
        self._latest_log_start(where)

    @precondition(lambda self: self.disruptions < self.env.max_disruptions)
    @rule(role=st.sampled_from(["leader", "follower"]), hard=st.booleans())
    @recorded
    def restart_node(self, role: str, hard: bool) -> None:
        self.disruptions += 1
        node = self.system.restart(self.topic, role, hard)
        self.model.leadership_may_have_moved()
        self.read_everything(f"after {'hard' if hard else 'clean'} restart of {role} {node}")

    @precondition(lambda self: self.disruptions < self.env.max_disruptions)
    @rule(follower=st.integers(0, 1))
    @recorded
    def move_leader(self, follower: int) -> None:
        self.disruptions += 1
        leader = self.system.move_leader(self.topic, follower)
        self.model.leadership_may_have_moved()
        self.read_everything(f"after moving leadership to {leader}")

    # -- invariants -----------------------------------------------------------------------
    @invariant()
    def offsets_agree(self) -> None:
        """earliest == log start <= high watermark; latest (both isolations) == HW."""
        if self.topic is None:
            return
        with self.failing():
            self._latest_log_start("ListOffsets earliest")
            for isolation in ISOLATIONS:
                seen = self.system.list_offset(self.topic, "latest", isolation)
                if seen != self.model.high_watermark:
                    raise ModelMismatch(f"ListOffsets latest ({isolation}): expected "
                                        f"{self.model.high_watermark}, seen {seen}")

    def teardown(self) -> None:
        """At the end of every example (and of a replay) the whole log is read once more:
        an acknowledged record that vanished after the last read is caught here, not only
        when a later rule happens to read its offset. Not after a failure: its own error
        would hide the one the example failed with."""
        if self.topic is not None and not self.failed:
            self.read_everything("at the end of the example")

    # -- replay ----------------------------------------------------------------------------
    def replay_step(self, name: str, kwargs: dict[str, Any]) -> None:
        """One step of a replay file: the rule, then every invariant (as Hypothesis does)."""
        getattr(self, name)(**kwargs)
        self.offsets_agree()


def weigh_rules(cls: type[RuleBasedStateMachine], weights: dict[str, int]) -> None:
    """Register rule ``name`` ``weight`` times (aliases of one function, one rule name)."""
    for name, weight in weights.items():
        for i in range(1, weight):
            setattr(cls, f"_{name}_weight_{i}", getattr(cls, name))


weigh_rules(LogMachine, WEIGHTS)
