"""A (read_committed) member of a consumer group for the ``txn`` workload.

It ``subscribe``s (the group coordinator assigns partitions, rebalances move them), records
every poll with its isolation level and the group generation, and every rebalance as an
event carrying the partitions it holds afterwards (history version 2), so the checker can
exempt exactly the partitions whose owner changed. On revocation it commits its positions;
on assignment it resumes a partition it kept at its own position, so a skip or a rewind
across a rebalance that kept a partition is an anomaly, not client noise.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from ..history import RunWriter, now_ns
from .plain import REQUEST_TIMEOUT_MS, record_id

RC = "read_committed"


class GroupReader:
    """One group member (``process``) reading ``topics`` in a thread until ``stop``."""

    def __init__(self, topics: list[str], group: str, bootstrap: Callable[[], str],
                 writer: RunWriter, process: int, isolation: str = RC):
        self.topics, self.group, self.bootstrap = topics, group, bootstrap
        self.isolation = isolation  # read_uncommitted only to show what such readers see
        self.writer, self.process = writer, process
        self.seen: set[str] = set()
        self.polled = 0
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.progress = threading.Condition(self.lock)
        self._positions: dict[Any, int] = {}  # partition -> next offset this member returns
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"kreplica-group-{process}")

    def start(self) -> GroupReader:
        self._thread.start()
        return self

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _client(self):
        from kafka import KafkaConsumer
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap().split(","),
            client_id=f"kreplica-group-{self.process}", group_id=self.group,
            enable_auto_commit=False, auto_offset_reset="earliest", isolation_level=self.isolation,
            request_timeout_ms=REQUEST_TIMEOUT_MS, session_timeout_ms=10_000,
            heartbeat_interval_ms=1_000, max_poll_interval_ms=60_000, fetch_max_wait_ms=100,
            reconnect_backoff_max_ms=1000, max_poll_records=500)
        reader = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                # the next owner starts where this member stopped
                offsets = {tp: reader._offset(tp) for tp in revoked if tp in reader._positions}
                if offsets:
                    with contextlib.suppress(Exception):  # a failed commit: re-reads later
                        consumer.commit(offsets)

            def on_partitions_assigned(self, assigned):
                for tp in assigned:
                    if tp in reader._positions:
                        with contextlib.suppress(Exception):
                            consumer.seek(tp, reader._positions[tp])
                reader.writer.event(
                    "rebalance", process=reader.process, time_ns=now_ns(),
                    assignment=[(tp.topic, tp.partition) for tp in assigned],
                    generation=consumer.group_metadata().generation_id,
                    detail=f"group {reader.group}")

            def on_partitions_lost(self, lost):
                reader.writer.event("rebalance", process=reader.process, time_ns=now_ns(),
                                    assignment=[], detail=f"lost {len(lost)} partitions")

        consumer.subscribe(self.topics, listener=Listener())
        return consumer

    def _offset(self, tp):
        from kafka.structs import OffsetAndMetadata

        return OffsetAndMetadata(self._positions[tp], "", -1)

    def _run(self) -> None:
        poll_no, consumer = 0, None
        while not self._stop.is_set():
            try:
                if consumer is None:
                    consumer = self._client()
                batches = consumer.poll(timeout_ms=200)
                generation = consumer.group_metadata().generation_id
            except Exception as exc:  # a broken client is replaced; the crash is an event
                self.errors.append(repr(exc))
                self.writer.event("client-crash", process=self.process,
                                  detail=f"group consumer: {exc!r}")
                if consumer is not None:
                    with contextlib.suppress(Exception):
                        consumer.close(autocommit=False)
                consumer = None
                self._stop.wait(0.5)
                continue
            poll_no += 1
            returned, index, ids = now_ns(), 0, []
            for tp, records in batches.items():
                for record in records:
                    message_id = record_id(record.value)
                    self.writer.poll(self.process, poll_no, tp.topic, tp.partition,
                                     record.offset, message_id, returned, index,
                                     isolation=self.isolation, generation=generation)
                    self._positions[tp] = record.offset + 1
                    ids.append(message_id)
                    index += 1
            with self.progress:
                self.seen.update(ids)
                self.polled += len(ids)
                self.progress.notify_all()
        if consumer is not None:
            with contextlib.suppress(Exception):
                consumer.close(autocommit=False)
