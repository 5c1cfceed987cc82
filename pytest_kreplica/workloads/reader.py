"""The reader side every client's consumer shares: what it has seen, where it stands, and
the drain that ends a case's consume phase.

A client's consumer (kafka-python in a thread, Kafka's VerifiableConsumer in a JVM,
librdkafka in a child process) feeds ``note_polled`` with what each poll returned and
``note_positions`` with where the client stands; ``drain`` then waits (bounded) until every
acknowledged id was seen or the client stands at every partition's readable end. A subclass
says whether its client still runs (``alive``) and how it stops (``stop``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..history import RunWriter

__all__ = ["DRAIN_FIRST_LOOK_S", "DRAIN_LOOK_EVERY_S", "DrainingReader", "targets"]

# the drain first asks where the partitions end after this long (most drains end sooner
# with every id seen), then this often
DRAIN_FIRST_LOOK_S = 0.5
DRAIN_LOOK_EVERY_S = 0.5


def targets(topics: Iterable[str], partitions: int) -> list[tuple[str, int]]:
    """Every (topic, partition) of a case, in the order the workloads use."""
    return [(t, p) for t in topics for p in range(partitions)]


class DrainingReader:
    """``seen`` / ``polled`` / ``errors`` and the drain; thread-safe."""

    def __init__(self, writer: RunWriter, process: int):
        self.writer = writer
        self.process = process
        self.seen: set[str] = set()
        self.polled = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._progress = threading.Condition(self._lock)
        # the client's position (the next offset it reads) per partition
        self._fetch_positions: dict[tuple[str, int], int] = {}

    def alive(self) -> bool:
        """Whether the client still reads (a dead one ends the drain early)."""
        raise NotImplementedError

    def stop(self, timeout: float = 30.0) -> None:
        raise NotImplementedError

    def components(self) -> dict[str, Any]:
        """The client processes the nemesis may fail: none, unless the client runs in a
        process of its own (``Restartable``)."""
        return {}

    def note_polled(self, ids: list[str],
                    positions: dict[tuple[str, int], int] | None = None) -> None:
        """One poll's ids (already written as poll rows) and the positions after it."""
        with self._progress:
            if positions:
                self._fetch_positions.update(positions)
            if ids:
                self.seen.update(ids)
                self.polled += len(ids)
            self._progress.notify_all()

    def note_positions(self, positions: dict[tuple[str, int], int]) -> None:
        self.note_polled([], positions)

    def missing(self, ids: set[str]) -> set[str]:
        """The ids of ``ids`` not polled yet."""
        with self._lock:
            return ids - self.seen

    def drain(self, acked_ids: set[str], timeout: float,
              readable_ends: Callable[[], dict[tuple[str, int], int]] | None = None
              ) -> set[str]:
        """Wait until every id of ``acked_ids`` was polled, or (with ``readable_ends``) the
        consumer stands at every partition's readable end, or ``timeout`` seconds
        passed; stop the consumer; return the acknowledged ids never seen.

        ``readable_ends()`` returns, per partition, the offset past the last record that
        can ever be read without new writes, and raises while that is not known (a
        partition without a leader, records not yet replicated): an id missing once the
        consumer stands there is gone from every replica, and waiting longer cannot find
        it (an acks=1 case that lost records no longer waits out the whole timeout)."""
        self.writer.event("drain-start", process=self.process,
                          detail=f"waiting for {len(acked_ids)} acknowledged ids, "
                                 f"at most {timeout:.0f} s")
        deadline = time.monotonic() + timeout
        next_look = time.monotonic() + DRAIN_FIRST_LOOK_S
        read_up_to: str | None = None
        last_seen = "not asked yet"
        with self._progress:
            while not acked_ids <= self.seen and time.monotonic() < deadline:
                if not self.alive():
                    break
                if readable_ends is not None and time.monotonic() >= next_look:
                    read_up_to, last_seen = self._read_up_to(readable_ends)
                    if read_up_to is not None:
                        break
                    next_look = time.monotonic() + DRAIN_LOOK_EVERY_S
                self._progress.wait(min(0.2, max(0.0, deadline - time.monotonic())))
            missing = acked_ids - self.seen
        self.stop()
        if not missing:
            detail = "every acknowledged id seen"
        elif read_up_to is not None:
            detail = (f"read up to every partition's readable end ({read_up_to}), "
                      f"{len(missing)} acknowledged ids unseen")
        else:
            detail = f"deadline passed, {len(missing)} acknowledged ids unseen"
            if readable_ends is not None:
                detail += f"; last look at the readable ends: {last_seen}"
        self.writer.event("drain-end", process=self.process, detail=detail)
        return missing

    def _read_up_to(self, readable_ends: Callable[[], dict[tuple[str, int], int]]
                    ) -> tuple[str | None, str]:
        """(a description of the ends, when the consumer stands at every one of them;
        else None, and what was seen). Called with ``_progress`` held; the call to
        the cluster runs without it so the consumer keeps polling meanwhile."""
        self._progress.release()
        try:
            ends = readable_ends()
        except Exception as exc:  # not known yet: keep waiting, say why at the deadline
            return None, f"{type(exc).__name__}: {exc}"
        finally:
            self._progress.acquire()
        # past the end counts as not there: an unclean election truncated the log under
        # the consumer, which re-reads once it notices (or the deadline passes)
        behind = {f"{t}-{p}": (self._fetch_positions.get((t, p), 0), end)
                  for (t, p), end in ends.items()
                  if self._fetch_positions.get((t, p), 0) != end}
        if behind:
            return None, "position, end: " + ", ".join(
                f"{k} {pos}/{end}" for k, (pos, end) in sorted(behind.items())[:5])
        return " ".join(f"{t}-{p}:{e}" for (t, p), e in sorted(ends.items())), "caught up"
