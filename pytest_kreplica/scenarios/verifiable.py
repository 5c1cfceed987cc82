"""Clients of other versions (test case C.7c): Kafka's own Java ``VerifiableProducer`` and
``VerifiableConsumer`` from the ``kafka-tools`` artifact of any cached version, writing the
same history as the kafka-python workload.

Their JSON event lines are translated as they arrive: ``producer_send_success`` becomes an
``ok`` send with its offset, ``producer_send_error`` an indeterminate (``info``) or failed
send; with ``--verbose`` the consumer prints one ``record_data`` line per record (a poll
row, in the order printed; ``records_consumed`` lines end one poll), and
``partitions_assigned`` / ``partitions_revoked`` become ``assign`` / ``rebalance`` events.
The value a VerifiableProducer writes is its message number, which is the id. Both JVMs are
started by the cluster backend's launcher (parent-death signal, reaper marker) and every
wait is bounded: the consumer's ``--max-messages`` would block forever when fewer exist.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ..cluster import distribution, reaper
from ..cluster.launcher import Launcher
from ..errors import ClusterError
from ..history import RunWriter, now_ns

PRODUCER_CLASS = "org.apache.kafka.tools.VerifiableProducer"
CONSUMER_CLASS = "org.apache.kafka.tools.VerifiableConsumer"


class _JavaClient:
    """One Verifiable* JVM whose stdout lines are handed to ``on_event``."""

    def __init__(self, version: str | None, main_class: str, args: list[str], log_file: Path,
                 on_event: Any):
        self.dist = distribution.resolve(version, ("broker", "tools"))
        self.main_class = main_class
        self.args = args
        self.log_file = Path(log_file)
        self.on_event = on_event
        self.proc: subprocess.Popen | None = None
        self.lines = 0
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        cmd = [c for c in self.dist.command(self.main_class, *self.args, component="tools",
                                            extra_flags=reaper.owner_flags(
                                                str(self.log_file.parent)))
               if not c.startswith("-Xm")]
        err = open(self.log_file, "ab")  # noqa: SIM115 - closed with the process
        self.proc = Launcher.get().popen(cmd, stdout=subprocess.PIPE, stderr=err,
                                          stdin=subprocess.DEVNULL)
        err.close()
        self._reader = threading.Thread(target=self._read, daemon=True,
                                        name=f"kreplica-{self.main_class.rsplit('.', 1)[1]}")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip()
            if not line.startswith("{"):
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            self.lines += 1
            self.on_event(event)

    def wait(self, timeout: float) -> int | None:
        """Wait for the exit and the last line; None when the deadline passed."""
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        if self._reader is not None:
            self._reader.join(30)
        return code

    def stop(self) -> None:
        """SIGTERM, SIGKILL after 15 s; the reader then sees the end of the output."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        if self.wait(15) is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.wait(15)


def java_produce(version: str | None, bootstrap: str, topic: str, messages: int,
                 writer: RunWriter, log_dir: Path, *, process: int = 10,
                 timeout: float = 300.0) -> set[str]:
    """Send ``messages`` records with VerifiableProducer (acks all) of ``version``; write a
    send row per result line; return the acknowledged ids."""
    acked: set[str] = set()
    seen: set[str] = set()

    def on_event(event: dict[str, Any]) -> None:
        name = event.get("name")
        if name not in ("producer_send_success", "producer_send_error"):
            return
        message_id = str(event.get("value"))
        seen.add(message_id)
        done = now_ns()
        if name == "producer_send_success":
            writer.send(process, event["topic"], int(event["partition"]), message_id,
                        int(event["offset"]), "ok", done, done, None)
            acked.add(message_id)
        else:
            writer.send(process, event.get("topic", topic), int(event.get("partition") or 0),
                        message_id, None, "info", done, done,
                        f"{event.get('exception')}: {event.get('message')}")

    client = _JavaClient(version, PRODUCER_CLASS,
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
        client.stop()
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
    state = {"poll": 1, "index": 0}
    progress = threading.Condition()

    def on_event(event: dict[str, Any]) -> None:
        name = event.get("name")
        if name == "record_data":
            message_id = str(event.get("value")).split(" ", 1)[0]
            writer.poll(process, state["poll"], event["topic"], int(event["partition"]),
                        int(event["offset"]), message_id, now_ns(), state["index"])
            state["index"] += 1
            with progress:
                seen.add(message_id)
                progress.notify_all()
        elif name == "records_consumed":
            state["poll"] += 1
        elif name == "partitions_assigned":
            writer.event("assign", process=process, detail=json.dumps(event.get("partitions")))
        elif name == "partitions_revoked":
            writer.event("rebalance", process=process,
                         detail=json.dumps(event.get("partitions")))

    client = _JavaClient(version, CONSUMER_CLASS,
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
                if client.proc is not None and client.proc.poll() is not None:
                    break
                progress.wait(min(0.5, max(0.0, deadline - time.monotonic())))
    finally:
        client.stop()
        writer.event("stop", process=process, detail="VerifiableConsumer stopped")
    return expected - seen
