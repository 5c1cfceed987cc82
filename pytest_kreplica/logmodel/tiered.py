"""The log model's tiered profile: ``TieredLogMachine`` drives a tiered topic (KIP-405, Kafka's
``LocalTieredStorage`` as the remote tier) with every rule of ``LogMachine`` plus the tiering
ones, and checks after every action that the log's three parts — tiered | local hotset |
untiered — fit together (``tiers.tier_problems``) and that a read across the boundary between
the remote tier and the local log returns the model's records.

What the broker does by itself (a segment's upload, its local deletion, a remote segment's
deletion by retention) is observed, never assumed: ``tier_segments`` rolls the active segment
and waits, bounded, until the remote store holds everything below it (and, with the small
hotset, until the local log starts at the new segment); the invariant reads the remote store's
directory after every action.
"""

from __future__ import annotations

import time
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..cluster.facilities.impl import tiered as cluster_tiered
from ..errors import ClusterError
from ..waits import wait_for
from .machine import SEGMENT_BYTES, LogMachine, batches, recorded, weigh_rules
from .model import Batch, ModelMismatch
from .system import SystemFailure
from .tiers import TierView, describe, missing_offsets, partition_segments, tier_problems

TIER_WAIT_S = 30.0  # a closed segment reaches the remote tier (and leaves the hotset)
ROLL_MS = 100  # segment.ms while rolling the active segment
#: local retention settings a rule may choose: ``hotset`` deletes a segment locally as soon as
#: it is tiered (Kafka's timestamps of the model's records are minutes old), ``keep`` follows
#: the (long) retention, so everything stays local too, ``bytes`` keeps about 4 KiB locally;
#: ``hotset`` first: Hypothesis draws (and shrinks towards) the first choice most
LOCAL_RETENTION = {
    "hotset": {"local.retention.ms": "1000", "local.retention.bytes": "1"},
    "keep": {"local.retention.ms": "-2", "local.retention.bytes": "-2"},
    "bytes": {"local.retention.ms": "-2", "local.retention.bytes": "4096"},
}
TIERED_WEIGHTS = {"tier_segments": 3, "local_retention": 2, "read_across_tiers": 1}


class TieredLogMachine(LogMachine):
    """One example = one tiered topic with a small local hotset; the remote store is read
    after every action."""

    TIERED = True  # the replay fixture starts a tiered cluster for this machine

    def __init__(self, env: Any):
        super().__init__(env)
        self.hotset = "hotset"

    # -- the profile's topic settings ---------------------------------------------------------
    def topic_settings(self) -> dict[str, str]:
        return {**cluster_tiered.topic_config(), **LOCAL_RETENTION[self.hotset]}

    def retention_settings(self, retention_ms: int | None) -> dict[str, str | None]:
        """Local retention may not exceed retention: while retention is short, the local log
        follows it (-2); afterwards the example's hotset comes back."""
        local: dict[str, str | None] = dict(LOCAL_RETENTION[self.hotset])
        if retention_ms is not None:
            local["local.retention.ms"] = "-2"
        return {**super().retention_settings(retention_ms), **local}

    # -- observing the tiers ----------------------------------------------------------------
    def store(self) -> Any:
        return cluster_tiered.store_dir(self.system.cluster.workdir)

    def observe(self) -> TierView:
        """The local start first, then the store (uploads only add to it), then the log
        start (remote deletion happens below it), so the view is never torn the wrong way."""
        local = self.system.list_offset(self.topic, "earliest-local")
        segments = tuple(partition_segments(self.store(), self.topic))
        start = self.system.list_offset(self.topic, "earliest")
        return TierView(start, local, self.model.high_watermark, segments)

    def roll_segment(self) -> int:
        """Roll the active segment (segment.ms for a moment, one record), then segment.ms
        back to the broker default; returns the new record's offset."""
        self.system.set_config(self.topic, {"segment.ms": str(ROLL_MS)})
        time.sleep(2 * ROLL_MS / 1000)
        marker = self.model.high_watermark
        records = [(None, b"roll", int(time.time() * 1000))]
        offsets = self.system.produce(self.topic, records, "none", "all")
        if offsets != [marker]:
            raise ModelMismatch(f"produce of the roll record: acknowledged offsets expected "
                                f"[{marker}], seen {offsets}")
        self.model.append(records)
        self.system.set_config(self.topic, {"segment.ms": None})
        return marker

    def wait_tiered(self, below: int) -> TierView:
        """Wait (bounded) until the remote tier holds every offset from the log start up to
        ``below`` - 1 and, with the small hotset, the local log starts at ``below``."""
        seen: list[TierView] = []

        def tiered() -> str | None:
            view = self.observe()
            seen[:] = [view]
            span = (view.log_start, below - 1)
            lacking = span[0] <= span[1] and missing_offsets(span, view.segments)
            local_due = self.hotset == "hotset" and view.local_start < below
            if lacking or local_due:
                return (f"remote tier {describe(view.segments)}, local log start "
                        f"{view.local_start}, log start {view.log_start}")
            return None
        try:
            wait_for(tiered, TIER_WAIT_S, f"the remote tier holding {self.topic}'s offsets "
                     f"below {below}" + (" and the local log starting there"
                                         if self.hotset == "hotset" else ""),
                     hint=f"remote store {self.store()}", poll=0.2)
        except ClusterError as exc:
            raise SystemFailure(str(exc)) from None
        return seen[0]

    # -- rules ------------------------------------------------------------------------------
    @initialize(segment_bytes=st.sampled_from(SEGMENT_BYTES), batch=batches(),
                hotset=st.sampled_from(list(LOCAL_RETENTION)))
    @recorded
    def create_topic(self, segment_bytes: int, batch: Batch, hotset: str = "hotset") -> None:
        """The example's tiered topic (its local retention generated too), a first batch,
        and that batch tiered: every example starts with a tiered part of the log."""
        self.hotset = hotset
        self.topic = self.env.new_topic()
        self.system.create_topic(self.topic, segment_bytes, self.topic_settings())
        self.append_batch(batch)
        self.tier_now()

    def tier_now(self) -> TierView:
        """Close the active segment and wait for the broker to tier what it held."""
        view = self.wait_tiered(self.roll_segment())
        self.env.observed["tiered waits met"] += 1
        if view.local_start > view.log_start:
            self.env.observed["local deletions seen"] += 1
        return view

    @precondition(lambda self: self.model.high_watermark > self.model.log_start)
    @rule()
    @recorded
    def tier_segments(self) -> None:
        """Close the active segment and wait for the broker to tier what it held."""
        self.tier_now()

    @rule(hotset=st.sampled_from(list(LOCAL_RETENTION)))
    @recorded
    def local_retention(self, hotset: str) -> None:
        """Alter local.retention.ms / local.retention.bytes at run time."""
        self.hotset = hotset
        self.system.set_config(self.topic, dict(LOCAL_RETENTION[hotset]))

    @rule()
    @recorded
    def read_across_tiers(self) -> None:
        """Every record from the log start to the high watermark, from either tier."""
        self.read_everything("read of the whole log across the tiers")

    # -- invariants ---------------------------------------------------------------------------
    @invariant()
    def tiers_agree(self) -> None:
        """earliest-local between earliest and HW; no remote segment at or past HW; no
        offset between the log start and the local start missing from the remote tier; a
        read across the tier boundary returns the model's records."""
        if self.topic is None:
            return
        with self.failing():
            self.check_tiers()

    def check_tiers(self) -> None:
        view = self.observe()
        self.model.observe_log_start(view.log_start, "ListOffsets earliest (tiered)")
        problems = tier_problems(view)
        if problems:
            raise ModelMismatch("tiers: " + "; ".join(problems))
        self.env.observed["remote segments seen"] = max(
            self.env.observed["remote segments seen"], len(view.segments))
        span = view.remote_only
        if span is not None:  # the last remote-only record and the first local one
            self._read(span[1], "read_uncommitted", 2, "read across the tier boundary")
            self.env.observed["remote reads"] += 1

    def time_answers(self, timestamp: int) -> tuple[int | None, ...]:
        """Also the first record at or after the local log start, while a record below the
        log start reaches ``timestamp`` (a Kafka finding, docs/log-model.md): the remote
        tier's search (``RemoteLogManager.findOffsetByTimestamp``) answers from the first
        remote segment whose largest timestamp reaches the target and whose end is at or
        past the log start, even when that segment holds no qualifying record at or past the
        log start; the search then falls back to the local log and skips every later remote
        segment. The local start is asked only when that record exists."""
        answers = super().time_answers(timestamp)
        if None not in answers or answers == (None,):
            return answers
        local = self.system.list_offset(self.topic, "earliest-local")
        local_answer = self.model.offset_for_time(timestamp, since=local)
        return answers if local_answer in answers else (*answers, local_answer)

    def replay_step(self, name: str, kwargs: dict[str, Any]) -> None:
        super().replay_step(name, kwargs)
        self.tiers_agree()


weigh_rules(TieredLogMachine, TIERED_WEIGHTS)
