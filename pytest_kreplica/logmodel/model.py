"""The model of one partition's log: what a correct Kafka must show through the protocol.

Pure logic, no Kafka: the committed records (offset = position, dense from 0), the log start
offset, the high watermark and every record's timestamp. Where Kafka's behaviour depends on
segment boundaries the model cannot see (time retention deletes whole segments), the model
keeps a *range*: retention may move the log start anywhere from where it was up to the first
record that retention must keep, and the log start the broker then reports is accepted only
inside that range. Every disagreement raises ``ModelMismatch`` with expected / seen.
"""

from __future__ import annotations

from dataclasses import dataclass


class ModelMismatch(AssertionError):
    """The system disagrees with the model (a failed property)."""


@dataclass(frozen=True)
class Record:
    """One committed record as the model knows it (the value may be None)."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


@dataclass(frozen=True)
class Batch:
    """One produce call: records (key, value, timestamp relative to the example's base, ms)
    sent as one record batch. The repr is valid Python (replay files print it)."""

    records: tuple[tuple[bytes | None, bytes | None, int], ...]
    compression: str = "none"
    acks: str = "all"


class LogModel:
    """Committed records from offset 0, the log start offset and the retention frontier."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.log_start = 0
        # DeleteRecords answers once every live replica's log start reached the offset: below
        # it nothing comes back, whichever replica leads
        self.durable_start = 0
        # retention's segment-granular slack: the log start may move up to here on its own
        self.may_delete_below = 0

    # -- what the system must show -------------------------------------------------------
    @property
    def high_watermark(self) -> int:
        """Every acknowledged record is committed once its produce call returned (acks=all,
        or acks=1 after the bounded wait for the high watermark), so HW = log end."""
        return len(self.records)

    def readable(self, offset: int) -> bool:
        """A fetch from ``offset`` succeeds (possibly empty) iff log start <= offset <= HW."""
        return self.log_start <= offset <= self.high_watermark

    def read(self, offset: int, limit: int) -> list[Record]:
        """The records a fetch from ``offset`` must return, at most ``limit`` of them."""
        if not self.readable(offset):
            raise ValueError(f"offset {offset} outside [{self.log_start}, "
                             f"{self.high_watermark}]")
        return self.records[offset:offset + limit]

    def offset_for_time(self, timestamp: int, since: int | None = None) -> int | None:
        """ListOffsets by timestamp: the first offset >= the log start (or >= ``since``)
        whose record's timestamp is >= ``timestamp`` (timestamps need not grow with
        offsets), or None."""
        for record in self.records[max(self.log_start, since or 0):]:
            if record.timestamp >= timestamp:
                return record.offset
        return None

    def time_answers(self, timestamp: int) -> tuple[int | None, ...]:
        """What ListOffsets by ``timestamp`` may answer: ``offset_for_time``, or also none
        while a record below the log start reaches ``timestamp``. Kafka searches only the
        first segment whose largest timestamp reaches the target
        (``UnifiedLog.fetchOffsetByTimestamp``), and that largest timestamp still counts
        records DeleteRecords put below the log start until their whole segment is deleted;
        when that segment holds no qualifying record at or above the log start, Kafka answers
        none though a later segment holds one (found by this model in CI on 2026-11-29;
        franz-go's kfake copies the behaviour). The model cannot see segments: it accepts
        none whenever such a record exists, and only then."""
        want = self.offset_for_time(timestamp)
        hidden = any(r.timestamp >= timestamp for r in self.records[:self.log_start])
        return (want, None) if hidden and want is not None else (want,)

    # -- what the actions change ---------------------------------------------------------
    def append(self, records: list[tuple[bytes | None, bytes | None, int]]) -> list[Record]:
        """Acknowledged records, appended at the log end; returns them with their offsets."""
        start = len(self.records)
        added = [Record(start + i, k, v, ts) for i, (k, v, ts) in enumerate(records)]
        self.records.extend(added)
        return added

    def delete_records(self, offset: int) -> int:
        """DeleteRecords(offset): valid for offset <= HW; returns the new log start (the
        broker's low watermark). An offset below the log start changes nothing."""
        if offset > self.high_watermark:
            raise ValueError(f"DeleteRecords offset {offset} past the high watermark "
                             f"{self.high_watermark}")
        self.log_start = max(self.log_start, offset)
        self.durable_start = max(self.durable_start, offset)
        return self.log_start

    def leadership_may_have_moved(self) -> None:
        """Retention runs on each replica on its own schedule, and a follower learns the
        leader's log start only from its next fetch: a new leader may report a lower log
        start than the old one did, down to what DeleteRecords made durable (seen in CI:
        retention took the log start to 1 on the leader, a clean restart of it, then 0 on the
        new leader; the record at 0 was readable again). The next observation sets it."""
        self.log_start = self.durable_start

    def retention_limit(self, cutoff: int) -> int:
        """Time retention with cutoff timestamp ``cutoff`` (records older than it expired)
        deletes a prefix of whole segments, each with every record older than the cutoff;
        it can never pass the first record (from the log start) that is not expired."""
        for record in self.records[self.log_start:]:
            if record.timestamp >= cutoff:
                return record.offset
        return self.high_watermark

    def allow_retention(self, cutoff: int) -> tuple[int, int]:
        """Open the range retention may delete; returns it as (lowest, highest) log start."""
        limit = self.retention_limit(cutoff)
        self.may_delete_below = max(self.may_delete_below, limit)
        return self.log_start, max(self.log_start, limit)

    @property
    def highest_log_start(self) -> int:
        """The highest log start the model allows now (retention may have deleted up to it)."""
        return max(self.log_start, self.may_delete_below)

    def check_low_watermark(self, requested: int, seen: int, where: str) -> None:
        """A successful DeleteRecords(requested) answers the partition's low watermark: the
        least log start offset among the live replicas *as the leader knows them*, and
        Kafka answers only once it is at least ``requested`` (Partition.lowWatermarkIfLeader,
        DelayedDeleteRecords). A leader that took over recently may not know its followers'
        log starts yet, so below the leader's own log start it may report anything down to
        ``requested``; above the highest log start the model allows, nothing."""
        highest = self.highest_log_start
        if not requested <= seen <= highest:
            raise ModelMismatch(f"{where}: low watermark expected between the requested "
                                f"offset {requested} and the highest log start {highest}, "
                                f"seen {seen}")

    def observe_log_start(self, seen: int, where: str) -> None:
        """Accept the log start the system reports if the model allows it, else raise."""
        highest = self.highest_log_start
        if not self.log_start <= seen <= highest:
            allowed = (f"{self.log_start}" if highest == self.log_start
                       else f"between {self.log_start} and {highest} (retention range)")
            raise ModelMismatch(f"{where}: log start offset expected {allowed}, seen {seen}")
        self.log_start = seen

    # -- checks ---------------------------------------------------------------------------
    def check_read(self, offset: int, seen: list[Record], where: str,
                   expected_count: int) -> None:
        """``seen`` (what a fetch from ``offset`` returned, in order) must be exactly the
        model's records from ``offset``: dense, strictly increasing, same keys, values and
        timestamps, none before the fetch offset or past the high watermark, and at least
        ``expected_count`` of them."""
        want = self.read(offset, self.high_watermark)
        for i, got in enumerate(seen):
            if i >= len(want):
                raise ModelMismatch(
                    f"{where}: read from {offset} returned a record at offset {got.offset} "
                    f"past the high watermark {self.high_watermark}")
            if got != want[i]:
                raise ModelMismatch(f"{where}: read from {offset}, record #{i}: expected "
                                    f"{want[i]!r}, seen {got!r}")
        if len(seen) < expected_count:
            raise ModelMismatch(f"{where}: read from {offset} expected {expected_count} "
                                f"records (offsets {offset}..{offset + expected_count - 1}), "
                                f"seen {len(seen)}")


def dense(offsets: list[int]) -> bool:
    """Offsets strictly increasing by one."""
    return all(b == a + 1 for a, b in zip(offsets, offsets[1:], strict=False))
