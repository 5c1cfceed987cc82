"""The ``txn_pipeline`` workload on the ``java`` client: Kafka's exactly-once
read-process-write loop on the Java client.

The ``txn`` workload's producers run on Kafka's Java client (``java_txn``) into every topic
but the last, while ``resources/java/KreplicaTxnCopier.java``, a JVM of its own, copies
them into the last: a read_committed consumer in the pipeline's group and a transactional
producer with the pipeline's transactional id (the ids of ``txn_pipeline``, so the
coordinator targets aim at the same keys). Per polled batch, in one transaction, it writes
a copy of each record (same partition number; the copy's value is the copy's own id, its
line names the source id), awaits every copy, commits the consumer's next positions with
``sendOffsetsToTransaction`` and commits, or aborts by a seeded coin (1 in 8) and rewinds
to the batch's first offsets; after a failed transaction it rebuilds both clients (the new
producer fences the old one). Kafka's ``TransactionalMessageCopier`` cannot serve: it names
no transaction, prints no outcome nor the offsets each transaction consumed, and its copy
keeps the source's value (docs/clients.md).

Its JSON lines become exactly the rows the kafka-python pipeline writes (``CopierLines``):

- ``started`` / ``rewound``: a new incarnation (process 5, 105, 205, ...), a ``start``
  event; ``crash``: a ``client-crash`` event (its clients are rebuilt);
- ``batch``: the polled records as polls of the incarnation carrying the transaction
  (``txn``), read_committed, with the group generation;
- ``begin``, ``invoke`` (with ``source``), ``acked`` / ``send_error``, ``end`` (with the
  committed ``offsets``): the copy transaction as ``java_txn.TxnLines`` writes a producer's,
  each copy a sends row naming its ``source``, the txns row with its ``offsets``;
- a transaction open when the JVM ended is ``info``, its copies too unless acknowledged.

Production ends once every committed input record has a committed copy (or a bounded wait
passed: the checker judges what is missing), as in ``txn_pipeline``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..cluster import reaper
from ..errors import ClusterError
from ..history import RunWriter
from ..matrix import Case
from . import java_client, java_txn
from .java_build import program_command
from .java_txn import TxnLines, producer_properties
from .lines import ClientProcess, client_log_dir
from .plain import REQUEST_TIMEOUT_MS
from .protocol import Workload
from .sends import ProduceStats
from .txn import PRODUCER_PROCESSES, Consumer
from .txn_pipeline import (
    ABORT_SHARE,
    BATCH,
    CATCH_UP_S,
    IDLE_S,
    INCARNATION_STEP,
    PIPELINE_PROCESS,
    RC,
    await_copies,
    coordinator_keys,
    owed_inputs,
    pipeline_id,
    pipeline_topics,
    run_meta,
)

HISTORY_VERSION = 2
PROGRAM = "KreplicaTxnCopier"
CLOSE_S = 75.0  # SIGTERM: the open transaction ends (bounded by max.block.ms), both close
__all__ = ["Consumer", "Copier", "CopierLines", "HISTORY_VERSION", "PROGRAM", "WORKLOAD",
           "consumer_properties", "coordinator_keys", "produce", "run_meta"]


def consumer_properties() -> dict[str, Any]:
    """The Java consumer's settings beside group, isolation, offsets and auto commit (the
    program sets those): the kafka-python pipeline consumer's values."""
    return {"client.id": "kreplica-pipeline", "request.timeout.ms": REQUEST_TIMEOUT_MS,
            "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000,
            "fetch.max.wait.ms": 100, "reconnect.backoff.max.ms": 1000,
            "max.poll.records": BATCH}


class CopierLines(TxnLines):
    """The copier's JSON lines -> polls, sends, txns and events (module docstring), and
    which input records have a copy."""

    def __init__(self, writer: Any, stats: ProduceStats, transactional_id: str,
                 program: str = PROGRAM):
        super().__init__(writer, stats)
        self.transactional_id, self.program = transactional_id, program
        self.process = PIPELINE_PROCESS - INCARNATION_STEP
        self.lock = threading.Lock()
        self.copied: set[str] = set()  # source ids with a committed copy
        self.copies: set[str] = set()  # the pipeline's own record ids
        self.maybe: set[str] = set()  # sources of indeterminate copies: not waited for
        self.crashes: list[str] = []

    def handle(self, event: dict[str, Any]) -> None:
        name = event.get("name")
        if name in ("started", "rewound"):
            self.process += INCARNATION_STEP
            why = "started" if name == "started" else "rewound after an abort"
            self.writer.event("start", process=self.process,
                              detail=f"pipeline {self.transactional_id} {why} ({self.program})")
        elif name == "crash":
            self.crashes.append(str(event.get("why")))
            self.writer.event("client-crash", process=self.process,
                              detail=f"pipeline clients rebuilt: {event.get('why')}")
        elif name == "batch":
            txn, returned = str(event["txn"]), int(event["ns"])
            for i, (topic, partition, offset, rid) in enumerate(event["records"]):
                self.writer.poll(self.process, int(event["poll"]), str(topic), int(partition),
                                 int(offset), str(rid), returned, i, isolation=RC,
                                 generation=int(event["generation"]), txn=txn)
        elif name != "closed":
            super().handle({**event, "process": self.process})

    def settle(self, txn: str, outcome: str, end_ns: int | None, complete_ns: int,
               error: str | None) -> None:
        records = list(self.open[txn].records.values())
        with self.lock:  # before the copies count as acknowledged: never owed meanwhile
            self.copies.update(r.id for r in records)
            done = {"committed": self.copied, "info": self.maybe}.get(outcome, set())
            done.update(r.source for r in records if r.source is not None)
        super().settle(txn, outcome, end_ns, complete_ns, error)

    def owed(self) -> set[str]:
        """Committed input records without a committed copy yet."""
        return owed_inputs(self.stats, self.lock, self.copies, self.copied, self.maybe)


class Copier:
    """The copier JVM: ``start``, ``catch_up``, ``stop``."""

    def __init__(self, case: Case, inputs: list[str], output: str, bootstrap: str,
                 writer: RunWriter, stats: ProduceStats):
        self.writer = writer
        tid = pipeline_id(output)
        log_dir = client_log_dir(writer, "java")
        args = [bootstrap, ",".join(inputs), output, tid, tid, f"C{PIPELINE_PROCESS}",
                str(case.seed * 1000 + PIPELINE_PROCESS), str(ABORT_SHARE),
                str(int(IDLE_S * 1000)), str(case.message_bytes)]
        producer = {**producer_properties(case), "client.id": "kreplica-pipeline"}
        flags = [*(f"-Dkreplica.producer.{k}={v}" for k, v in producer.items()),
                 *(f"-Dkreplica.consumer.{k}={v}" for k, v in consumer_properties().items())]
        cmd, dist = program_command(case.kafka_version, PROGRAM, args,
                                    flags + reaper.owner_flags(str(log_dir)))
        self.lines = CopierLines(writer, stats, tid,
                                 f"{PROGRAM} on kafka-clients {dist.version}")
        self.client = ClientProcess(cmd, log_dir / "txn-copier.log", self.lines.handle,
                                    PROGRAM)

    def start(self) -> Copier:
        self.client.start()
        return self

    def catch_up(self, timeout: float) -> None:
        await_copies(self.writer, self.lines.owed, self.client.alive,
                     lambda: len(self.lines.copied), timeout, "the pipeline process ended")

    def stop(self) -> str | None:
        """SIGTERM (then SIGKILL), the open transaction settled; what went wrong when the
        JVM had ended before it was asked to (None: it had not)."""
        died = self.client.proc is not None and not self.client.alive()
        code = self.client.terminate(CLOSE_S)
        self.lines.settle_open("the pipeline process ended with the transaction open")
        if died:
            return (f"{PROGRAM} exited {code} before the run stopped it; log "
                    f"{self.client.log_file}")
        return None


def produce(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
            stats: ProduceStats | None = None, stop: threading.Event | None = None,
            process: int = PRODUCER_PROCESSES[0], keep_going: Callable[[], bool] | None = None,
            max_rate: float | None = None) -> ProduceStats:
    """The Java ``txn`` producers into ``topics[:-1]`` while the copier copies into the
    last; the plain signature."""
    inputs, output = pipeline_topics(topics)
    stats = stats or ProduceStats()
    copier = Copier(case, inputs, output, bootstrap, writer, stats).start()
    try:
        java_txn.produce(case, inputs, bootstrap, writer, stats, stop, process, keep_going,
                         max_rate)
        copier.catch_up(CATCH_UP_S)
    finally:
        died = copier.stop()
    if died:
        raise ClusterError(died)
    return stats


WORKLOAD = Workload(client=java_client.CLIENT, client_version=java_client.client_version,
                    produce=produce, consumer=Consumer, history_version=HISTORY_VERSION,
                    run_meta=run_meta, coordinator_keys=coordinator_keys)
