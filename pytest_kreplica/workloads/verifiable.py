"""Kafka's own Java ``VerifiableProducer`` and ``VerifiableConsumer`` from the ``kafka-tools``
artifact of any cached version, writing the same history as the kafka-python workload (test
case C.7c, and the ``java`` client of ``workloads/java_client.py``).

Their JSON event lines are translated as they arrive: ``producer_send_success`` becomes an
``ok`` send with its offset (``info`` under acks=0, whose offset is -1),
``producer_send_error`` a failed or indeterminate send (``producer_result``); with
``--verbose`` the consumer prints one ``record_data`` line per record (a poll row, in the
order printed; ``records_consumed`` lines end one poll), and ``partitions_assigned`` /
``partitions_revoked`` become ``assign`` / ``rebalance`` events (``ConsumerLines``). The
value a VerifiableProducer writes is its message number (``--value-prefix`` P: ``P.N``),
which is the id. Both JVMs are started by the launcher (parent-death signal, reaper marker)
and every wait is bounded: the consumer's ``--max-messages`` would block forever when fewer
exist.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from ..cluster import reaper
from ..cluster.kafka import distribution
from ..errors import ClusterError
from ..history import RunWriter, now_ns
from .lines import ClientProcess

__all__ = ["CONSUMER_CLASS", "PRODUCER_CLASS", "ConsumerLines", "JavaClient", "java_consume",
           "java_produce", "producer_result", "send_error", "write_properties"]

PRODUCER_CLASS = "org.apache.kafka.tools.VerifiableProducer"
CONSUMER_CLASS = "org.apache.kafka.tools.VerifiableConsumer"

# Java exceptions whose single attempt proves the record was not appended (sends.py's list)
DEFINITE_FAILURES = ("NotEnoughReplicasException", "InvalidTopicException",
                     "RecordTooLargeException", "RecordBatchTooLargeException",
                     "TopicAuthorizationException", "InvalidRequiredAcksException",
                     "CorruptRecordException")
# errors of records that never left the client, whatever the retries
NEVER_SENT = ("SerializationException",)
NEVER_SENT_TEXT = ("not present in metadata after",)


class JavaClient(ClientProcess):
    """One Verifiable* JVM of ``version`` whose stdout JSON lines go to ``on_event``."""

    def __init__(self, version: str | None, main_class: str, args: list[str], log_file: Path,
                 on_event: Any):
        self.dist = distribution.resolve(version, ("broker", "tools"))
        self.main_class = main_class
        cmd = [c for c in self.dist.command(main_class, *args, component="tools",
                                            extra_flags=reaper.owner_flags(
                                                str(Path(log_file).parent)))
               if not c.startswith("-Xm")]
        super().__init__(cmd, log_file, on_event, main_class.rsplit(".", 1)[1])


def write_properties(path: Path, config: dict[str, Any]) -> Path:
    """A Java properties file of ``config`` (``--producer.config`` / ``--consumer.config``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in config.items()), encoding="utf-8")
    return path


def producer_result(event: dict[str, Any], retried: bool = False
                    ) -> tuple[str, int, str, int | None, str, str | None] | None:
    """``(topic, partition, id, offset, status, error)`` of one VerifiableProducer result
    line, None for any other line. A failed send's line names no partition: 0 stands for
    it (the checker judges ``fail`` / ``info`` sends by id). ``retried``: the producer
    retries, so its last error says nothing about earlier attempts (``sends.classify``)."""
    name = event.get("name")
    if name not in ("producer_send_success", "producer_send_error"):
        return None
    message_id = str(event.get("value"))
    if name == "producer_send_success":
        offset = int(event["offset"])
        if offset < 0:  # acks=0: the broker never answers
            return (event["topic"], int(event["partition"]), message_id, None, "info",
                    "acks=0: no acknowledgement")
        return event["topic"], int(event["partition"]), message_id, offset, "ok", None
    status, error = send_error(event.get("exception"), event.get("message"), retried)
    return (str(event.get("topic")), int(event.get("partition") or 0), message_id, None,
            status, error)


def send_error(exception: Any, message: Any, retried: bool) -> tuple[str, str]:
    """``(status, error)`` of a Java send that failed with ``exception`` (a class name) and
    ``message``: ``fail`` only when it proves the record was not appended, else ``info``."""
    simple = str(exception or "").removeprefix("class ").rsplit(".", 1)[-1]
    text = str(message or "")
    never_sent = simple in NEVER_SENT or any(t in text for t in NEVER_SENT_TEXT)
    definite = never_sent or (not retried and simple in DEFINITE_FAILURES)
    return "fail" if definite else "info", f"{simple}: {text}"


class ConsumerLines:
    """VerifiableConsumer lines -> poll rows and events of one process; ``handle`` returns
    the ids one line polled and the positions it showed (next offset per partition)."""

    def __init__(self, writer: Any, process: int):
        self.writer, self.process = writer, process
        self.poll, self.index = 1, 0

    def handle(self, event: dict[str, Any]) -> tuple[list[str], dict[tuple[str, int], int]]:
        name = event.get("name")
        if name == "record_data":
            message_id = str(event.get("value")).split(" ", 1)[0]
            topic, partition, offset = event["topic"], int(event["partition"]), int(
                event["offset"])
            self.writer.poll(self.process, self.poll, topic, partition, offset, message_id,
                             now_ns(), self.index)
            self.index += 1
            return [message_id], {(topic, partition): offset + 1}
        if name == "records_consumed":
            self.poll, self.index = self.poll + 1, 0
        elif name in ("partitions_assigned", "partitions_revoked"):
            parts = event.get("partitions") or []
            self.writer.event("assign" if name == "partitions_assigned" else "rebalance",
                              process=self.process,
                              detail=" ".join(f"{p['topic']}:{p['partition']}" for p in parts))
        return [], {}


def java_produce(version: str | None, bootstrap: str, topic: str, messages: int,
                 writer: RunWriter, log_dir: Path, *, process: int = 10,
                 timeout: float = 300.0) -> set[str]:
    """Send ``messages`` records with VerifiableProducer (acks all) of ``version``; write a
    send row per result line; return the acknowledged ids."""
    acked: set[str] = set()
    seen: set[str] = set()

    def on_event(event: dict[str, Any]) -> None:
        found = producer_result(event)
        if found is None:
            return
        topic_, partition, message_id, offset, status, error = found
        seen.add(message_id)
        done = now_ns()
        writer.send(process, topic_, partition, message_id, offset, status, done, done, error)
        if status == "ok":
            acked.add(message_id)

    client = JavaClient(version, PRODUCER_CLASS,
                        ["--bootstrap-server", bootstrap, "--topic", topic, "--max-messages",
                         str(messages), "--acks", "-1"],
                        log_dir / f"verifiable-producer-{process}.log", on_event)
    writer.event("start", process=process,
                 detail=f"VerifiableProducer {client.dist.version}, {messages} messages")
    client.start()
    try:
        if client.wait(timeout) is None:
            raise ClusterError(f"VerifiableProducer {client.dist.version} did not finish "
                               f"{messages} sends within {timeout:.0f} s (results seen: "
                               f"{len(seen)}); log {client.log_file}")
    finally:
        client.terminate()
        for i in range(messages):  # never reported: indeterminate, not guessed
            if str(i) not in seen:
                writer.send(process, topic, 0, str(i), None, "info", now_ns(), now_ns(),
                            "VerifiableProducer reported no result")
        writer.event("stop", process=process, detail="VerifiableProducer exited")
    return acked


def java_consume(version: str | None, bootstrap: str, topic: str, expected: set[str],
                 writer: RunWriter, log_dir: Path, *, process: int = 11, timeout: float = 180.0
                 ) -> set[str]:
    """Read ``topic`` from the beginning with VerifiableConsumer (verbose) of ``version``
    until every id of ``expected`` was polled or ``timeout`` passed; write poll rows and
    assignment events; return the ids never seen."""
    seen: set[str] = set()
    lines = ConsumerLines(writer, process)
    progress = threading.Condition()

    def on_event(event: dict[str, Any]) -> None:
        ids, _ = lines.handle(event)
        if ids:
            with progress:
                seen.update(ids)
                progress.notify_all()

    client = JavaClient(version, CONSUMER_CLASS,
                        ["--bootstrap-server", bootstrap, "--topic", topic, "--group-id",
                         f"kreplica-verifiable-{time.time_ns()}", "--reset-policy",
                         "earliest", "--verbose"],
                        log_dir / f"verifiable-consumer-{process}.log", on_event)
    writer.event("start", process=process, detail=f"VerifiableConsumer {client.dist.version}")
    client.start()
    deadline = time.monotonic() + timeout
    try:
        with progress:
            while not expected <= seen and time.monotonic() < deadline:
                if not client.alive():
                    break
                progress.wait(min(0.5, max(0.0, deadline - time.monotonic())))
    finally:
        client.terminate()
        writer.event("stop", process=process, detail="VerifiableConsumer stopped")
    return expected - seen

