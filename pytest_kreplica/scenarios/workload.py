"""The C.1 workload: one producer and one concurrent consumer (kafka-python) writing the run
directory of shared/HISTORY.md as they go.

The producer sends ``messages`` unique ids round-robin over every (topic, partition) of the
case, with the case's acks, compression, idempotence and mode (sync waits for each send,
async records from callbacks). A send is ``ok`` only with a broker offset, ``fail`` only when
it was definitely not written, ``info`` for everything ambiguous: the workload never guesses.
The consumer reads every partition from the beginning by manual assignment while the
producer runs, then drains until every acknowledged id was seen, the consumer has read up to
every partition's readable end (the rest is gone), or the drain deadline ends.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..cluster.clients import close_producer
from ..history import RunWriter, now_ns
from ..matrix import Case
from .sends import ProduceStats, Sends, classify, record_id, record_value

#: the producer's side lives in ``sends.py``; its names are read from here too
__all__ = ["CONSUMER_PROCESS", "Consumer", "DELIVERY_TIMEOUT_MS", "MAX_BLOCK_MS",
           "PRODUCER_PROCESS", "ProduceStats", "REQUEST_TIMEOUT_MS", "classify", "produce",
           "producer_config", "record_id", "record_value"]

PRODUCER_PROCESS = 0
CONSUMER_PROCESS = 1

# client timeouts, in ms: every request and every wait is bounded
REQUEST_TIMEOUT_MS = 15_000
DELIVERY_TIMEOUT_MS = 60_000
MAX_BLOCK_MS = 15_000
# the drain first asks where the partitions end after this long (most drains end sooner
# with every id seen), then this often
DRAIN_FIRST_LOOK_S = 0.5
DRAIN_LOOK_EVERY_S = 0.5


def _targets(topics: Sequence[str], partitions: int) -> list[tuple[str, int]]:
    return [(t, p) for t in topics for p in range(partitions)]


def producer_config(case: Case, bootstrap: str) -> dict[str, Any]:
    return {
        "bootstrap_servers": bootstrap.split(","),
        "client_id": "kreplica-producer",
        "acks": "all" if case.acks == -1 else case.acks,
        "compression_type": None if case.compression == "none" else case.compression,
        "enable_idempotence": bool(case.idempotence),
        "linger_ms": 0 if case.producer_mode == "sync" else 5,
        "request_timeout_ms": REQUEST_TIMEOUT_MS,
        "delivery_timeout_ms": DELIVERY_TIMEOUT_MS,
        "max_block_ms": MAX_BLOCK_MS,
        "reconnect_backoff_max_ms": 1000,
        # at-most-once cases (acks 1/0 under faults) never retry: a retry may duplicate
        "retries": 2**31 - 1 if case.idempotence else (
            0 if getattr(case, "semantics", None) == "at-most-once" else 5),
    }


def produce(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
            stats: ProduceStats | None = None, stop: threading.Event | None = None,
            process: int = PRODUCER_PROCESS, keep_going: Callable[[], bool] | None = None,
            max_rate: float | None = None) -> ProduceStats:
    """Send the case's messages; every attempt becomes one ``sends`` row. With
    ``keep_going``, sending continues past ``messages`` while it returns true (faults are
    still being injected); ``max_rate`` caps sends per second so such a run stays small."""
    from kafka import KafkaProducer

    stats = stats or ProduceStats()
    targets = _targets(topics, case.partitions)
    producer = KafkaProducer(**producer_config(case, bootstrap))
    writer.event("start", process=process, detail=f"producer {case.producer_mode} "
                                                  f"acks={case.acks} {case.compression}")
    answer_s = DELIVERY_TIMEOUT_MS / 1000 + 5
    sends = Sends(producer, writer, stats, process,
                  wait_s=answer_s if case.producer_mode == "sync" else None)
    try:
        for i in _paced(case.messages, stop, keep_going, max_rate):
            topic, partition = targets[i % len(targets)]
            sends.send(str(i), topic, partition, case.message_bytes)
        sends.await_all(answer_s)
    finally:
        sends.write_off()
        trouble = close_producer(producer, 10.0)
        writer.event("stop", process=process, detail=trouble or "producer closed")
    return stats


def _paced(messages: int, stop: threading.Event | None,
           keep_going: Callable[[], bool] | None, max_rate: float | None) -> Iterator[int]:
    """The indexes to send: ``messages`` of them, more while ``keep_going``, none after
    ``stop``; at most ``max_rate`` a second."""
    started = time.monotonic()
    i = -1
    while True:
        i += 1
        if i >= messages and (keep_going is None or not keep_going()):
            return
        if stop is not None and stop.is_set():
            return
        if max_rate:
            ahead = started + i / max_rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        yield i


class Consumer:
    """Reads every partition of ``topics`` from the beginning in a background thread.

    ``drain(acked_ids, timeout)`` is called once the producer is done: it waits until every
    acknowledged id was polled or the deadline passed, then stops and closes the client.
    """

    def __init__(self, topics: Sequence[str], partitions: int,
                 bootstrap: Callable[[], str], writer: RunWriter,
                 process: int = CONSUMER_PROCESS, isolation_level: str = "read_uncommitted"):
        self.targets = _targets(topics, partitions)
        self.isolation_level = isolation_level  # read_committed: skip aborted transactions
        self.bootstrap = bootstrap
        self.writer = writer
        self.process = process
        self.seen: set[str] = set()
        self.polled = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._progress = threading.Condition(self._lock)
        self._positions: dict[tuple[str, int], int] = {}
        # the client's fetch position after each poll (past control records too)
        self._fetch_positions: dict[tuple[str, int], int] = {}
        self._thread = threading.Thread(target=self._run, name="kreplica-consumer",
                                        daemon=True)

    def start(self) -> Consumer:
        self._thread.start()
        return self

    def _client(self):
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap().split(","), client_id="kreplica-consumer",
            group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
            request_timeout_ms=REQUEST_TIMEOUT_MS, session_timeout_ms=10_000,
            fetch_max_wait_ms=100, reconnect_backoff_max_ms=1000, max_poll_records=2000,
            isolation_level=self.isolation_level)
        tps = [TopicPartition(t, p) for t, p in self.targets]
        consumer.assign(tps)
        for tp in tps:
            position = self._positions.get((tp.topic, tp.partition))
            if position is None:
                consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, position)
        self.writer.event("assign", process=self.process,
                          detail=" ".join(f"{t}:{p}" for t, p in self.targets))
        return consumer

    def _run(self) -> None:
        poll_no = 0
        consumer = None
        while not self._stop.is_set():
            try:
                if consumer is None:
                    consumer = self._client()
                batches = consumer.poll(timeout_ms=200)
            except Exception as exc:  # a broken client is replaced; the crash is an event
                self.errors.append(repr(exc))
                self.writer.event("client-crash", process=self.process,
                                  detail=f"consumer: {exc!r}")
                if consumer is not None:
                    _close_quietly(consumer)
                consumer = None
                self._stop.wait(0.5)
                continue
            poll_no += 1
            returned = now_ns()
            index = 0
            ids = []
            for tp, records in batches.items():
                for record in records:
                    message_id = record_id(record.value)
                    self.writer.poll(self.process, poll_no, tp.topic, tp.partition,
                                     record.offset, message_id, returned, index)
                    self._positions[(tp.topic, tp.partition)] = record.offset + 1
                    ids.append(message_id)
                    index += 1
            positions = _fetch_positions(consumer)
            with self._progress:
                self._fetch_positions.update(positions)
                if ids:
                    self.seen.update(ids)
                    self.polled += len(ids)
                self._progress.notify_all()
        if consumer is not None:
            _close_quietly(consumer)

    def missing(self, ids: set[str]) -> set[str]:
        """The ids of ``ids`` not polled yet (thread-safe)."""
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
                if not self._thread.is_alive():
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

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)


def _fetch_positions(consumer: Any) -> dict[tuple[str, int], int]:
    """The client's position (next offset it returns) of each assigned partition that
    has one; no network wait."""
    positions = {}
    for tp in consumer.assignment():
        with contextlib.suppress(Exception):  # no position yet: the partition counts as 0
            position = consumer.position(tp, timeout_ms=0)
            if position is not None:
                positions[(tp.topic, tp.partition)] = position
    return positions


def _close_quietly(client: Any) -> None:
    # closing a client that lost its brokers may raise; it is gone anyway
    with contextlib.suppress(Exception):
        client.close()
