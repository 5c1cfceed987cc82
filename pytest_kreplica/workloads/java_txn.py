"""The ``txn`` workload on the ``java`` client: Kafka's Java transactional producer.

Kafka's own tools have no transactional producer that writes random transactions and says
what became of each (``VerifiableProducer`` has no transactions; ``TransactionalMessageCopier``
only copies), so a small program of ours, ``resources/java/KreplicaTxnProducer.java``, runs
the ``txn`` workload's two producers in one JVM (one thread and one ``transactional.id``
each, the processes and ids of ``workloads/txn.py``): transactions of 1-4 records over the
case's topics and partitions, each record awaited before the next, committed by a seeded
coin (3 in 4) or aborted. It is compiled once per Kafka version against that version's
``kafka-clients`` (``java_build``). It prints one JSON line per step, which ``TxnLines``
turns into the history rows the kafka-python producers write, with the same meaning:

- ``ready`` / ``closed`` / ``replaced``: a producer's ``start`` / ``stop`` / ``client-crash``
  event (after a failed transaction a fresh producer with the same id fences the old one);
- ``begin``, ``invoke``, ``acked`` / ``send_error``, ``end``: one transaction; at ``end``
  every record becomes a ``sends`` row (``ok`` with its offset, ``info`` or ``fail`` as the
  Java exception proves, ``info`` when it never completed) and the transaction a ``txns``
  row: ``committed`` / ``aborted`` only when the client said so, ``info`` when a commit or
  an abort threw (it may have happened);
- a transaction still open when the JVM ended (a kill, a crash) is written as ``info``, its
  records too unless acknowledged.

The readers are the ``txn`` workload's (``txn.Consumer``): two read_committed group members
in processes of their own and the read_uncommitted observer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster import reaper
from ..errors import ClusterError
from ..history import RunWriter, now_ns
from ..matrix import Case
from . import java_client
from .java_build import program_command
from .lines import ClientProcess, client_log_dir, supervise
from .plain import REQUEST_TIMEOUT_MS
from .protocol import Workload
from .sends import ProduceStats
from .txn import (
    COMMIT_SHARE,
    DELIVERY_TIMEOUT_MS,
    END_TIMEOUT_S,
    MAX_RECORDS,
    PRODUCER_PROCESSES,
    Consumer,
    coordinator_keys,
    transactional_id,
)
from .verifiable import send_error

HISTORY_VERSION = 2
PROGRAM = "KreplicaTxnProducer"
# the longest silence of a working producer: a send's timeout, the abort, a new producer's
# initTransactions; beyond it the JVM is stuck
IDLE_S = DELIVERY_TIMEOUT_MS / 1000 + 2 * END_TIMEOUT_S + 30
CLOSE_S = 75.0  # SIGTERM: each producer ends its open transaction (bounded) and closes
__all__ = ["Consumer", "HISTORY_VERSION", "PROGRAM", "TxnLines", "WORKLOAD", "coordinator_keys",
           "produce", "producer_properties"]


def producer_properties(case: Case) -> dict[str, Any]:
    """The Java producer's settings beside transactional.id, idempotence and acks=all (the
    program sets those): the kafka-python txn producer's values."""
    return {"client.id": "kreplica-txn-producer", "compression.type": case.compression,
            "linger.ms": 5, "request.timeout.ms": REQUEST_TIMEOUT_MS,
            "delivery.timeout.ms": DELIVERY_TIMEOUT_MS,
            "transaction.timeout.ms": DELIVERY_TIMEOUT_MS,
            "max.block.ms": int(END_TIMEOUT_S * 1000), "reconnect.backoff.max.ms": 1000}


@dataclass
class _Record:
    id: str
    topic: str
    partition: int
    invoke_ns: int
    status: str = "info"
    offset: int | None = None
    error: str | None = "not completed"
    source: str | None = None  # the id a pipeline's copy copies (None: an original record)


@dataclass
class _Open:
    process: int
    begin_ns: int
    records: dict[str, _Record] = field(default_factory=dict)
    offsets: list[tuple[str, int, int]] | None = None  # a pipeline's committed positions


class TxnLines:
    """The program's JSON lines -> sends and txns rows and events (module docstring)."""

    def __init__(self, writer: Any, stats: ProduceStats):
        self.writer, self.stats = writer, stats
        self.open: dict[str, _Open] = {}
        self.fatal: list[str] = []

    def handle(self, event: dict[str, Any]) -> None:
        name, process = event.get("name"), int(event.get("process", 0))
        txn = str(event.get("txn"))
        if name == "begin":
            self.open[txn] = _Open(process, int(event["ns"]))
        elif name == "invoke":
            rid = str(event["id"])
            source = event.get("source")
            self.open[txn].records[rid] = _Record(rid, str(event["topic"]),
                                                  int(event["partition"]), int(event["ns"]),
                                                  source=None if source is None else str(source))
        elif name == "acked":
            record = self.open[txn].records[str(event["id"])]
            record.status, record.offset, record.error = "ok", int(event["offset"]), None
        elif name == "send_error":  # the producer retries: a broker's answer proves nothing
            record = self.open[txn].records[str(event["id"])]
            record.status, record.error = send_error(event.get("exception"),
                                                     event.get("message"), retried=True)
        elif name == "end":
            if event.get("offsets") is not None:
                self.open[txn].offsets = [(str(t), int(p), int(o)) for t, p, o in
                                          event["offsets"]]
            end = event.get("end_ns")
            self.settle(txn, str(event["outcome"]), None if end is None else int(end),
                        int(event["ns"]), event.get("error"))
        else:
            self._producer_event(name, process, event)

    def _producer_event(self, name: Any, process: int, event: dict[str, Any]) -> None:
        if name == "ready":
            self.writer.event("start", process=process, detail=f"Java transactional producer "
                                                               f"{event.get('transactional_id')}")
        elif name == "replaced":
            self.writer.event("client-crash", process=process, detail="txn producer replaced")
        elif name == "closed":
            self.writer.event("stop", process=process, detail="producer closed")
        elif name == "fatal":
            self.fatal.append(f"producer {process}: {event.get('error')}")
            self.writer.event("client-crash", process=process,
                              detail=f"txn producer could not start: {event.get('error')}")

    def settle(self, txn: str, outcome: str, end_ns: int | None, complete_ns: int,
               error: str | None) -> None:
        """One ended transaction into the history, as ``txn.record_transaction`` writes it:
        only committed records count as acknowledged (what the drain waits for), and only
        original records towards ``messages`` (a pipeline's copies do not)."""
        done = self.open.pop(txn)
        for r in done.records.values():
            self.writer.send(process=done.process, topic=r.topic, partition=r.partition,
                             id=r.id, offset=r.offset, status=r.status, invoke_ns=r.invoke_ns,
                             complete_ns=complete_ns, error=r.error, txn=txn, source=r.source)
            if r.source is None:
                with self.stats.lock:
                    self.stats.sent += 1
            self.stats.count({"committed": r.status, "aborted": "fail"}.get(outcome, "info"),
                             r.id)
        self.writer.txn(process=done.process, txn=txn, status=outcome, begin_ns=done.begin_ns,
                        end_ns=end_ns, complete_ns=complete_ns, error=error,
                        offsets=done.offsets)

    def settle_open(self, why: str) -> None:
        """Transactions the JVM left open (it was killed or crashed): indeterminate."""
        for txn in list(self.open):
            self.settle(txn, "info", None, now_ns(), why)


def produce(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
            stats: ProduceStats | None = None, stop: threading.Event | None = None,
            process: int = PRODUCER_PROCESSES[0], keep_going: Callable[[], bool] | None = None,
            max_rate: float | None = None) -> ProduceStats:
    """The txn workload's transactions through the Java program until ``messages`` records
    were sent (or, with ``keep_going``, until it turns false); the plain signature."""
    stats = stats or ProduceStats()
    processes = (process, *[p for p in PRODUCER_PROCESSES if p != process])
    log_dir = client_log_dir(writer, "java")
    targets = ",".join(f"{t}:{p}" for t in topics for p in range(case.partitions))
    rate = max_rate / len(processes) if max_rate else 0
    args = [bootstrap, targets, str(-1 if keep_going else case.messages), str(case.seed),
            str(COMMIT_SHARE), str(MAX_RECORDS), str(case.message_bytes), str(rate),
            *(f"{p}={transactional_id(topics, p)}" for p in processes)]
    flags = [f"-Dkreplica.{k}={v}" for k, v in producer_properties(case).items()]
    cmd, dist = program_command(case.kafka_version, PROGRAM, args,
                                flags + reaper.owner_flags(str(log_dir)))
    lines = TxnLines(writer, stats)
    client = ClientProcess(cmd, log_dir / f"txn-producer-{process}.log", lines.handle, PROGRAM)
    writer.event("start", process=process,
                 detail=f"{PROGRAM} on kafka-clients {dist.version}, producers "
                        f"{' '.join(str(p) for p in processes)}")
    client.start()
    code: int | None = None
    try:
        stopped = supervise(client, lambda: stats.sent, case.messages, stop, keep_going,
                            IDLE_S, CLOSE_S)
        code = client.wait(CLOSE_S)
    finally:
        client.terminate(CLOSE_S)
        lines.settle_open("the producer process ended with the transaction open")
    if lines.fatal:
        raise ClusterError(f"the Java transactional producer could not start: "
                           f"{'; '.join(lines.fatal)}; log {client.log_file}")
    if code not in (0, None) and not stopped:
        raise ClusterError(f"{PROGRAM} exited {code} (expected 0) after {stats.sent} sends; "
                           f"log {client.log_file}")
    return stats


WORKLOAD = Workload(client=java_client.CLIENT, client_version=java_client.client_version,
                    produce=produce, consumer=Consumer, history_version=HISTORY_VERSION,
                    coordinator_keys=coordinator_keys)
