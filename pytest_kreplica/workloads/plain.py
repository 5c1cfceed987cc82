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

from ..cluster.admin import idempotence
from ..cluster.admin.clients import close_producer
from ..history import RunWriter, now_ns
from ..matrix import Case
from .protocol import Workload
from .reader import DrainingReader, targets
from .sends import ProduceStats, Sends, classify, record_id, record_value

#: the producer's side lives in ``sends.py``; its names are read from here too
__all__ = ["CLIENT", "CONSUMER_PROCESS", "Consumer", "DELIVERY_TIMEOUT_MS", "MAX_BLOCK_MS",
           "PRODUCER_PROCESS", "ProduceStats", "REQUEST_TIMEOUT_MS", "WORKLOAD", "classify",
           "client_version", "produce", "producer_config", "producer_retries", "record_id",
           "record_value"]

CLIENT = "kafka-python"

PRODUCER_PROCESS = 0
CONSUMER_PROCESS = 1

# client timeouts, in ms: every request and every wait is bounded
REQUEST_TIMEOUT_MS = 15_000
DELIVERY_TIMEOUT_MS = 60_000
MAX_BLOCK_MS = 15_000


def client_version(case: Case) -> str:
    """run.json's ``client.version``: the installed kafka-python's."""
    import kafka  # heavy: loaded when a case runs

    return kafka.__version__


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
        "retries": producer_retries(case),
    }


def producer_retries(case: Case) -> int:
    """Every client's retries: unbounded when idempotent (the broker drops duplicates),
    none for at-most-once cases (acks 1/0 under faults: a retry may duplicate), else 5."""
    if case.idempotence:
        return 2**31 - 1
    return 0 if getattr(case, "semantics", None) == "at-most-once" else 5


def produce(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
            stats: ProduceStats | None = None, stop: threading.Event | None = None,
            process: int = PRODUCER_PROCESS, keep_going: Callable[[], bool] | None = None,
            max_rate: float | None = None) -> ProduceStats:
    """Send the case's messages; every attempt becomes one ``sends`` row. With
    ``keep_going``, sending continues past ``messages`` while it returns true (faults are
    still being injected); ``max_rate`` caps sends per second so such a run stays small."""
    from kafka import KafkaProducer

    idempotence.install()
    stats = stats or ProduceStats()
    pairs = targets(topics, case.partitions)
    config = producer_config(case, bootstrap)
    producer = KafkaProducer(**config)
    writer.event("start", process=process, detail=f"producer {case.producer_mode} "
                                                  f"acks={case.acks} {case.compression}")
    answer_s = DELIVERY_TIMEOUT_MS / 1000 + 5
    sends = Sends(producer, writer, stats, process,
                  wait_s=answer_s if case.producer_mode == "sync" else None)
    try:
        for i in _paced(case.messages, stop, keep_going, max_rate):
            if idempotence.unusable(sends.producer):
                _replace_producer(sends, lambda: KafkaProducer(**config), process)
            topic, partition = pairs[i % len(pairs)]
            sends.send(str(i), topic, partition, case.message_bytes)
        sends.await_all(answer_s)
    finally:
        sends.write_off()
        trouble = close_producer(sends.producer, 10.0)
        writer.event("stop", process=process, detail=trouble or "producer closed")
    return stats


def _replace_producer(sends: Sends, new_producer: Callable[[], Any], process: int) -> None:
    """Kafka's advice for a producer in a fatal error: close it and build a new one. Its
    unanswered sends are written off (``info``: they may have been written)."""
    error = idempotence.fatal_error(sends.producer)
    sends.write_off()
    trouble = close_producer(sends.producer, 10.0)
    sends.writer.event("client-crash", process=process,
                       detail=f"producer: fatal error {error}; replaced by a new producer"
                              + (f" ({trouble})" if trouble else ""))
    sends.producer = new_producer()


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


class Consumer(DrainingReader):
    """Reads every partition of ``topics`` from the beginning in a background thread.

    ``drain(acked_ids, timeout)`` (``reader.DrainingReader``) is called once the producer
    is done: it waits until every acknowledged id was polled or the deadline passed, then
    stops and closes the client.
    """

    def __init__(self, topics: Sequence[str], partitions: int,
                 bootstrap: Callable[[], str], writer: RunWriter,
                 process: int = CONSUMER_PROCESS, isolation_level: str = "read_uncommitted"):
        super().__init__(writer, process)
        self.targets = targets(topics, partitions)
        self.isolation_level = isolation_level  # read_committed: skip aborted transactions
        self.bootstrap = bootstrap
        self._stop = threading.Event()
        self._positions: dict[tuple[str, int], int] = {}
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
        # one call for every partition: kafka-python checks each named partition against
        # the whole assignment, which is quadratic at the plan's 10,000 partitions
        consumer.seek_to_beginning()
        _seek_known(consumer, {tp: self._positions[(tp.topic, tp.partition)] for tp in tps
                               if (tp.topic, tp.partition) in self._positions})
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
            # the client's fetch position after each poll (past control records too)
            self.note_polled(ids, _fetch_positions(consumer))
        if consumer is not None:
            _close_quietly(consumer)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)


def _fetch_positions(consumer: Any) -> dict[tuple[str, int], int]:
    """The client's position (next offset it returns) of each assigned partition that
    has one; no network wait.

    kafka-python's public ``position(tp)`` scans the whole assignment on every call, so
    asking it for each partition after each poll is quadratic: about 100 s a poll at
    10,000 partitions, and such a consumer never returns a record. The subscription
    state's ``all_consumed_offsets()`` (what ``commit()`` sends) gives every position in
    one pass; the public call is the fallback for a client without it."""
    subscription = getattr(consumer, "_subscription", None)
    consumed = getattr(subscription, "all_consumed_offsets", None)
    if consumed is not None:
        return {(tp.topic, tp.partition): meta.offset for tp, meta in consumed().items()}
    positions = {}
    for tp in consumer.assignment():
        with contextlib.suppress(Exception):  # no position yet: the partition counts as 0
            position = consumer.position(tp, timeout_ms=0)
            if position is not None:
                positions[(tp.topic, tp.partition)] = position
    return positions


def _seek_known(consumer: Any, positions: dict[Any, int]) -> None:
    """Set a rebuilt client back to the positions the last one reached.

    kafka-python's public ``seek(tp, offset)`` checks the partition against a fresh set of
    the whole assignment on every call: quadratic, about 12 s for a 10,000-partition
    assignment. The subscription state's own ``seek`` is one step a partition; the public
    call is the fallback for a client without it."""
    subscription = getattr(consumer, "_subscription", None)
    assignment = getattr(subscription, "assignment", None)
    if isinstance(assignment, dict) and all(tp in assignment for tp in positions):
        for tp, offset in positions.items():
            assignment[tp].seek(offset)
        return
    for tp, offset in positions.items():
        consumer.seek(tp, offset)


def _close_quietly(client: Any) -> None:
    # closing a client that lost its brokers may raise; it is gone anyway
    with contextlib.suppress(Exception):
        client.close()


WORKLOAD = Workload(client=CLIENT, client_version=client_version, produce=produce,
                    consumer=Consumer)
