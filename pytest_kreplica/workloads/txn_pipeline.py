"""The ``txn_pipeline`` workload (matrix ``workload: txn_pipeline``): the ``txn``
workload plus a read-process-write pipeline, Kafka's exactly-once recipe.

The transactional producers write into every topic but the last. The pipeline is a
read_committed consumer in a group of its own and a transactional producer: it polls a batch
and, in one transaction, writes a copy of each record into the last topic (same partition
number; the copy's send names its ``source`` id), waits for every copy's acknowledgement
(kafka-python would commit a transaction whose copy failed: ``txn.settle_sends``), commits
its consumer positions with ``send_offsets_to_transaction`` and commits the transaction, or
aborts it by a seeded coin (1 in 8) and rewinds to the batch's first offsets. When a
transaction fails, both clients are rebuilt: the new producer (same transactional id) fences
the old one and settles its open transaction, then the new consumer resumes at the group's
committed positions. Each incarnation (after an abort or a rebuild) polls as a new process
(5, 105, 205, ...): a rewind starts a new reader, it is not a nonmonotonic poll of the old
one. Every poll of the pipeline carries its transaction (polls ``txn``), the write-read
edges of the cycle checker.

The group members and the observer of ``txn`` read every topic, copies included; production
ends once the pipeline has copied every committed input record (or a bounded wait passed:
the checker then judges what is missing).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ClusterError
from ..history import RunWriter, now_ns
from ..matrix import Case
from ..waits import wait_until
from . import plain, txn
from .plain import REQUEST_TIMEOUT_MS, ProduceStats, record_id, record_value
from .protocol import Workload
from .txn import (
    Consumer,
    after_failure,
    bounded,
    end_transaction,
    record_transaction,
    settle_sends,
)

HISTORY_VERSION = 2
PIPELINE_PROCESS, INCARNATION_STEP = 5, 100
ABORT_SHARE = 0.125
BATCH = 20
CATCH_UP_S = 45.0
POLL_TIMEOUT_S = 20.0
IDLE_S = 15.0  # nothing read while input is owed: the consumer is rebuilt
RC = "read_committed"
__all__ = ["Consumer", "HISTORY_VERSION", "Pipeline", "WORKLOAD", "coordinator_keys",
           "await_copies", "owed_inputs", "pipeline_id", "pipeline_topics", "produce",
           "run_meta"]


def produce(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
            stats: ProduceStats | None = None, stop: threading.Event | None = None,
            process: int = txn.PRODUCER_PROCESSES[0],
            keep_going: Callable[[], bool] | None = None,
            max_rate: float | None = None) -> ProduceStats:
    """The ``txn`` producers into ``topics[:-1]`` while the pipeline copies into the last."""
    inputs, output = pipeline_topics(topics)
    stats = stats or ProduceStats()
    pipeline = Pipeline(case, inputs, output, bootstrap, writer, stats).start()
    try:
        txn.produce(case, inputs, bootstrap, writer, stats, stop, process, keep_going,
                    max_rate)
        pipeline.catch_up(CATCH_UP_S)
    finally:
        pipeline.stop()
    return stats



def pipeline_topics(topics: Sequence[str]) -> tuple[list[str], str]:
    """The pipeline's inputs (every topic but the last) and its output (the last)."""
    if len(topics) < 2:
        raise ValueError(f"workload txn_pipeline needs topics >= 2, got {len(topics)}")
    return list(topics[:-1]), topics[-1]


def owed_inputs(stats: ProduceStats, lock: threading.Lock, *settled: set[str]) -> set[str]:
    """The committed input records in none of ``settled`` (copies acknowledged, sources
    copied, sources whose copy may have committed): those the pipeline still owes."""
    with stats.lock:
        acked = set(stats.acked_ids)
    with lock:
        return acked.difference(*settled)


def await_copies(writer: RunWriter, owed: Callable[[], set[str]], alive: Callable[[], bool],
                 copied: Callable[[], int], timeout: float, ended: str) -> None:
    """Wait until every committed input record has a committed copy (or the copier ended,
    ``ended`` says how); a time-out is an event (the checker judges what is missing), not
    an error."""
    try:
        wait_until(lambda: not owed() or not alive(), timeout,
                   "the pipeline to copy every committed input record",
                   lambda: f"{len(owed())} committed input records not copied")
        detail = (f"every committed input record copied, {copied()} in all"
                  if not owed() else ended)
    except ClusterError as exc:
        detail = str(exc)
    writer.event("pipeline-caught-up", process=PIPELINE_PROCESS, detail=detail)


class Pipeline:
    """The copier of the module docstring, in a thread until ``stop``."""

    def __init__(self, case: Case, inputs: list[str], output: str, bootstrap: str,
                 writer: RunWriter, stats: ProduceStats):
        self.case, self.inputs, self.output = case, inputs, output
        self.bootstrap, self.writer, self.stats = bootstrap, writer, stats
        self.group = self.transactional_id = pipeline_id(output)
        self.copied: set[str] = set()  # source ids with a committed copy
        self.copies: set[str] = set()  # the pipeline's own record ids
        self.maybe: set[str] = set()  # sources of indeterminate copies: not waited for
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.process = PIPELINE_PROCESS - INCARNATION_STEP
        self._rng = random.Random(case.seed * 1000 + PIPELINE_PROCESS)
        self._txns = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="kreplica-txn-pipeline")

    def start(self) -> Pipeline:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def owed(self) -> set[str]:
        """Committed input records without a committed copy yet."""
        return owed_inputs(self.stats, self.lock, self.copies, self.copied, self.maybe)

    def catch_up(self, timeout: float) -> None:
        await_copies(self.writer, self.owed, self._thread.is_alive, lambda: len(self.copied),
                     timeout, "the pipeline thread ended")

    def _clients(self) -> tuple[Any, Any]:
        """A fresh producer first (fencing the old one and settling its open transaction),
        then a consumer that resumes at the group's committed positions."""
        from kafka import KafkaConsumer

        producer = txn.transactional_producer(self.case, self.bootstrap, self.transactional_id)
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap.split(","), client_id="kreplica-pipeline",
            group_id=self.group, enable_auto_commit=False, auto_offset_reset="earliest",
            isolation_level=RC, request_timeout_ms=REQUEST_TIMEOUT_MS,
            session_timeout_ms=10_000, heartbeat_interval_ms=1_000, fetch_max_wait_ms=100,
            reconnect_backoff_max_ms=1000, max_poll_records=BATCH)
        consumer.subscribe(self.inputs)
        self._next_incarnation("started")
        return consumer, producer

    def _next_incarnation(self, why: str) -> None:
        self.process += INCARNATION_STEP
        self.writer.event("start", process=self.process,
                          detail=f"pipeline {self.transactional_id} {why}")

    def _run(self) -> None:
        consumer = producer = None
        last_read = time.monotonic()
        while not self._stop.is_set():
            try:
                if consumer is None:
                    consumer, producer = self._clients()
                    last_read = time.monotonic()
                batches = _bounded_poll(consumer)
                generation = consumer.group_metadata().generation_id
            except Exception as exc:  # noqa: BLE001 - a broken client is rebuilt, an event
                consumer, producer = self._crashed(consumer, producer, repr(exc))
                continue
            records = [r for rs in batches.values() for r in rs]
            if not records:
                if time.monotonic() - last_read > IDLE_S and self.owed():
                    consumer, producer = self._crashed(consumer, producer, _idle(consumer))
                continue
            last_read = time.monotonic()
            usable, committed = self._copy(consumer, producer, records, generation)
            if not usable:
                consumer, producer = self._crashed(consumer, producer,
                                                   "after a failed transaction")
            elif not committed:  # aborted: rewind to the batch's first offsets
                firsts: dict[Any, int] = {}
                for r in records:
                    firsts.setdefault(_tp(r), r.offset)
                for tp, offset in firsts.items():
                    consumer.seek(tp, offset)
                self._next_incarnation("rewound after an abort")
        _close(consumer, producer)

    def _crashed(self, consumer: Any, producer: Any, why: str):
        self.errors.append(why)
        self.writer.event("client-crash", process=self.process,
                          detail=f"pipeline clients rebuilt: {why}")
        _close(consumer, producer)
        self._stop.wait(0.5)
        return None, None

    def _copy(self, consumer: Any, producer: Any, records: list[Any], generation: int
              ) -> tuple[bool, bool]:
        """One copy transaction, recorded: (producer still usable, committed)."""
        from kafka.structs import OffsetAndMetadata

        self._txns += 1
        name = f"C{PIPELINE_PROCESS}-T{self._txns:06d}"
        returned = now_ns()
        for i, r in enumerate(records):
            self.writer.poll(self.process, self._txns, r.topic, r.partition, r.offset,
                             record_id(r.value), returned, i, isolation=RC,
                             generation=generation, txn=name)
        commit = self._rng.random() >= ABORT_SHARE
        positions: dict[Any, int] = {}
        for r in records:
            positions[_tp(r)] = r.offset + 1
        offsets = [(tp.topic, tp.partition, o) for tp, o in positions.items()]
        begin, end_ns, error, usable = now_ns(), None, None, True
        sent: list[tuple[str, str, int, int, Any]] = []
        sources = [record_id(r.value) for r in records]
        try:
            producer.begin_transaction()
            for i, r in enumerate(records):
                cid = f"{name}-{i}"
                sent.append((cid, self.output, r.partition, now_ns(), producer.send(
                    self.output, value=record_value(cid, self.case.message_bytes),
                    partition=r.partition)))
            # kafka-python would commit a transaction whose copy failed (settle_sends)
            settle_sends([future for *_, future in sent])
            committing = {tp: OffsetAndMetadata(o, "", -1) for tp, o in positions.items()}
            group = consumer.group_metadata()
            bounded(lambda: producer.send_offsets_to_transaction(committing, group),
                    "send_offsets_to_transaction")
            end_ns = now_ns()
            outcome = end_transaction(producer, commit)
        except Exception as exc:  # noqa: BLE001 - recorded as the transaction's error
            error = repr(exc)
            outcome, usable = after_failure(producer, commit, end_ns is not None)
        with self.lock:
            self.copies.update(cid for cid, *_ in sent)
        record_transaction(self.writer, self.stats, self.process, name, outcome, sent, begin,
                           end_ns, error, sources=sources[:len(sent)], offsets=offsets)
        with self.lock:
            {"committed": self.copied, "info": self.maybe}.get(outcome, set()).update(sources)
        return usable, outcome == "committed"


def _idle(consumer: Any) -> str:
    """Why an idle pipeline is rebuilt, with what its consumer says of itself."""
    try:
        held = sorted(f"{tp.topic}:{tp.partition}" for tp in consumer.assignment())
        state = consumer.group_metadata().state
    except Exception as exc:  # noqa: BLE001 - only a diagnosis
        held, state = [], f"unknown ({exc!r})"
    return (f"nothing read for {IDLE_S:.0f} s while committed input records are owed "
            f"(assignment {' '.join(held) or 'none'}, member state {state})")


def _bounded_poll(consumer: Any) -> dict[Any, list[Any]]:
    """One poll. kafka-python's poll was seen never returning once the group's coordinator
    was SIGKILLed: it is bounded, and a stuck consumer is abandoned and rebuilt."""
    polled: list[dict[Any, list[Any]]] = []
    bounded(lambda: polled.append(consumer.poll(timeout_ms=200)), "the pipeline's poll",
            POLL_TIMEOUT_S)
    return polled[0]


def _tp(record: Any):
    from kafka.structs import TopicPartition

    return TopicPartition(record.topic, record.partition)


def _close(consumer: Any, producer: Any) -> None:
    """Close both clients, each within a bound (a stuck client is abandoned)."""
    if consumer is not None:
        with contextlib.suppress(Exception):
            bounded(lambda: consumer.close(autocommit=False), "the pipeline's consumer close",
                    10.0)
    if producer is not None:
        with contextlib.suppress(Exception):
            bounded(lambda: producer.close(timeout=5), "the pipeline's producer close", 10.0)


def run_meta(topics: Sequence[str]) -> dict[str, Any]:
    """run.json's ``pipeline``: the topics it reads, so the checker can ask that every
    committed record of them was copied (``not_copied``)."""
    return {"pipeline": {"inputs": list(topics[:-1]), "output": topics[-1]}}


def coordinator_keys(topics: Sequence[str]) -> dict[str, str]:
    """The coordinators of the pipeline's group and of its transactions: where its
    consumer positions are committed inside its transactions."""
    key = pipeline_id(topics[-1])
    return {"group_coordinator": key, "txn_coordinator": key}


def pipeline_id(output: str) -> str:
    """The pipeline's group id and transactional id (one key for both coordinators)."""
    return f"kr-pipeline-{output}"[:200]


WORKLOAD = Workload(client=plain.CLIENT, client_version=plain.client_version,
                    produce=produce, consumer=Consumer, history_version=HISTORY_VERSION,
                    run_meta=run_meta, coordinator_keys=coordinator_keys)
