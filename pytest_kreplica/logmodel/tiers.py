"""The tiered profile's view of a log: tiered | local hotset | untiered, as observed from
outside, and the properties that view must have (pure logic but for reading the store).

What is observed: the log start offset (ListOffsets ``earliest``), the leader's local log
start (``earliest-local``), the high watermark, and the remote segments Kafka's
``LocalTieredStorage`` holds for the partition (their files, scanned for the offsets they
hold). The three parts of the log are then:

- *tiered*: offsets held by a remote segment;
- *local hotset*: from the local log start up, those also tiered (below the remote end);
- *untiered*: from the remote end + 1 (or the local start) to the high watermark, only local.

``tier_problems`` says what is wrong with one observation; an empty list is a sound log.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..validation.replicas.batches import SegmentScanner
from ..validation.replicas.remote import remote_segments

TOPIC_ID_CHARS = 22  # the folder is <topic>-<partition>-<topic id>


@dataclass(frozen=True)
class RemoteSegment:
    """One segment of the remote tier: the offsets its sound batches hold (inclusive)."""

    start: int
    end: int
    path: Path

    def holds(self, offset: int) -> bool:
        return self.start <= offset <= self.end


@dataclass(frozen=True)
class TierView:
    """One observation of the partition's tiers."""

    log_start: int
    local_start: int
    high_watermark: int
    segments: tuple[RemoteSegment, ...]

    @property
    def remote_end(self) -> int:
        """The last offset the remote tier holds (-1 when it holds none)."""
        return max((s.end for s in self.segments), default=-1)

    @property
    def remote_only(self) -> tuple[int, int] | None:
        """[first, last] offsets readable only from the remote tier, or None."""
        if self.local_start <= self.log_start:
            return None
        return self.log_start, self.local_start - 1


def partition_segments(store: Path, topic: str, partition: int = 0) -> list[RemoteSegment]:
    """The remote segments of ``topic``-``partition`` in a LocalTieredStorage root. A segment
    still being written counts up to its last sound batch; one without any is left out."""
    name = f"{topic}-{partition}-"
    found = []
    for folder in sorted(store.iterdir()) if store.is_dir() else ():
        if not (folder.name.startswith(name) and len(folder.name) == len(name) + TOPIC_ID_CHARS):
            continue
        for start, path in remote_segments(folder):
            try:
                ends = [b.last_offset for b in SegmentScanner(path, first_offset=start)
                        if not b.corrupt and b.crc_ok]
            except FileNotFoundError:  # deleted by the broker meanwhile (below the log start)
                continue
            if ends:
                found.append(RemoteSegment(start, max(ends), path))
    return sorted(found, key=lambda s: (s.start, s.end))


def tier_problems(view: TierView) -> list[str]:
    """What one observation breaks, each as expected / seen:

    - the local log start lies between the log start and the high watermark
      (earliest-local >= earliest);
    - no remote segment holds an offset at or past the high watermark (never tier data that
      replication may still truncate);
    - every offset from the log start to the local start - 1 is in a remote segment: no gap
      between the remote tier and the local log (no local segment covered by tiered data is
      deleted before the remote copy exists, so every offset >= the log start is readable).
    """
    problems = []
    if not view.log_start <= view.local_start <= view.high_watermark:
        problems.append(f"local log start (earliest-local) expected between the log start "
                        f"{view.log_start} and the high watermark {view.high_watermark}, seen "
                        f"{view.local_start}")
    for seg in view.segments:
        if seg.end >= view.high_watermark:
            problems.append(f"remote segment {seg.path.name} holds offsets {seg.start}.."
                            f"{seg.end}: expected none at or past the high watermark "
                            f"{view.high_watermark}")
    span = view.remote_only
    if span is not None:
        missing = missing_offsets(span, view.segments)
        if missing:
            problems.append(f"offsets {missing[0]}..{missing[1]} are below the local log start "
                            f"{view.local_start} and at or above the log start "
                            f"{view.log_start}: expected in the remote tier, seen in no remote "
                            f"segment (remote tier: {describe(view.segments)})")
    return problems


def missing_offsets(span: tuple[int, int], segments: tuple[RemoteSegment, ...]
                    ) -> tuple[int, int] | None:
    """The first run [first, last] of offsets in ``span`` that no segment holds, or None."""
    offset, last = span
    for seg in sorted(segments, key=lambda s: s.start):
        if seg.start > offset:
            break
        offset = max(offset, seg.end + 1)
    if offset > last:
        return None
    following = [s.start for s in segments if s.start > offset]
    return offset, min([last, *(s - 1 for s in following)])


def describe(segments: tuple[RemoteSegment, ...]) -> str:
    return ", ".join(f"{s.start}..{s.end}" for s in segments) or "empty"
