"""The ``java`` client: Kafka's own VerifiableProducer and VerifiableConsumer of the case's
Kafka version (``kafka-tools``), each a JVM, writing the plain workload's history.

What the tools cannot do that the history contract and the matrix need, and how it is
handled:

- **ids**: the producer writes its message number (0, 1, ...) as the whole value; that is
  the id. It cannot pad a value, so ``message_bytes`` above 0 is refused at collection.
- **topics**: one ``--topic`` per JVM; a case with ``topics`` above 1 is refused rather than
  run as two JVMs per topic.
- **partitions**: the producer picks them (Kafka's default partitioner, no key), so sends
  are not round-robin; each send row carries the partition its answer named. A failed
  send's line names no partition: 0 stands for it (fail / info sends are judged by id).
- **sync mode**: the producer only sends with callbacks, so ``producer_mode: sync`` is
  refused; async cases run with linger.ms 5 like kafka-python's.
- **invoke time**: nothing is printed when a send is invoked, so a row's ``invoke_ns`` is
  the time its result line arrived (``complete_ns`` too).
- **acks, retries, idempotence, compression, timeouts**: ``--acks`` and a
  ``--producer.config`` file carry the case's values (the tool's own default is
  retries 0; the file sets ``workload.producer_retries``, and ``enable.idempotence``
  explicitly, since the Java client turns it on by default from 3.0).
- **what was sent**: results arrive per send; the ids sent but never answered are known
  from the ``tool_data`` line the shutdown hook prints (``sent``); each becomes ``info``.
- **reading**: VerifiableConsumer is a group member subscribed to the topic (not a manual
  assignment from the beginning): a fresh group with ``--reset-policy earliest``; its
  assignments become ``assign`` / ``rebalance`` events, and its position per partition is
  the offset after the last record it printed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..cluster import distribution
from ..errors import ClusterError
from ..history import RunWriter, now_ns
from ..matrix import Case
from .lines import client_log_dir, supervise
from .reader import DrainingReader
from .sends import ProduceStats
from .verifiable import (
    CONSUMER_CLASS,
    PRODUCER_CLASS,
    ConsumerLines,
    JavaClient,
    producer_result,
    write_properties,
)
from .workload import (
    CONSUMER_PROCESS,
    DELIVERY_TIMEOUT_MS,
    MAX_BLOCK_MS,
    PRODUCER_PROCESS,
    REQUEST_TIMEOUT_MS,
    producer_retries,
)

__all__ = ["CLIENT", "Consumer", "client_version", "consumer_options", "produce",
           "producer_properties"]

CLIENT = "java"
# no result line for this long while sends are outstanding: the JVM is stuck
IDLE_S = DELIVERY_TIMEOUT_MS / 1000 + 30
# the shutdown hook's close waits for every send in flight (each bounded by delivery.timeout)
CLOSE_S = DELIVERY_TIMEOUT_MS / 1000 + 15


def client_version(case: Case) -> str:
    """The Kafka version whose tools run (the case's, else the default)."""
    return case.kafka_version or distribution.default_version()


def consumer_options(case: Case) -> dict[str, Any]:
    """What ``Consumer`` takes beside the plain workload's arguments."""
    return {"version": case.kafka_version}


def producer_properties(case: Case) -> dict[str, Any]:
    return {"compression.type": case.compression, "linger.ms": 5,
            "enable.idempotence": str(bool(case.idempotence)).lower(),
            "retries": producer_retries(case), "request.timeout.ms": REQUEST_TIMEOUT_MS,
            "delivery.timeout.ms": DELIVERY_TIMEOUT_MS, "max.block.ms": MAX_BLOCK_MS,
            "reconnect.backoff.max.ms": 1000}



class ProducerLines:
    """The producer's lines -> send rows, counts, and what the tool says it sent."""

    def __init__(self, writer: Any, stats: ProduceStats, process: int, retried: bool):
        self.writer, self.stats, self.process, self.retried = writer, stats, process, retried
        self.reported: set[str] = set()
        self.sent: int | None = None  # from tool_data

    def on_event(self, event: dict[str, Any]) -> None:
        if event.get("name") == "tool_data":
            self.sent = int(event.get("sent", 0))
            return
        found = producer_result(event, retried=self.retried)
        if found is None:
            return
        topic, partition, message_id, offset, status, error = found
        done = now_ns()
        self.writer.send(self.process, topic, partition, message_id, offset, status, done,
                         done, error)
        self.reported.add(message_id)
        self.stats.sent += 1
        self.stats.count(status, message_id)

    def write_off(self, topic: str, upper: int) -> None:
        for i in range(upper):  # sent, never answered: indeterminate, not guessed
            if str(i) not in self.reported:
                self.writer.send(self.process, topic, 0, str(i), None, "info", now_ns(),
                                 now_ns(), "VerifiableProducer reported no result")
                self.stats.sent += 1
                self.stats.count("info", str(i))


def produce(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
            stats: ProduceStats | None = None, stop: threading.Event | None = None,
            process: int = PRODUCER_PROCESS, keep_going: Callable[[], bool] | None = None,
            max_rate: float | None = None) -> ProduceStats:
    """The case's sends through one VerifiableProducer JVM (the plain workload's
    signature); with ``keep_going`` it runs unbounded until that turns false."""
    stats = stats or ProduceStats()
    topic = topics[0]
    log_dir = client_log_dir(writer, CLIENT)
    config = write_properties(log_dir / f"producer-{process}.properties",
                              producer_properties(case))
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--acks", str(case.acks),
            "--producer.config", str(config),
            "--max-messages", str(-1 if keep_going else case.messages)]
    if max_rate:
        args += ["--throughput", str(max(1, int(max_rate)))]
    results = ProducerLines(writer, stats, process, producer_retries(case) > 0)
    client = JavaClient(case.kafka_version, PRODUCER_CLASS, args,
                        log_dir / f"verifiable-producer-{process}.log", results.on_event)
    writer.event("start", process=process,
                 detail=f"VerifiableProducer {client.dist.version} acks={case.acks} "
                        f"{case.compression}")
    client.start()
    try:
        supervise(client, lambda: stats.sent, case.messages, stop, keep_going, IDLE_S,
                  CLOSE_S)
    finally:
        client.terminate(CLOSE_S)
        upper = results.sent if results.sent is not None else (
            None if keep_going else case.messages)
        results.write_off(topic, upper if upper is not None else 1 + max(
            (int(i) for i in results.reported), default=-1))
        writer.event("stop", process=process, detail="VerifiableProducer exited")
    if upper is None:
        raise ClusterError(f"VerifiableProducer exited without its tool_data line: the "
                           f"sends after id {max(map(int, results.reported), default=-1)} "
                           f"are unknown; log {client.log_file}")
    return stats


class Consumer(DrainingReader):
    """One VerifiableConsumer JVM in a fresh group, subscribed to the case's one topic."""

    def __init__(self, topics: Sequence[str], partitions: int,
                 bootstrap: Callable[[], str], writer: RunWriter,
                 process: int = CONSUMER_PROCESS, isolation_level: str = "read_uncommitted",
                 version: str | None = None):
        super().__init__(writer, process)
        self.topic, self.bootstrap, self.isolation_level = topics[0], bootstrap, isolation_level
        self.lines = ConsumerLines(writer, process)
        self.client: JavaClient | None = None
        self.version = version  # the tools' Kafka version (None: the default)

    def _on_event(self, event: dict[str, Any]) -> None:
        ids, positions = self.lines.handle(event)
        if ids or positions:
            self.note_polled(ids, positions)

    def start(self) -> Consumer:
        log_dir = client_log_dir(self.writer, CLIENT)
        config = write_properties(log_dir / f"consumer-{self.process}.properties", {
            "isolation.level": self.isolation_level, "fetch.max.wait.ms": 100,
            "request.timeout.ms": REQUEST_TIMEOUT_MS, "reconnect.backoff.max.ms": 1000})
        self.client = JavaClient(
            self.version, CONSUMER_CLASS,
            ["--bootstrap-server", self.bootstrap(), "--topic", self.topic, "--group-id",
             f"kreplica-java-{time.time_ns()}", "--reset-policy", "earliest",
             "--session-timeout", "10000", "--consumer.config", str(config), "--verbose"],
            log_dir / f"verifiable-consumer-{self.process}.log", self._on_event)
        self.writer.event("start", process=self.process,
                          detail=f"VerifiableConsumer {self.client.dist.version}")
        self.client.start()
        return self

    def alive(self) -> bool:
        return self.client is not None and self.client.alive()

    def stop(self, timeout: float = 30.0) -> None:
        if self.client is not None and self.client.alive():
            self.client.terminate(min(timeout, 15.0))
            self.writer.event("stop", process=self.process, detail="VerifiableConsumer stopped")
