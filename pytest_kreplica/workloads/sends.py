"""The producer's side of the history: record values, how an error is classified, the
counts, and the sends in flight, each of which ends as exactly one ``sends`` row."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..history import RunWriter, now_ns

# broker / client answers that prove the record was not appended (a single attempt)
_DEFINITE_FAILURES = ("NotEnoughReplicasError", "InvalidTopicError", "MessageSizeTooLargeError",
                      "RecordListTooLargeError", "TopicAuthorizationFailedError",
                      "InvalidRequiredAcksError", "CorruptRecordError")

def record_value(message_id: str, size: int) -> bytes:
    """The id, then (to reach ``size`` bytes) one space and padding (HISTORY "Record values")."""
    value = message_id.encode()
    if size > len(value) + 1:
        value += b" " + b"x" * (size - len(value) - 1)
    return value


def record_id(value: bytes | None) -> str:
    """The id of a record value: everything up to the first space."""
    return (value or b"").split(b" ", 1)[0].decode("utf-8", "replace")


def classify(error: BaseException, before_send: bool = False, retried: bool = False) -> str:
    """``fail`` when the record was definitely not written, else ``info``. A producer that
    retries reports only its last attempt's error: an earlier attempt may have been
    appended (seen under a slowed leader: NOT_LEADER, then NotEnoughReplicas, and the
    record at its offset), so with ``retried`` a broker's answer proves nothing."""
    if before_send or (not retried and type(error).__name__ in _DEFINITE_FAILURES):
        return "fail"
    return "info"


@dataclass
class ProduceStats:
    sent: int = 0
    ok: int = 0
    failed: int = 0
    info: int = 0
    acked_ids: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, status: str, message_id: str) -> None:
        with self.lock:
            if status == "ok":
                self.ok += 1
                self.acked_ids.add(message_id)
            elif status == "fail":
                self.failed += 1
            else:
                self.info += 1


class Sends:
    """The attempts in flight of one producer: each ends as one ``sends`` row, written
    once, by its answer or (``write_off``) as ``info`` when the producer stops first.
    ``wait_s`` makes every send wait for its answer (the sync mode)."""

    def __init__(self, producer: Any, writer: RunWriter, stats: ProduceStats, process: int,
                 wait_s: float | None = None):
        self.producer, self.writer, self.stats = producer, writer, stats
        self.process, self.wait_s = process, wait_s
        self.pending: dict[str, tuple[str, int, int]] = {}
        self.lock = threading.Lock()

    def send(self, message_id: str, topic: str, partition: int, size: int) -> None:
        """One attempt: a record of ``size`` bytes carrying ``message_id``."""
        invoke = now_ns()
        with self.lock:
            self.pending[message_id] = (topic, partition, invoke)
        self.stats.sent += 1
        try:
            future = self.producer.send(topic, value=record_value(message_id, size),
                                        partition=partition)
        except Exception as exc:  # raised before the record left this process
            with self.lock:
                self.pending.pop(message_id, None)
            self.writer.send(self.process, topic, partition, message_id, None,
                             classify(exc, before_send=True), invoke, now_ns(),
                             f"{type(exc).__name__}: {exc}")
            self.stats.count("fail", message_id)
            return
        if self.wait_s is not None:
            try:
                meta = future.get(timeout=self.wait_s)
                self.complete(message_id, topic, partition, invoke, meta.offset, None)
            except Exception as exc:
                self.complete(message_id, topic, partition, invoke, None, exc)
        else:
            future.add_callback(_on_ok(self.complete, message_id, topic, partition, invoke))
            future.add_errback(_on_error(self.complete, message_id, topic, partition, invoke))

    def complete(self, message_id: str, topic: str, partition: int, invoke: int,
                 offset: int | None, error: BaseException | None) -> None:
        with self.lock:
            if self.pending.pop(message_id, None) is None:
                return  # already written off at the flush deadline
        if error is None and offset is not None and offset >= 0:
            status, text = "ok", None
        elif error is None:  # acks=0: the broker never answers
            status, text = "info", "acks=0: no acknowledgement"
            offset = None
        else:
            status = classify(error, retried=self.producer.config.get("retries", 0) > 0)
            text = f"{type(error).__name__}: {error}"
            offset = None
        self.writer.send(self.process, topic, partition, message_id, offset, status, invoke,
                         now_ns(), text)
        self.stats.count(status, message_id)

    def await_all(self, timeout: float) -> None:
        _await_completion(self.producer, self.pending, self.lock, timeout)

    def write_off(self) -> None:
        """Every send still unanswered becomes an ``info`` row."""
        with self.lock:
            leftovers = list(self.pending.items())
            self.pending.clear()
        for message_id, (topic, partition, invoke) in leftovers:
            self.writer.send(self.process, topic, partition, message_id, None, "info", invoke,
                             now_ns(), "not completed when the producer stopped")
            self.stats.count("info", message_id)


def _await_completion(producer: Any, pending: dict, lock: threading.Lock, timeout: float) -> None:
    """Flush, then wait (bounded) until every callback has fired. kafka-python 3.0.12's
    ``flush`` can raise ``UnknownError('Future not done')`` while a batch completes (its
    latch is set before ``is_done``), so the callbacks themselves are the measure."""
    deadline = time.monotonic() + timeout
    with contextlib.suppress(Exception):  # judged below by what is still pending
        producer.flush(timeout=timeout)
    while time.monotonic() < deadline:
        with lock:
            if not pending:
                return
        time.sleep(0.05)


def _on_ok(complete: Callable[..., None], *args: Any) -> Callable[[Any], None]:
    return lambda meta: complete(*args, meta.offset, None)


def _on_error(complete: Callable[..., None], *args: Any) -> Callable[[BaseException], None]:
    return lambda exc: complete(*args, None, exc)
