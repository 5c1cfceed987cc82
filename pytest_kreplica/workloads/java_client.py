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

from ..cluster.kafka import distribution
from ..errors import ClusterError
from ..history import RunWriter, now_ns
from ..matrix import Case
from .incarnations import (
    Restartable,
    RestartableReader,
    incarnation_id,
    incarnation_process,
    run_producer,
)
from .lines import client_log_dir
from .plain import (
    CONSUMER_PROCESS,
    DELIVERY_TIMEOUT_MS,
    MAX_BLOCK_MS,
    PRODUCER_PROCESS,
    REQUEST_TIMEOUT_MS,
    producer_retries,
)
from .protocol import Workload
from .sends import ProduceStats
from .verifiable import (
    CONSUMER_CLASS,
    PRODUCER_CLASS,
    ConsumerLines,
    JavaClient,
    producer_result,
    write_properties,
)

__all__ = ["CLIENT", "Consumer", "ProducerLines", "WORKLOAD", "client_version", "consumer_options",
           "killed_upper", "produce", "producer_handle", "producer_properties"]

CLIENT = "java"
# no result line for this long while sends are outstanding: the JVM is stuck
IDLE_S = DELIVERY_TIMEOUT_MS / 1000 + 30
# the shutdown hook's close waits for every send in flight (each bounded by delivery.timeout)
CLOSE_S = DELIVERY_TIMEOUT_MS / 1000 + 15
# a killed producer's sends: its throttle's rate times its life, times this, plus this many
KILLED_RATE_MARGIN = 1.5
KILLED_BURST = 1000


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
    """One producer incarnation's lines -> send rows, counts, and what the tool says it
    sent (its ids are ``incarnations.incarnation_id(incarnation, N)``)."""

    def __init__(self, writer: Any, stats: ProduceStats, process: int, retried: bool,
                 incarnation: int = 0):
        self.writer, self.stats, self.process, self.retried = writer, stats, process, retried
        self.incarnation = incarnation
        self.reported: set[str] = set()
        self.sent: int | None = None  # from tool_data
        self.started = time.monotonic()

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

    def next_number(self) -> int:
        """One past the highest message number answered (0: none)."""
        return 1 + max((int(i.rpartition(".")[2]) for i in self.reported), default=-1)

    def write_off(self, topic: str, upper: int,
                  why: str = "VerifiableProducer reported no result", known: bool = True
                  ) -> None:
        """Every id below ``upper`` without an answer as ``info``; ``known``: the tool said
        it sent them (else a bound: they do not count as the workload's sends)."""
        for i in range(upper):  # sent, never answered: indeterminate, not guessed
            message_id = incarnation_id(self.incarnation, i)
            if message_id not in self.reported:
                self.writer.send(self.process, topic, 0, message_id, None, "info", now_ns(),
                                 now_ns(), why)
                self.stats.sent += 1 if known else 0
                self.stats.count("info", message_id)


def killed_upper(rate: float, lived_s: float, answered: int) -> int:
    """How many message numbers a SIGKILLed VerifiableProducer (no ``tool_data`` line) may
    have handed to its client: its throttle (``--throughput rate``) keeps the sends at
    ``rate`` per second of its life, with a margin for the throttle's slack and the burst
    of its first millisecond; never fewer than were answered. An over-count only adds
    ``info`` rows never polled (nothing is judged by them); an under-count would show as
    ``unexpected`` ids, never as a pass."""
    return max(answered, int(rate * lived_s * KILLED_RATE_MARGIN) + KILLED_BURST)


def produce(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
            stats: ProduceStats | None = None, stop: threading.Event | None = None,
            process: int = PRODUCER_PROCESS, keep_going: Callable[[], bool] | None = None,
            max_rate: float | None = None, producer: Restartable | None = None
            ) -> ProduceStats:
    """The case's sends through VerifiableProducer JVMs (the plain workload's signature):
    one, or with ``producer`` (the nemesis' target) one per incarnation; with
    ``keep_going`` it runs unbounded until that turns false."""
    stats = stats or ProduceStats()
    topic = topics[0]
    log_dir = client_log_dir(writer, CLIENT)
    config = write_properties(log_dir / f"producer-{process}.properties",
                              producer_properties(case))
    results: dict[int, ProducerLines] = {}  # by incarnation
    unknown: list[str] = []

    def spawn(incarnation: int) -> JavaClient:
        number = incarnation_process(process, incarnation)
        args = ["--bootstrap-server", bootstrap, "--topic", topic, "--acks", str(case.acks),
                "--producer.config", str(config),
                "--max-messages", str(-1 if keep_going else case.messages)]
        args += ["--throughput", str(max(1, int(max_rate)))] if max_rate else []
        args += ["--value-prefix", str(incarnation)] if incarnation else []
        results[incarnation] = ProducerLines(writer, stats, number,
                                             producer_retries(case) > 0, incarnation)
        client = JavaClient(case.kafka_version, PRODUCER_CLASS, args,
                            log_dir / f"verifiable-producer-{number}.log",
                            results[incarnation].on_event)
        writer.event("start", process=number,
                     detail=f"VerifiableProducer {client.dist.version} acks={case.acks} "
                            f"{case.compression}" + (f", incarnation {incarnation}"
                                                     if incarnation else ""))
        return client

    def ended(client: Any, incarnation: int, struck: bool) -> None:
        client.wait(CLOSE_S)  # its last lines handed on before anything is written off
        lines = results[incarnation]
        upper = lines.sent if lines.sent is not None else (
            None if keep_going else case.messages)
        why, known = "VerifiableProducer reported no result", True
        if upper is None and struck and max_rate:
            upper, known = killed_upper(max_rate, time.monotonic() - lines.started,
                                        lines.next_number()), False
            why = (f"in flight when the producer process was killed: VerifiableProducer "
                   f"may have sent up to {upper} messages at {int(max_rate)} msg/s")
        lines.write_off(topic, upper if upper is not None else lines.next_number(), why,
                        known)
        if upper is None:
            unknown.append(f"VerifiableProducer exited without its tool_data line: the "
                           f"sends after id {lines.next_number() - 1} are unknown; log "
                           f"{client.log_file}")
        writer.event("stop", process=lines.process,
                     detail="VerifiableProducer " + ("ended by a fault" if struck else
                                                     "exited"))

    handle = producer or producer_handle()
    handle.spawn = spawn
    handle.ready = lambda: bool(handle.incarnation in results
                                and results[handle.incarnation].reported)  # it answers
    run_producer(handle, lambda: stats.sent, case.messages, stop, keep_going, IDLE_S,
                 CLOSE_S, ended)
    if unknown:
        raise ClusterError("; ".join(unknown))
    return stats


def producer_handle() -> Restartable:
    """The producer process the nemesis may fail (target ``producer``), before it runs."""
    return Restartable("producer", "Java producer (VerifiableProducer)")


class Consumer(RestartableReader):
    """VerifiableConsumer JVMs, each in a fresh group subscribed to the case's one topic:
    one, and a new one (a new incarnation reading from the beginning) each time the
    nemesis restores a struck one (target ``consumer``)."""

    def __init__(self, topics: Sequence[str], partitions: int,
                 bootstrap: Callable[[], str], writer: RunWriter,
                 process: int = CONSUMER_PROCESS, isolation_level: str = "read_uncommitted",
                 version: str | None = None):
        super().__init__(writer, process, "Java consumer (VerifiableConsumer)",
                         "VerifiableConsumer")
        self.topic, self.bootstrap, self.isolation_level = topics[0], bootstrap, isolation_level
        self.version = version  # the tools' Kafka version (None: the default)

    def spawn_incarnation(self, incarnation: int) -> JavaClient:
        number = incarnation_process(self.process, incarnation)
        lines = ConsumerLines(self.writer, number)

        def on_event(event: dict[str, Any]) -> None:
            ids, positions = lines.handle(event)
            if ids or positions:
                self.note_polled(ids, positions)

        log_dir = client_log_dir(self.writer, CLIENT)
        config = write_properties(log_dir / f"consumer-{self.process}.properties", {
            "isolation.level": self.isolation_level, "fetch.max.wait.ms": 100,
            "request.timeout.ms": REQUEST_TIMEOUT_MS, "reconnect.backoff.max.ms": 1000})
        client = JavaClient(
            self.version, CONSUMER_CLASS,
            ["--bootstrap-server", self.bootstrap(), "--topic", self.topic, "--group-id",
             f"kreplica-java-{time.time_ns()}", "--reset-policy", "earliest",
             "--session-timeout", "10000", "--consumer.config", str(config), "--verbose"],
            log_dir / f"verifiable-consumer-{number}.log", on_event)
        self.writer.event("start", process=number,
                          detail=f"VerifiableConsumer {client.dist.version}"
                                 + (f", incarnation {incarnation}" if incarnation else ""))
        return client


WORKLOAD = Workload(client=CLIENT, client_version=client_version, produce=produce,
                    consumer=Consumer, consumer_options=consumer_options,
                    producer_handle=producer_handle)
