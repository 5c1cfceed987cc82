"""The ``librdkafka`` client: confluent-kafka's Producer and Consumer (librdkafka, C) in a child
process each (``rdkafka_child``), writing the plain workload's history.

The parent builds the client's settings from the case (``producer_config``), starts the
child through the launcher and copies its JSON lines into the run's writer: ``invoke`` lines
tell it every id that may have reached the log, ``send`` / ``poll`` / ``event`` lines are
history rows, ``positions`` lines feed the drain. What a SIGKILLed child left unanswered
becomes ``info`` here, so every invoked id has exactly one send row.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import ClusterError
from ..history import RunWriter, now_ns
from ..matrix import Case
from ..waits import last_error_line
from .incarnations import (
    Restartable,
    RestartableReader,
    incarnation_id,
    incarnation_process,
    run_producer,
)
from .lines import ClientProcess, client_log_dir
from .plain import (
    CONSUMER_PROCESS,
    DELIVERY_TIMEOUT_MS,
    PRODUCER_PROCESS,
    REQUEST_TIMEOUT_MS,
    producer_retries,
)
from .protocol import Workload
from .sends import ProduceStats

__all__ = ["CLIENT", "Consumer", "WORKLOAD", "client_version", "consumer_config", "produce",
           "producer_config", "producer_handle"]

CLIENT = "librdkafka"
CHILD = "pytest_kreplica.workloads.rdkafka_child"
ANSWER_S = DELIVERY_TIMEOUT_MS / 1000 + 5
IDLE_S = ANSWER_S + 30
CLOSE_S = ANSWER_S + 10


def client_version(case: Case) -> str:
    """librdkafka's version and the binding's: ``2.16.0 (confluent-kafka 2.16.1)``."""
    import confluent_kafka  # a C extension: loaded when a case runs

    return f"{confluent_kafka.libversion()[0]} (confluent-kafka {confluent_kafka.version()})"


def producer_config(case: Case, bootstrap: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "client.id": "kreplica-producer",
            "acks": "all" if case.acks == -1 else str(case.acks),
            "compression.type": case.compression,
            "enable.idempotence": bool(case.idempotence),
            "linger.ms": 0 if case.producer_mode == "sync" else 5,
            "request.timeout.ms": REQUEST_TIMEOUT_MS, "message.timeout.ms": DELIVERY_TIMEOUT_MS,
            "reconnect.backoff.max.ms": 1000, "retries": producer_retries(case)}


def consumer_config(bootstrap: str, isolation_level: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "client.id": "kreplica-consumer",
            "group.id": f"kreplica-rdkafka-{time.time_ns()}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "isolation.level": isolation_level,
            "fetch.wait.max.ms": 100, "reconnect.backoff.max.ms": 1000,
            "socket.timeout.ms": REQUEST_TIMEOUT_MS}



class ChildSends:
    """The producer child's lines -> send rows and counts; ``write_off`` after it ended."""

    def __init__(self, writer: Any, stats: ProduceStats):
        self.writer, self.stats = writer, stats
        self.pending: dict[str, tuple[str, int, int]] = {}
        self.answered = 0
        self.lock = threading.Lock()

    def on_line(self, line: dict[str, Any]) -> None:
        kind, args, kwargs = line.get("k"), line.get("a") or [], line.get("kw") or {}
        if kind == "invoke":
            message_id, topic, partition, invoke = args
            with self.lock:
                self.pending[message_id] = (topic, partition, invoke)
            self.stats.sent += 1
        elif kind == "send":
            with self.lock:
                self.pending.pop(args[3], None)
                self.answered += 1
            self.writer.send(*args, **kwargs)
            self.stats.count(args[5], args[3])
        elif kind == "event":
            self.writer.event(*args, **kwargs)

    def write_off(self, process: int) -> None:
        with self.lock:
            leftovers = list(self.pending.items())
            self.pending.clear()
        for message_id, (topic, partition, invoke) in leftovers:
            self.writer.send(process, topic, partition, message_id, None, "info", invoke,
                             now_ns(), "the producer process ended before its answer")
            self.stats.count("info", message_id)


def produce(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
            stats: ProduceStats | None = None, stop: threading.Event | None = None,
            process: int = PRODUCER_PROCESS, keep_going: Callable[[], bool] | None = None,
            max_rate: float | None = None, producer: Restartable | None = None
            ) -> ProduceStats:
    """The case's sends through a librdkafka producer in a child process (the plain
    workload's signature); with ``producer`` (the nemesis' target) one child per
    incarnation, each with ids of its own."""
    stats = stats or ProduceStats()
    results: dict[int, ChildSends] = {}  # by incarnation
    codes: list[tuple[int | None, Path]] = []

    def spawn(incarnation: int) -> ClientProcess:
        number = incarnation_process(process, incarnation)
        prefix = incarnation_id(incarnation, 0)[:-1]  # "" or "K."
        results[incarnation] = ChildSends(writer, stats)
        cmd = [sys.executable, "-m", CHILD, "produce",
               "--config", json.dumps(producer_config(case, bootstrap)),
               "--topics", ",".join(topics), "--partitions", str(case.partitions),
               "--process", str(number), "--messages", str(case.messages),
               "--message-bytes", str(case.message_bytes), "--answer-s", str(ANSWER_S),
               "--id-prefix", prefix]
        cmd += ["--sync"] if case.producer_mode == "sync" else []
        cmd += ["--keep-going"] if keep_going is not None else []
        cmd += ["--retried"] if producer_retries(case) > 0 else []
        cmd += ["--max-rate", str(max_rate)] if max_rate else []
        writer.event("start", process=number, detail=f"librdkafka producer "
                     f"{case.producer_mode} acks={case.acks} {case.compression}"
                     + (f", incarnation {incarnation}" if incarnation else ""))
        return ClientProcess(cmd, client_log_dir(writer, CLIENT) /
                             f"rdkafka-producer-{number}.log", results[incarnation].on_line,
                             "rdkafka-producer")

    def ended(child: Any, incarnation: int, struck: bool) -> None:
        code = child.wait(CLOSE_S)
        results[incarnation].write_off(incarnation_process(process, incarnation))
        writer.event("stop", process=incarnation_process(process, incarnation),
                     detail=f"librdkafka producer exited ({code})"
                            + (", ended by a fault" if struck else ""))
        if not struck:
            codes.append((code, child.log_file))

    handle = producer or producer_handle()
    handle.spawn = spawn
    handle.ready = lambda: bool(handle.incarnation in results
                                and results[handle.incarnation].answered)  # it answers
    run_producer(handle, lambda: stats.sent, case.messages, stop, keep_going, IDLE_S,
                 CLOSE_S, ended)
    broken = [(code, log) for code, log in codes if code is not None and code > 0]
    if broken:  # neither asked to stop nor killed: the child broke
        code, log = broken[0]
        raise ClusterError(f"the librdkafka producer exited {code}: "
                           f"{last_error_line(log)}; log {log}")
    return stats


def producer_handle() -> Restartable:
    """The producer process the nemesis may fail (target ``producer``), before it runs."""
    return Restartable("producer", "librdkafka producer")


class Consumer(RestartableReader):
    """A librdkafka consumer child reading every partition from the beginning; a new one
    (a new incarnation) each time the nemesis restores a struck one (target
    ``consumer``)."""

    def __init__(self, topics: Sequence[str], partitions: int,
                 bootstrap: Callable[[], str], writer: RunWriter,
                 process: int = CONSUMER_PROCESS, isolation_level: str = "read_uncommitted"):
        super().__init__(writer, process, "librdkafka consumer", "librdkafka consumer")
        self.topics, self.partitions, self.bootstrap = list(topics), partitions, bootstrap
        self.isolation_level = isolation_level

    def _on_line(self, line: dict[str, Any]) -> None:
        kind, args, kwargs = line.get("k"), line.get("a") or [], line.get("kw") or {}
        if kind == "poll":
            self.writer.poll(*args, **kwargs)
            self.note_polled([args[5]])
        elif kind == "positions":
            self.note_positions({(t, p): o for t, p, o in args[0]})
        elif kind == "event":
            self.writer.event(*args, **kwargs)

    def spawn_incarnation(self, incarnation: int) -> ClientProcess:
        number = incarnation_process(self.process, incarnation)
        cmd = [sys.executable, "-m", CHILD, "consume",
               "--config", json.dumps(consumer_config(self.bootstrap(), self.isolation_level)),
               "--topics", ",".join(self.topics), "--partitions", str(self.partitions),
               "--process", str(number)]
        child = ClientProcess(cmd, client_log_dir(self.writer, CLIENT) /
                              f"rdkafka-consumer-{number}.log", self._on_line,
                              "rdkafka-consumer")
        self.writer.event("start", process=number, detail="librdkafka consumer"
                          + (f", incarnation {incarnation}" if incarnation else ""))
        return child


WORKLOAD = Workload(client=CLIENT, client_version=client_version, produce=produce,
                    consumer=Consumer, producer_handle=producer_handle)
