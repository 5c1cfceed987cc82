"""MirrorMaker 2 as a cluster component: one dedicated MirrorMaker 2 JVM (``connect-mirror``
jars of a Kafka version from the same cache as the brokers) mirroring a case's topics from a
source cluster to a target cluster.

It is started by the cluster backend's launcher thread with the parent-death signal and the
reaper's owner marker, so it never outlives a run, and it can be failed like a node:
terminate (SIGTERM), kill (SIGKILL), pause (SIGSTOP), resume, restart. Its internal topics
(offsets, configs, status) live on the target under names unique to the instance, so cases
sharing a target cluster never read each other's connector state. Readiness is observable
state, never a sleep: every mirrored topic exists on the target and holds at least one
record (``wait_ready``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from ...errors import NodeError
from ...waits import last_error_line, wait_for, wait_until
from .. import reaper
from ..base import NodeState
from ..kafka import distribution
from ..launcher import Launcher
from ..ports import claim_ports, release_ports
from .config import NODE_NAME, mirror_classpath, mirrored_name, mm2_properties, render_properties
from .tasks import killed_since

if TYPE_CHECKING:
    from ..base import Cluster
    from ..kafka.distribution import Distribution

log = logging.getLogger(__name__)

START_TIMEOUT_S = 180.0  # launch to first mirrored record: ≈ 10 s idle, far more under load
STOP_TIMEOUT_S = 30.0
KILL_WAIT_S = 15.0


def named(topics: list[str], shown: int = 5) -> str:
    """``topics`` for a message: all of a few, else how many and the first ``shown``."""
    if len(topics) <= shown:
        return str(topics)
    return f"{len(topics)} topics ({', '.join(topics[:shown])}, …)"


class MirrorMaker:
    """One dedicated MirrorMaker 2 process between two started clusters (module docstring).

    Failure methods mirror the Cluster API's node methods: ``terminate``, ``kill``,
    ``pause``, ``resume``, ``start`` (again, on the same configuration), ``restart``.
    """

    def __init__(self, source: Cluster, target: Cluster, topics: list[str], workdir: Path | str, *,
                 kafka_version: str | None = None, policy: str = "default",
                 heap_mb: int = 256, exactly_once: bool = False,
                 replication_factor: int | None = None, refresh_s: int = 1):
        self.source = source
        self.replication_factor = replication_factor  # of the mirrored topics on the target
        self.refresh_s = refresh_s  # MirrorMaker 2's topic and group refresh interval
        self.exactly_once = exactly_once
        self.rest_port: int | None = None  # claimed at the first start (exactly-once only)
        self._claimed_ports: list[int] = []  # host ports this object claimed (and releases)
        self.target = target
        self.topics = list(topics)
        self.policy = policy
        self.workdir = Path(workdir).resolve()
        self.kafka_version = kafka_version
        self.heap_mb = heap_mb
        self.instance = f"kreplica-{uuid.uuid4().hex[:10]}"
        self.mirrored = {t: mirrored_name(t, policy) for t in self.topics}
        self.log_file = self.workdir / "mirror-maker.log"
        self.config_file = self.workdir / "mm2.properties"
        self.dist: Distribution | None = None
        self._proc: subprocess.Popen | None = None
        self._state = NodeState.STOPPED
        self.starts: list[float] = []  # monotonic launch times (the benchmark reads them)
        self._log_start = 0  # the log's size at the last launch (``killed_tasks``)

    # -- description -----------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def state(self) -> NodeState:
        if self._proc is None or self._proc.poll() is not None:
            self._state = NodeState.STOPPED
        return self._state

    def describe(self) -> dict[str, Any]:
        return {"kafka_version": self.dist.version if self.dist else self.kafka_version,
                "policy": self.policy, "exactly_once": self.exactly_once,
                "rest_port": self.rest_port, "instance": self.instance,
                "topics": self.mirrored,
                "log_file": str(self.log_file), "config": str(self.config_file),
                "pid": self.pid}

    def hint(self) -> str:
        return f"MirrorMaker 2 log: {self.log_file}"

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Write the configuration (first start) and launch the JVM; returns at once: call
        ``wait_ready`` / ``wait_mirroring`` for an observable state."""
        if self.state is not NodeState.STOPPED:
            raise NodeError(f"MirrorMaker 2 already runs (pid {self.pid}, state "
                            f"{self.state.value}); expected: stopped; {self.hint()}",
                            log_file=str(self.log_file))
        if self.dist is None:
            self.dist = distribution.resolve(self.kafka_version, ("broker", "mirror"))
            self.workdir.mkdir(parents=True, exist_ok=True)
            if self.exactly_once:
                (self.rest_port,) = claim_ports(1)
                self._claimed_ports.append(self.rest_port)
            props = mm2_properties(self.source.bootstrap_servers, self.target.bootstrap_servers,
                                   self.topics, policy=self.policy,
                                   source_brokers=len(self.source.nodes),
                                   target_brokers=len(self.target.nodes),
                                   instance=self.instance, exactly_once=self.exactly_once,
                                   rest_port=self.rest_port,
                                   replication_factor=self.replication_factor,
                                   refresh_s=self.refresh_s)
            self.config_file.write_text(render_properties(props))
        flags = [*reaper.owner_flags(str(self.workdir)), f"-Dkreplica.node={NODE_NAME}",
                 *self.dist.jvm_flags(self.heap_mb, archive=False)]
        cmd = [self.dist.java, *flags, "-cp", mirror_classpath(self.dist),
               "org.apache.kafka.connect.mirror.MirrorMaker", str(self.config_file)]
        self._mark_log()
        with open(self.log_file, "ab") as out:
            out.write(f"\n=== kreplica: starting MirrorMaker 2 at "
                      f"{time.strftime('%H:%M:%S')} ===\n".encode())
            self._proc = Launcher.get().popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, cwd=str(self.workdir))
        self._state = NodeState.RUNNING
        self.starts.append(time.monotonic())

    def _mark_log(self) -> None:
        """Remember where this launch's log lines begin."""
        try:
            self._log_start = self.log_file.stat().st_size
        except OSError:
            self._log_start = 0

    def _signal(self, sig: int) -> None:
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, sig)

    def terminate(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Clean failure: SIGTERM, wait for the exit (SIGKILL at the deadline)."""
        if self.state is NodeState.STOPPED:
            return
        self._signal(signal.SIGTERM)
        self._signal(signal.SIGCONT)  # a paused JVM must run to handle SIGTERM
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("MirrorMaker 2 ignored SIGTERM for %.0f s; killing it", timeout)
            self.kill()
        self._stopped()

    def kill(self) -> None:
        """Hard failure: SIGKILL its process group, wait until it is gone."""
        if self._proc is not None and self._proc.poll() is None:
            self._signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(KILL_WAIT_S)
        self._stopped()

    def _stopped(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            raise NodeError(f"MirrorMaker 2 (pid {self._proc.pid}) still runs after SIGKILL "
                            f"(expected: exited); {self.hint()}", log_file=str(self.log_file))
        self._state = NodeState.STOPPED

    def pause(self) -> None:
        """Soft failure: SIGSTOP; returns once the process is really stopped."""
        if self.state is NodeState.STOPPED:
            raise NodeError(f"cannot pause MirrorMaker 2: it is not running; {self.hint()}",
                            log_file=str(self.log_file))
        self._signal(signal.SIGSTOP)
        self._state = NodeState.PAUSED
        wait_until(lambda: psutil.Process(self._proc.pid).status() == psutil.STATUS_STOPPED,
                   10.0, "MirrorMaker 2 stopped by SIGSTOP",
                   lambda: f"status {psutil.Process(self._proc.pid).status()}", self.hint())

    def resume(self) -> None:
        if self.state is NodeState.PAUSED:
            self._signal(signal.SIGCONT)
            self._state = NodeState.RUNNING

    def restart(self, timeout: float = STOP_TIMEOUT_S) -> None:
        self.terminate(timeout)
        self.start()

    def close(self) -> None:
        """Stop for good (SIGTERM, SIGKILL at the deadline); idempotent, never raises."""
        try:
            self.terminate()
        except Exception as exc:  # closing goes on
            log.warning("closing MirrorMaker 2 failed: %s", exc)
            self._signal(signal.SIGKILL)
        if self._claimed_ports:
            release_ports(self._claimed_ports)
            self._claimed_ports = []

    def __enter__(self) -> MirrorMaker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- observable state --------------------------------------------------------------------
    def check_running(self) -> None:
        if self._state is NodeState.RUNNING and self.state is NodeState.STOPPED:
            raise NodeError(f"MirrorMaker 2 exited with code {self._proc.returncode} "
                            f"(expected: running); last line: {last_error_line(self.log_file)}; "
                            f"{self.hint()}", log_file=str(self.log_file))

    def killed_tasks(self) -> list[str]:
        """The Connect tasks this launch killed for good, each with its root cause
        (``tasks.killed_tasks``): they stay down until the process restarts."""
        return killed_since(self.log_file, self._log_start)

    def target_end_offsets(self, consumer: Any = None) -> dict[tuple[str, int], int] | None:
        """End offset of every partition of the mirrored topics on the target, or None
        while some mirrored topic does not exist there yet."""
        from kafka import KafkaConsumer, TopicPartition

        own = consumer is None
        if own:
            consumer = KafkaConsumer(bootstrap_servers=self.target.live_bootstrap_servers()
                                     .split(","), request_timeout_ms=10_000,
                                     reconnect_backoff_max_ms=1000)
        try:
            existing = consumer.topics()
            tps = []
            for name in self.mirrored.values():
                if name not in existing:
                    return None
                parts = consumer.partitions_for_topic(name) or set()
                if not parts:
                    return None
                tps.extend(TopicPartition(name, p) for p in sorted(parts))
            ends = consumer.end_offsets(tps)
            return {(tp.topic, tp.partition): off for tp, off in ends.items()}
        finally:
            if own:
                with contextlib.suppress(Exception):
                    consumer.close()

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> float:
        """Wait until every mirrored topic exists on the target and holds a record; return
        the seconds since the last launch. A case mirroring many partitions passes a longer
        ``timeout`` (``scenarios.mirror.ready_timeout``)."""
        def ready() -> str | None:
            self.check_running()
            ends = self.target_end_offsets()
            if ends is None:
                return "mirrored topics not all on the target yet"
            empty = sorted({t for (t, _p), off in ends.items()} -
                           {t for (t, _p), off in ends.items() if off > 0})
            return f"no record yet in {named(empty)}" if empty else None

        wait_for(ready, timeout, f"mirrored topics {named(sorted(self.mirrored.values()))} on "
                                  f"the target with a first record", self.hint())
        return time.monotonic() - self.starts[-1]

    def wait_mirroring(self, baseline: int, timeout: float = START_TIMEOUT_S,
                       source_total: Callable[[], int] | None = None) -> float:
        """After a restore: wait until the target's mirrored records exceed ``baseline`` (new
        records arrived) or, when ``source_total`` is given, equal the source's (caught
        up: nothing left to mirror). Returns the seconds waited."""
        started = time.monotonic()

        def moving() -> str | None:
            self.check_running()
            ends = self.target_end_offsets()
            total = sum(ends.values()) if ends else 0
            if total > baseline:
                return None
            if source_total is not None and total >= source_total():
                return None
            return f"target holds {total} mirrored records (baseline {baseline})"

        wait_for(moving, timeout, "mirroring to move again", self.hint())
        return time.monotonic() - started

    def target_total(self) -> int:
        ends = self.target_end_offsets()
        return sum(ends.values()) if ends else 0
