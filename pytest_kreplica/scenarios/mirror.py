"""MirrorMaker 2 as a component of a two-cluster run (test cases C.6 and C.7a).

``MirrorMaker`` runs one dedicated MirrorMaker 2 JVM (``connect-mirror`` jars of a Kafka
version from the same cache as the brokers) that mirrors a case's topics from a source
cluster to a target cluster. It is started by the cluster backend's launcher thread with the
parent-death signal and the reaper's owner marker, so it never outlives a run, and it can be
failed like a node: terminate (SIGTERM), kill (SIGKILL), pause (SIGSTOP), resume, restart.
Its internal topics (offsets, configs, status) live on the target under names unique to the
instance, so cases sharing a target cluster never read each other's connector state.

Readiness is observable state, never a sleep: every mirrored topic exists on the target and
holds at least one record (``wait_ready``). The nemesis (``nemesis.Nemesis``, one fault runner
for brokers and components) fails it through ``mirror_component`` on a seeded ``FaultPlan``
(target ``mirror-maker``) and writes the events the report draws.

With ``exactly_once`` the flow's Connect worker runs KIP-618 exactly-once source support
(records and source offsets in one transaction on the target; needs the KIP-710 internal
REST server of dedicated mode, on a loopback port) and reads the source read_committed; the
target's readers must then read read_committed too.

``run_mirror_case`` runs a whole C.6 / C.7a case and writes the run directory of
shared/HISTORY.md "Mirrored runs" (``cluster`` column, ``mirror.topics`` in run.json).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cluster.base import NodeState
from ..errors import ClusterError, InputError, NodeError

log = logging.getLogger(__name__)

POLICIES = ("default", "identity")
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
SOURCE_ALIAS, TARGET_ALIAS = "source", "target"
NODE_NAME = "mirror-maker"  # the ``node`` of its events
ROLE = "mirror-maker"
START_TIMEOUT_S = 180.0  # launch to first mirrored record: ≈ 10 s idle, far more under load
STOP_TIMEOUT_S = 30.0
KILL_WAIT_S = 15.0
POLL_S = 0.25
# exactly-once: a SIGKILLed task leaves its transaction (records + source offsets) open on
# the target; the restarted worker reads its offsets topic read_committed and so waits until
# the coordinator aborts it at transaction.timeout.ms (60 s by default, seen: restore to
# mirroring again 63 s). A task commits every poll, far within this.
EOS_TRANSACTION_TIMEOUT_MS = 15_000


def mirrored_name(topic: str, policy: str = "default", alias: str = SOURCE_ALIAS) -> str:
    """The topic's name on the target under a replication policy."""
    if policy not in POLICIES:
        raise InputError(f"replication_policy {policy!r} is unknown; allowed: "
                         f"{', '.join(POLICIES)}")
    return topic if policy == "identity" else f"{alias}.{topic}"


def mm2_properties(source_bootstrap: str, target_bootstrap: str, topics: list[str], *,
                   policy: str = "default", source_brokers: int = 3,
                   target_brokers: int = 3, instance: str = "kreplica",
                   exactly_once: bool = False, rest_port: int | None = None
                   ) -> dict[str, str]:
    """The dedicated-mode configuration (KAFKA-NOTES "MirrorMaker 2"): one flow
    source->target for exactly ``topics``, internal topics sized to the clusters and named
    per ``instance``, 1 s refresh intervals, and no delay before a restarted worker takes
    its tasks back (Connect waits ``scheduled.rebalance.max.delay.ms``, 5 min by default,
    for a departed member, which would stall mirroring after a hard failure).

    ``exactly_once`` (Kafka >= 3.5): the target's worker gets
    ``exactly.once.source.support=enabled`` (KIP-618), which needs the internal REST server
    of KIP-710 (``dedicated.mode.enable.internal.rest``, listening on ``rest_port`` of
    127.0.0.1); the source is read ``read_committed`` (MirrorSourceConnector declares
    exactly-once support only then, and never copies aborted records)."""
    if not topics:
        raise InputError("mirror: no topics to mirror; allowed: one or more topic names")
    if exactly_once and rest_port is None:
        raise InputError("mirror: exactly_once needs rest_port (the KIP-710 internal REST "
                         "server); allowed: a free port on 127.0.0.1")
    mirrored_name(topics[0], policy)  # validates the policy
    rf_source = str(min(3, source_brokers))
    rf_target = str(min(3, target_brokers))
    props = {
        "clusters": f"{SOURCE_ALIAS}, {TARGET_ALIAS}",
        f"{SOURCE_ALIAS}.bootstrap.servers": source_bootstrap,
        f"{TARGET_ALIAS}.bootstrap.servers": target_bootstrap,
        f"{SOURCE_ALIAS}->{TARGET_ALIAS}.enabled": "true",
        f"{SOURCE_ALIAS}->{TARGET_ALIAS}.topics": "|".join(re.escape(t) for t in topics),
        f"{TARGET_ALIAS}->{SOURCE_ALIAS}.enabled": "false",
        "tasks.max": "1",
        "replication.factor": rf_target,
        "offset-syncs.topic.replication.factor": rf_source,
        "heartbeats.topic.replication.factor": rf_target,
        "checkpoints.topic.replication.factor": rf_target,
        "sync.topic.acls.enabled": "false",
        "sync.group.offsets.enabled": "false",
        "refresh.topics.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "emit.checkpoints.interval.seconds": "1",
        "emit.heartbeats.interval.seconds": "1",
        # the Connect worker of the flow runs against the target: its state lives there
        f"{TARGET_ALIAS}.group.id": f"{instance}-mm2",
        f"{TARGET_ALIAS}.offset.storage.topic": f"{instance}-mm2-offsets",
        f"{TARGET_ALIAS}.config.storage.topic": f"{instance}-mm2-configs",
        f"{TARGET_ALIAS}.status.storage.topic": f"{instance}-mm2-status",
        f"{TARGET_ALIAS}.offset.storage.replication.factor": rf_target,
        f"{TARGET_ALIAS}.config.storage.replication.factor": rf_target,
        f"{TARGET_ALIAS}.status.storage.replication.factor": rf_target,
        f"{TARGET_ALIAS}.scheduled.rebalance.max.delay.ms": "0",
        # the disabled reverse flow would still start a worker on the source for heartbeats
        # (with shared default state topic names, and a slow shutdown): switch it off
        f"{TARGET_ALIAS}->{SOURCE_ALIAS}.emit.heartbeats.enabled": "false",
        f"{SOURCE_ALIAS}.group.id": f"{instance}-mm2-reverse",
        f"{SOURCE_ALIAS}.offset.storage.topic": f"{instance}-mm2-reverse-offsets",
        f"{SOURCE_ALIAS}.config.storage.topic": f"{instance}-mm2-reverse-configs",
        f"{SOURCE_ALIAS}.status.storage.topic": f"{instance}-mm2-reverse-status",
        f"{SOURCE_ALIAS}.offset.storage.replication.factor": rf_source,
        f"{SOURCE_ALIAS}.config.storage.replication.factor": rf_source,
        f"{SOURCE_ALIAS}.status.storage.replication.factor": rf_source,
        f"{SOURCE_ALIAS}.scheduled.rebalance.max.delay.ms": "0",
        "offset.flush.interval.ms": "1000",
    }
    if policy == "identity":
        props["replication.policy.class"] = IDENTITY_POLICY
    if exactly_once:
        props.update({
            f"{TARGET_ALIAS}.exactly.once.source.support": "enabled",
            f"{SOURCE_ALIAS}.consumer.isolation.level": "read_committed",
            f"{TARGET_ALIAS}.producer.transaction.timeout.ms": str(EOS_TRANSACTION_TIMEOUT_MS),
            "dedicated.mode.enable.internal.rest": "true",
            "listeners": f"http://127.0.0.1:{rest_port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(rest_port),
        })
    return props


def render_properties(props: dict[str, str]) -> str:
    return "".join(f"{k} = {v}\n" for k, v in props.items())


def _mirror_classpath(dist: Any) -> str:
    """``connect-mirror`` jars; on 4.x plus the broker's log4j2 jars and binding, which the
    mirror artifact does not bring (without them MirrorMaker 2 would log nothing)."""
    classpath = dist.classpaths["mirror"]
    if dist.uses_log4j2:
        have = {Path(j).name for j in classpath.split(":")}
        extra = [j for j in dist.classpaths["broker"].split(":")
                 if Path(j).name.startswith("log4j-") and Path(j).name not in have]
        classpath = ":".join([classpath, *extra])
    return classpath


class MirrorMaker:
    """One dedicated MirrorMaker 2 process between two started clusters (module docstring).

    Failure methods mirror the Cluster API's node methods: ``terminate``, ``kill``,
    ``pause``, ``resume``, ``start`` (again, on the same configuration), ``restart``.
    """

    def __init__(self, source: Any, target: Any, topics: list[str], workdir: Path | str, *,
                 kafka_version: str | None = None, policy: str = "default",
                 heap_mb: int = 256, exactly_once: bool = False):
        self.source = source
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
        self.dist: Any = None
        self._proc: subprocess.Popen | None = None
        self._state = NodeState.STOPPED
        self.starts: list[float] = []  # monotonic launch times (the benchmark reads them)

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

    def _hint(self) -> str:
        return f"MirrorMaker 2 log: {self.log_file}"

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Write the configuration (first start) and launch the JVM; returns at once: call
        ``wait_ready`` / ``wait_mirroring`` for an observable state."""
        from ..cluster import distribution, reaper
        from ..cluster.launcher import Launcher

        if self.state is not NodeState.STOPPED:
            raise NodeError(f"MirrorMaker 2 already runs (pid {self.pid}, state "
                            f"{self.state.value}); expected: stopped; {self._hint()}",
                            log_file=str(self.log_file))
        if self.dist is None:
            self.dist = distribution.resolve(self.kafka_version, ("broker", "mirror"))
            self.workdir.mkdir(parents=True, exist_ok=True)
            if self.exactly_once:
                from ..cluster.ports import claim_ports

                (self.rest_port,) = claim_ports(1)
                self._claimed_ports.append(self.rest_port)
            props = mm2_properties(self.source.bootstrap_servers, self.target.bootstrap_servers,
                                   self.topics, policy=self.policy,
                                   source_brokers=len(self.source.nodes),
                                   target_brokers=len(self.target.nodes),
                                   instance=self.instance, exactly_once=self.exactly_once,
                                   rest_port=self.rest_port)
            self.config_file.write_text(render_properties(props))
        flags = [*reaper.owner_flags(str(self.workdir)), f"-Dkreplica.node={NODE_NAME}",
                 *self.dist.jvm_flags(self.heap_mb, archive=False)]
        cmd = [self.dist.java, *flags, "-cp", _mirror_classpath(self.dist),
               "org.apache.kafka.connect.mirror.MirrorMaker", str(self.config_file)]
        with open(self.log_file, "ab") as out:
            out.write(f"\n=== kreplica: starting MirrorMaker 2 at "
                      f"{time.strftime('%H:%M:%S')} ===\n".encode())
            self._proc = Launcher.get().popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, cwd=str(self.workdir))
        self._state = NodeState.RUNNING
        self.starts.append(time.monotonic())

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
                            f"(expected: exited); {self._hint()}", log_file=str(self.log_file))
        self._state = NodeState.STOPPED

    def pause(self) -> None:
        """Soft failure: SIGSTOP; returns once the process is really stopped."""
        import psutil

        if self.state is NodeState.STOPPED:
            raise NodeError(f"cannot pause MirrorMaker 2: it is not running; {self._hint()}",
                            log_file=str(self.log_file))
        self._signal(signal.SIGSTOP)
        self._state = NodeState.PAUSED
        _wait(lambda: psutil.Process(self._proc.pid).status() == psutil.STATUS_STOPPED,
              10.0, "MirrorMaker 2 stopped by SIGSTOP",
              lambda: f"status {psutil.Process(self._proc.pid).status()}", self._hint())

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
            from ..cluster.ports import release_ports

            release_ports(self._claimed_ports)
            self._claimed_ports = []

    def __enter__(self) -> MirrorMaker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- observable state --------------------------------------------------------------------
    def _check_running(self) -> None:
        if self._state is NodeState.RUNNING and self.state is NodeState.STOPPED:
            raise NodeError(f"MirrorMaker 2 exited with code {self._proc.returncode} "
                            f"(expected: running); last line: {_last_line(self.log_file)}; "
                            f"{self._hint()}", log_file=str(self.log_file))

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
        the seconds since the last launch."""
        def ready() -> str | None:
            self._check_running()
            ends = self.target_end_offsets()
            if ends is None:
                return "mirrored topics not all on the target yet"
            empty = sorted({t for (t, _p), off in ends.items()} -
                           {t for (t, _p), off in ends.items() if off > 0})
            return f"no record yet in {empty}" if empty else None

        _wait_for(ready, timeout, f"mirrored topics {sorted(self.mirrored.values())} on the "
                                  f"target with a first record", self._hint())
        return time.monotonic() - self.starts[-1]

    def wait_mirroring(self, baseline: int, timeout: float = START_TIMEOUT_S,
                       source_total: Callable[[], int] | None = None) -> float:
        """After a restore: wait until the target's mirrored records exceed ``baseline`` (new
        records arrived) or, when ``source_total`` is given, equal the source's (caught
        up: nothing left to mirror). Returns the seconds waited."""
        started = time.monotonic()

        def moving() -> str | None:
            self._check_running()
            ends = self.target_end_offsets()
            total = sum(ends.values()) if ends else 0
            if total > baseline:
                return None
            if source_total is not None and total >= source_total():
                return None
            return f"target holds {total} mirrored records (baseline {baseline})"

        _wait_for(moving, timeout, "mirroring to move again", self._hint())
        return time.monotonic() - started

    def target_total(self) -> int:
        ends = self.target_end_offsets()
        return sum(ends.values()) if ends else 0


def _last_line(path: Path) -> str:
    try:
        lines = path.read_bytes()[-32_000:].decode(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    for line in reversed(lines):
        if " ERROR " in line or "Exception" in line:
            return line.strip()[:300]
    return lines[-1].strip()[:300] if lines else "(empty log)"


def _wait_for(check: Callable[[], str | None], timeout: float, what: str, hint: str) -> None:
    """Poll ``check`` (None = reached, else what was seen) with tenacity until ``timeout``."""
    from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

    seen: list[str] = ["nothing observed yet"]

    def attempt() -> str | None:
        try:
            result = check()
        except NodeError:
            raise
        except Exception as exc:  # a client error while the cluster moves: look again
            result = f"{type(exc).__name__}: {exc}"
        if result is not None:
            seen[0] = result
        return result

    try:
        Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(POLL_S),
                 retry=retry_if_result(lambda r: r is not None))(attempt)
    except RetryError:
        raise ClusterError(f"expected {what} within {timeout:.0f} s; last seen: {seen[0]}; "
                           f"{hint}") from None


def _wait(predicate: Callable[[], bool], timeout: float, what: str,
          seen: Callable[[], str], hint: str) -> None:
    _wait_for(lambda: None if predicate() else seen(), timeout, what, hint)


# ------------------------------------------------------------------------------- nemesis
def mirror_component(mm: Any, progress: Callable[[], int] | None = None,
                     wait_progress: Callable[[int, float], Any] | None = None) -> Any:
    """MirrorMaker 2 as a ``nemesis.Component`` (target ``mirror-maker``). Recovery is
    observed: by default the mirrored records on the target grow past the count at the
    restore; a case passes its consumer's view instead (``progress`` / ``wait_progress``),
    which transaction markers cannot fake."""
    from ..faults.nemesis import Component

    def default_wait(baseline: int, timeout: float) -> None:
        mm.wait_mirroring(baseline, timeout)

    return Component(NODE_NAME, "MirrorMaker 2", mm, progress or mm.target_total,
                     wait_progress or default_wait)


# ------------------------------------------------------------------------------- case runner
class ClusterWriter:
    """A RunWriter seen through one cluster: sends and polls carry its ``cluster`` column
    (HISTORY.md "Mirrored runs"), so the single-cluster workload writes mirrored rows."""

    def __init__(self, writer: Any, cluster: str):
        self._writer = writer
        self.cluster = cluster

    def send(self, *args: Any, **kwargs: Any) -> None:
        self._writer.send(*args, cluster=self.cluster, **kwargs)

    def poll(self, *args: Any, **kwargs: Any) -> None:
        self._writer.poll(*args, cluster=self.cluster, **kwargs)

    def event(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cluster", self.cluster)
        self._writer.event(*args, **kwargs)


PROBE_PROCESS = 2  # the readiness probe's sends: ordinary, acknowledged history rows
MIRROR_DRAIN_TIMEOUT = 180.0
MIRROR_FAULT_RATE = 100.0  # sends/s while MirrorMaker 2 faults run: restarts take a minute


def probe(topics: list[str], bootstrap: str, writer: Any) -> set[str]:
    """Send one record per topic (partition 0) to the source and record the sends: the
    'first record' MirrorMaker 2's readiness waits for, judged by the checker like any
    other message."""
    from kafka import KafkaProducer

    from ..history import now_ns
    from .workload import record_value

    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all",
                             request_timeout_ms=15_000, max_block_ms=15_000)
    acked = set()
    try:
        for i, topic in enumerate(topics):
            message_id = f"probe-{i}"
            invoke = now_ns()
            try:
                meta = producer.send(topic, record_value(message_id, 0), partition=0).get(60)
            except Exception as exc:  # the readiness wait will say what is missing
                writer.send(PROBE_PROCESS, topic, 0, message_id, None, "info", invoke,
                            now_ns(), f"{type(exc).__name__}: {exc}")
                continue
            writer.send(PROBE_PROCESS, topic, 0, message_id, meta.offset, "ok", invoke,
                        now_ns(), None)
            acked.add(message_id)
    finally:
        producer.close(timeout=10)
    return acked


def create_mirror_maker(source: Any, target: Any, topics: list[str], workdir: Path | str,
                        **kwargs: Any) -> MirrorMaker:
    """The MirrorMaker 2 for the clusters' backend: a container joined to both networks when
    both clusters are docker clusters (``mirror_docker``), else a local JVM (which reaches
    any cluster through its host listeners). Same interface either way."""
    from ..cluster.docker import DockerCluster

    if isinstance(source, DockerCluster) and isinstance(target, DockerCluster):
        from .mirror_docker import DockerMirrorMaker

        return DockerMirrorMaker(source, target, topics, workdir, **kwargs)
    return MirrorMaker(source, target, topics, workdir, **kwargs)


def run_mirror_case(case: Any, source: Any, target: Any, run_dir: Path, *,
                    mirror_version: str | None = None, spark_master: str | None = None,
                    replica_check: bool = True,
                    drain_timeout: float = MIRROR_DRAIN_TIMEOUT) -> Any:
    """Run a mirrored case: the producer writes to ``source``, MirrorMaker 2 mirrors into
    ``target`` (failed by the nemesis when the case has faults), the consumer reads the
    mirrored topics on the target; validate the history and both clusters' replicas, and
    write verdict.json and report.html with both clusters' timelines."""
    import random

    from ..cluster.base import TopicSpec
    from ..faults.nemesis import FaultPlan, Nemesis, run_in_thread, scenario_checks
    from ..history import RunWriter, write_run_json
    from .phases import (
        CaseContext,
        CaseResult,
        _drop_topics,
        _Phases,
        _versions,
        _write_verdict_and_report,
        topic_config,
        topic_names,
    )
    from .workload import Consumer, ProduceStats, produce

    run_dir = Path(run_dir)
    phases = _Phases()
    topics = topic_names(case)
    exactly_once = getattr(case, "mirror_semantics", "at-least-once") == "exactly-once"
    mm = create_mirror_maker(source, target, topics, run_dir / "mirror-maker",
                             kafka_version=mirror_version or
                             target.describe().get("kafka_version"),
                             policy=case.replication_policy, exactly_once=exactly_once)
    meta: dict[str, Any] = {
        "case_id": case.case_id, "matrix": case.matrix, "scenario": case.scenario,
        "params": case.as_dict(), "semantics": case.semantics, "seed": case.seed,
        "topics": topics, "mirror": {"topics": mm.mirrored, "policy": case.replication_policy,
                                     "exactly_once": exactly_once},
        "cluster": {"source": source.describe(), "target": target.describe()},
        "versions": {**_versions(source), "kafka_target": target.describe().get("kafka_version")},
        "start_time": time.time(), "source": case.source,
    }
    write_run_json(run_dir, meta)
    extra: dict[str, Any] = {}
    try:
        with RunWriter(run_dir) as writer:
            src_writer, tgt_writer = (ClusterWriter(writer, "source"),
                                      ClusterWriter(writer, "target"))
            with phases.timed("topics"):
                source.create_topics([TopicSpec(t, case.partitions, case.replication_factor,
                                                topic_config(case)) for t in topics])
            with phases.timed("mirror_start"):
                mm.start()
                writer.event("start", node=NODE_NAME, role=ROLE,
                             detail=f"MirrorMaker 2 {mm.dist.version} policy {mm.policy}"
                                    + (" exactly-once" if exactly_once else ""))
                probes = probe(topics, source.live_bootstrap_servers(), src_writer)
                extra["mirror_ready_s"] = round(mm.wait_ready(), 3)
            stats = ProduceStats()
            # exactly-once: records of transactions MirrorMaker 2 aborted (a killed task's
            # open one) stay in the target's log; only read_committed readers skip them
            consumer = Consumer(list(mm.mirrored.values()), case.partitions,
                                target.live_bootstrap_servers, tgt_writer,
                                isolation_level="read_committed" if exactly_once
                                else "read_uncommitted")
            ctx = CaseContext(case, source, writer, topics, random.Random(case.seed),
                              threading.Event(), run_dir, extra, stats, consumer)
            nemesis = thread = None
            outcome: dict[str, Any] = {}
            with phases.timed("produce"):
                consumer.start()
                if case.failure != "none":
                    plan = FaultPlan(seed=case.seed, failure=case.failure, target=case.target,
                                     failures=case.failures, downtime_s=case.downtime)
                    extra["fault_plan"] = plan.to_dict()
                    component = mirror_component(
                        mm, lambda: len(consumer.seen),
                        _consumer_progress(mm, consumer, stats, probes))
                    nemesis = Nemesis(source, writer, plan,
                                      [(t, p) for t in topics for p in range(case.partitions)],
                                      components={ROLE: component},
                                      recovery_timeout=START_TIMEOUT_S)
                    thread, outcome = run_in_thread(nemesis, ctx.stop)
                try:
                    # keep sending while faults are still being injected (rate-capped)
                    keep = (lambda: thread.is_alive()) if thread is not None else None
                    produce(case, topics, source.live_bootstrap_servers(), src_writer, stats,
                            keep_going=keep, max_rate=MIRROR_FAULT_RATE if keep else None)
                finally:
                    ctx.stop.set()
                    if thread is not None:
                        thread.join(drain_timeout + START_TIMEOUT_S)
                        if thread.is_alive():
                            extra.setdefault("hook_errors", []).append(
                                "mirror nemesis still running after the produce")
            if "error" in outcome:
                extra.setdefault("hook_errors", []).append(repr(outcome["error"]))
            if nemesis is not None:
                extra["faults"] = [r.to_dict() for r in nemesis.records]
                extra["checks"] = scenario_checks(nemesis.records)
            with phases.timed("drain"):
                missing = consumer.drain(set(stats.acked_ids) | probes, drain_timeout)
                consumer.stop()
            extra["unseen_after_drain"] = len(missing)
            extra["mirror_restarts"] = len(mm.starts) - 1
    finally:
        mm.close()
    with phases.timed("replicas"):
        replica = _replicas_both(source, target, topics, list(mm.mirrored.values()),
                                 case.partitions, run_dir, replica_check)
        if replica_check:
            _verify_both(run_dir, replica, extra, spark_master)
            extra["target_batches"] = target_batch_kinds(run_dir / "replicas-target")
    with phases.timed("validation"):
        from ..validation.checker import check

        verdict = check(run_dir, case.semantics, spark_master=spark_master)
    from ..validation.outcome import coverage_problems  # the one verdict's "checked nothing" part

    if problems := coverage_problems(run_dir, dict(verdict.counts), meta):
        extra["problems"] = problems
    logs = {f"source-{n}": str(p) for n, p in source.log_files().items()}
    logs.update({f"target-{n}": str(p) for n, p in target.log_files().items()})
    logs["mirror-maker"] = str(mm.log_file)
    meta.update(end_time=time.time(), phases=dict(phases), mirror={
        "topics": mm.mirrored, "policy": case.replication_policy, **mm.describe()})
    write_run_json(run_dir, meta)
    extra["clusters"] = _clusters_section(run_dir)
    result = CaseResult(case, run_dir, verdict, replica, dict(phases), logs, extra)
    _write_verdict_and_report(result)
    _drop_topics(source, topics)
    _drop_topics(target, list(mm.mirrored.values()))
    return result


def _consumer_progress(mm: MirrorMaker, consumer: Any, stats: Any,
                       probes: set[str]) -> Callable[[int, float], None]:
    """Recovery as the case's own reader sees it: new mirrored ids reach the target's
    consumer, or every id acknowledged so far has (nothing left to mirror)."""
    def wait(baseline: int, timeout: float) -> None:
        def moving() -> str | None:
            mm._check_running()
            seen = len(consumer.seen)
            if seen > baseline:
                return None
            with stats.lock:
                acked = set(stats.acked_ids) | probes
            if not consumer.missing(acked):
                return None
            return f"the target's consumer has seen {seen} ids (at the restore: {baseline})"

        _wait_for(moving, timeout, "new mirrored records at the target's consumer", mm._hint())

    return wait


def _clusters_section(run_dir: Path) -> dict[str, Any] | None:
    """verdict.json's two-cluster view (``report.data.clusters_section``); a problem reading
    it is noted, never fatal: the report is for people."""
    try:
        from ..report.data import clusters_section, load

        return clusters_section(load(run_dir))
    except Exception as exc:
        log.warning("clusters section of %s failed: %r", run_dir, exc)
        return {"error": repr(exc)}


def target_batch_kinds(replicas_dir: Path) -> dict[str, int]:
    """What the target's log holds for the mirrored partitions, read from the snapshot's
    segments (one replica per partition: the replicas are compared elsewhere). ``data``
    batches, of which ``transactional``; ``commits`` / ``aborts``: transaction markers;
    ``records`` in data batches and ``aborted_records`` (in transactions that ended with an
    abort marker: what a read_uncommitted reader would see twice after a hard failure).
    Evidence that exactly-once mirroring really wrote transactionally."""
    from kafka.record.default_records import DefaultRecordBatch

    from ..validation.replicas.batches import CONTROL_MASK, SegmentScanner

    transactional_mask = 0x10
    kinds = dict.fromkeys(("data", "transactional", "commits", "aborts", "records",
                           "aborted_records"), 0)
    chosen: dict[str, Path] = {}  # partition directory name -> the first replica holding it
    for part in sorted(Path(replicas_dir).glob("replicas/*/*"), key=lambda d: (
            len(d.parent.name), d.parent.name)):
        chosen.setdefault(part.name, part)
    for part in chosen.values():
        open_records: dict[int, int] = {}  # producer id -> records in its open transaction
        for segment in sorted(part.glob("*.log")):
            for batch in SegmentScanner(segment, keep_data=True):
                if batch.corrupt or batch.data is None:
                    continue
                parsed = DefaultRecordBatch(bytes(batch.data))
                if batch.attributes & CONTROL_MASK:
                    marker = next(iter(parsed), None)
                    key = bytes(marker.key) if marker is not None and marker.key else b""
                    abort = len(key) >= 4 and int.from_bytes(key[2:4], "big") == 0
                    kinds["aborts" if abort else "commits"] += 1
                    pending = open_records.pop(parsed.producer_id, 0)
                    if abort:
                        kinds["aborted_records"] += pending
                    continue
                count = batch.last_offset - batch.base_offset + 1
                kinds["data"] += 1
                kinds["records"] += count
                if batch.attributes & transactional_mask:
                    kinds["transactional"] += 1
                    open_records[parsed.producer_id] = open_records.get(
                        parsed.producer_id, 0) + count
    return kinds


def _replicas_both(source: Any, target: Any, topics: list[str], mirrored: list[str],
                   partitions: int, run_dir: Path, enabled: bool) -> Any:
    """Snapshot and compare the replicas of both clusters, each into its own sub-run
    directory (``replicas-source/``, ``replicas-target/``, each with its replicas.json, so
    ``kreplica verify-logs`` runs on either); one combined ReplicaCheck."""
    from .phases import ReplicaCheck, snapshot_and_compare

    if not enabled:
        return ReplicaCheck(False, 0, [], skipped="--kreplica-no-replica-check")
    checks = {}
    for name, cluster, names in (("source", source, topics), ("target", target, mirrored)):
        sub = run_dir / f"replicas-{name}"
        sub.mkdir(parents=True, exist_ok=True)
        checks[name] = snapshot_and_compare(cluster, names, partitions, sub)
    mismatches = [{**m, "cluster": n} for n, c in checks.items() for m in c.mismatches]
    return ReplicaCheck(all(c.at_rest for c in checks.values()),
                        sum(c.segments for c in checks.values()), mismatches)


# ------------------------------------------------------------------------------- pytest glue
def pair_specs(case: Any, target_version: str | None = None) -> tuple[Any, Any]:
    """The two ClusterSpecs of a mirrored case: equal but for their role (and the target's
    version in a mixed-version pair), so the session pool keeps them apart."""
    from dataclasses import replace

    from ..cluster.pool import cluster_spec

    base = cluster_spec(case)
    return (replace(base, role="source"),
            replace(base, role="target", kafka_version=target_version))


def acquire_pair(pool: Any, case: Any, target_version: str | None = None) -> tuple[Any, Any]:
    """A healthy source and target from the session pool (which then keeps two alive)."""
    source_spec, target_spec = pair_specs(case, target_version)
    pool.max_alive = max(pool.max_alive, 2)
    source = pool.acquire(source_spec)
    target = pool.acquire(target_spec)
    # acquiring the target may have evicted the source (LRU): take it again
    if not pool.holds(source_spec):
        source = pool.acquire(source_spec)
    return source, target


def _verify_both(run_dir: Path, replica: Any, extra: dict[str, Any],
                 spark_master: str | None) -> None:
    """The batch-level replica-log verifier (``kreplica verify-logs``) on each cluster's
    snapshot; its anomalies join the replica check (and so the case's validity)."""
    try:
        from ..validation.replicas.verify import verify_logs
    except ImportError as exc:  # the verifier is optional for this runner
        extra["replica_logs"] = f"not available ({exc})"
        return
    extra["replica_logs"] = {}
    for name in ("source", "target"):
        verdict = verify_logs(run_dir / f"replicas-{name}", spark_master=spark_master)
        extra["replica_logs"][name] = {"valid": verdict.valid, "counts": verdict.counts,
                                       "first_divergence": verdict.first_divergence}
        if not verdict.valid:
            replica.mismatches.append({"cluster": name, "verify_logs": verdict.summary()})
