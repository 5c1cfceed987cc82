"""Scenario ``mirror`` (C.6, and C.7a's mirror pair): a source and a target cluster from the
session pool joined by MirrorMaker 2 (``cluster.mirrormaker``), run by the phase runner with
its own steps: start MirrorMaker 2 and wait until a probe record per topic is mirrored, read
the mirrored topics on the target, close MirrorMaker 2 after the drain, snapshot both
clusters' replicas, and put the two-cluster view into verdict.json. The nemesis the plugin
adds (``plugin.failures.add_nemesis``) fails MirrorMaker 2 as the component of target
``mirror-maker`` (``ctx.components``), like it fails a broker.

The run directory is shared/HISTORY.md's "Mirrored runs" (``cluster`` column,
``mirror.topics`` in run.json). With exactly-once mirroring the target's consumer reads
read_committed: records of transactions MirrorMaker 2 aborted stay in the target's log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cluster.admin.clients import close_producer
from ..cluster.base import NodeState, TopicSpec
from ..cluster.mirrormaker import NODE_NAME, ROLE, START_TIMEOUT_S, MirrorMaker, create_mirror_maker
from ..cluster.pool import cluster_spec
from ..cluster.sizing import (
    TOPIC_BATCH_PARTITIONS,
    broker_heap_mb,
    create_topics_in_batches,
    creation_bound,
    mirror_heap_mb,
    mirror_refresh_s,
    replicas_per_broker,
)
from ..faults import Component
from ..history import now_ns
from ..validation.replicas.batches import CONTROL_MASK, SegmentScanner
from ..waits import wait_for
from ..workloads.plain import record_value
from .runner import (
    CaseContext,
    CaseHooks,
    CaseResult,
    ClusterWriter,
    Flow,
    RunOptions,
    run_case,
    topic_names,
)

if TYPE_CHECKING:
    from ..cluster.base import Cluster, ClusterSpec
    from ..cluster.pool import ClusterPool
    from ..history import RunWriter
    from ..matrix import Case
    from ..workloads.plain import Consumer, ProduceStats

log = logging.getLogger(__name__)

PROBE_PROCESS = 2  # the readiness probe's sends: ordinary, acknowledged history rows
MIRROR_DRAIN_TIMEOUT = 180.0
MIRROR_FAULT_RATE = 100.0  # sends/s while MirrorMaker 2 faults run: restarts take a minute
KILLED_TASK_RESTARTS = 2  # operator restarts per drain after a task was killed for good
KILLED_TASK_LOOK_S = 2.0


def run(case: Case, pool: ClusterPool, run_dir: Path, options: RunOptions) -> CaseResult:
    """Take a source and a target (on ``target_kafka_version``) from ``pool`` and run the
    mirrored case between them."""
    source, target = acquire_pair(pool, case, case.target_kafka_version)
    return run_mirror_case(case, source, target, run_dir, hooks=options.hooks,
                           spark_master=options.spark_master,
                           replica_check=options.replica_check)


def run_mirror_case(case: Case, source: Cluster, target: Cluster, run_dir: Path, *,
                    hooks: CaseHooks | None = None, mirror_version: str | None = None,
                    spark_master: str | None = None, replica_check: bool = True,
                    drain_timeout: float = MIRROR_DRAIN_TIMEOUT) -> CaseResult:
    """Run a mirrored case: the producer writes to ``source``, MirrorMaker 2 mirrors into
    ``target``, the consumer reads the mirrored topics on the target; ``hooks`` (the
    nemesis) may fail MirrorMaker 2 through ``ctx.components``."""
    hooks = hooks or CaseHooks()
    run_dir = Path(run_dir)
    topics = topic_names(case)
    exactly_once = case.mirror_semantics == "exactly-once"
    partitions = len(topics) * case.partitions
    mm = create_mirror_maker(source, target, topics, run_dir / "mirror-maker",
                             kafka_version=mirror_version or
                             target.describe().get("kafka_version"),
                             policy=case.replication_policy, exactly_once=exactly_once,
                             replication_factor=getattr(case, "target_replication_factor",
                                                        None),
                             heap_mb=mirror_heap_mb(partitions),
                             refresh_s=mirror_refresh_s(partitions))
    _, factor = target_shape(case)
    ready_s = ready_timeout(partitions, factor)
    first = target_topics(mm.mirrored, case.partitions, factor)
    hooks.before_produce["mirror_start"] = lambda ctx: _start(ctx, mm, ready_s, first)
    hooks.cleanup.append(lambda ctx: _close(ctx, mm))
    if case.fault_timing != "consume":  # else the nemesis owns MirrorMaker 2 in the drain
        hooks.during_consume.append(lambda ctx: restart_killed_tasks(ctx, mm))
    hooks.before_verdict.append(_clusters_section)
    if replica_check:
        hooks.before_verdict.append(lambda ctx: ctx.extra.update(
            target_batches=target_batch_kinds(run_dir / "replicas-target")))
    if case.failure != "none":
        hooks.produce_rate = MIRROR_FAULT_RATE
    flow = Flow(source, target, dict(mm.mirrored),
                "read_committed" if exactly_once else "read_uncommitted")
    mirror_meta = {"topics": mm.mirrored, "policy": case.replication_policy,
                   "exactly_once": exactly_once}
    return run_case(case, source, run_dir, hooks, spark_master=spark_master,
                    replica_check=replica_check, drain_timeout=drain_timeout, flow=flow,
                    topics=topics, run_meta={"mirror": mirror_meta})


def ready_timeout(partitions: int, replication_factor: int) -> float:
    """How long MirrorMaker 2 may take from its launch to a first record in every mirrored
    topic: ``START_TIMEOUT_S``, and for a large mirror the time its target takes to create
    the topics' replicas (``cluster.sizing``)."""
    return creation_bound(START_TIMEOUT_S, partitions * replication_factor)


def target_shape(case: Case) -> tuple[int, int]:
    """The mirror target's brokers and the replicas of each mirrored partition there
    (``target_brokers``, ``target_replication_factor``): by default the source's brokers and
    up to 3 replicas, as MirrorMaker 2 is configured (``mm2_properties``)."""
    brokers = getattr(case, "target_brokers", None) or case.brokers
    factor = getattr(case, "target_replication_factor", None) or min(3, brokers)
    return brokers, factor


def target_topics(mirrored: dict[str, str], partitions: int, replication_factor: int
                  ) -> list[TopicSpec]:
    """The mirrored topics a large mirror's target gets before MirrorMaker 2 starts; none for
    a small one. MirrorMaker 2 creates every missing topic in one CreateTopics request, which
    a KRaft controller refuses past 10,000 records ("Unable to perform excessively large
    batch operation"): the plan's 1000 topics x 10 partitions are past it."""
    if len(mirrored) * partitions <= TOPIC_BATCH_PARTITIONS:
        return []
    return [TopicSpec(name, partitions, replication_factor) for name in mirrored.values()]


def _start(ctx: CaseContext, mm: MirrorMaker, ready_s: float = START_TIMEOUT_S,
           first: list[TopicSpec] | None = None) -> None:
    """Create a large mirror's topics on the target in batches (``target_topics``), start
    MirrorMaker 2, send a probe record per topic and wait until each is mirrored; then offer
    it to the nemesis as the ``mirror-maker`` component."""
    if first:
        create_topics_in_batches(mm.target, first, START_TIMEOUT_S)
    mm.start()
    ctx.writer.event("start", node=NODE_NAME, role=ROLE,
                     detail=f"MirrorMaker 2 {mm.dist.version} policy {mm.policy}"
                            + (" exactly-once" if mm.exactly_once else ""))
    probes = probe(ctx.topics, ctx.cluster.live_bootstrap_servers(),
                   ClusterWriter(ctx.writer, "source"))
    ctx.acked_elsewhere |= probes
    ctx.extra["mirror_ready_s"] = round(mm.wait_ready(ready_s), 3)
    ctx.logs["mirror-maker"] = str(mm.log_file)
    ctx.components[ROLE] = mirror_component(
        mm, lambda: len(ctx.consumer.seen),
        _consumer_progress(mm, lambda: ctx.consumer, lambda: ctx.stats, probes, ready_s),
        recovery_timeout=ready_s)


def restart_killed_tasks(ctx: CaseContext, mm: MirrorMaker,
                         look_every: float = KILLED_TASK_LOOK_S) -> None:
    """During the drain: when the running MirrorMaker 2 has killed a Connect task for good
    (its log says so: ``cluster.mirrormaker.tasks``), restart the process, as an operator of
    a dedicated MirrorMaker 2 must, at most ``KILLED_TASK_RESTARTS`` times. Each killed task
    is a ``task-failed`` event and a line of the verdict's ``mirror_killed_tasks``, and each
    restart a ``restart`` event: the records the task still owed are then judged like any
    others, and a case that still misses them names the task and its cause."""
    found: list[str] = ctx.extra.setdefault("mirror_killed_tasks", [])
    restarts = 0
    while not ctx.stop.wait(look_every):
        if mm.state is not NodeState.RUNNING:
            continue
        killed = mm.killed_tasks()
        if not killed:
            continue
        for line in killed:
            ctx.writer.event("task-failed", node=NODE_NAME, role=ROLE, detail=line)
        found.extend(killed)
        ctx.extra.setdefault("notes", []).extend(
            f"MirrorMaker 2 killed a task for good (see its task-failed and restart events): "
            f"{line}" for line in killed)
        if restarts >= KILLED_TASK_RESTARTS:
            return
        log.warning("MirrorMaker 2 killed %s for good; restarting it", "; ".join(killed))
        ctx.writer.event("restart", node=NODE_NAME, role=ROLE,
                         detail=f"after a task was killed for good ({len(killed)} task(s))")
        mm.restart()
        restarts += 1


def _close(ctx: CaseContext, mm: MirrorMaker) -> None:
    mm.close()
    ctx.extra["mirror_restarts"] = max(0, len(mm.starts) - 1)
    ctx.logs["mirror-maker"] = str(mm.log_file)
    ctx.meta["mirror"] = {**ctx.meta.get("mirror", {}), **mm.describe()}


def probe(topics: list[str], bootstrap: str, writer: RunWriter | ClusterWriter) -> set[str]:
    """Send one record per topic (partition 0) to the source and record the sends: the
    'first record' MirrorMaker 2's readiness waits for, judged by the checker like any
    other message."""
    from kafka import KafkaProducer  # heavy: loaded when a case runs

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
        if trouble := close_producer(producer, 10.0):
            log.warning("mirror probe: %s", trouble)
    return acked


def _consumer_progress(mm: MirrorMaker, consumer: Callable[[], Consumer],
                       stats: Callable[[], ProduceStats], probes: set[str],
                       start_s: float = START_TIMEOUT_S) -> Callable[[int, float], None]:
    """Recovery as the case's own reader sees it: new mirrored ids reach the target's
    consumer, or every id acknowledged so far has (nothing left to mirror). A restarted
    MirrorMaker 2 gets at least ``start_s`` (``ready_timeout``): its launch alone takes
    ≈ 10 s idle."""
    def wait(baseline: int, timeout: float) -> None:
        def moving() -> str | None:
            mm.check_running()
            seen = len(consumer().seen)
            if seen > baseline:
                return None
            with stats().lock:
                acked = set(stats().acked_ids) | probes
            if not consumer().missing(acked):
                return None
            return f"the target's consumer has seen {seen} ids (at the restore: {baseline})"

        wait_for(moving, max(timeout, start_s),
                 "new mirrored records at the target's consumer", mm.hint())

    return wait


def _clusters_section(ctx: CaseContext) -> None:
    """verdict.json's two-cluster view (``report.data.clusters_section``); a problem reading
    it is noted, never fatal: the report is for people."""
    from ..report.data import clusters_section, load  # pyarrow: loaded when a case ends

    try:
        ctx.extra["clusters"] = clusters_section(load(ctx.run_dir))
    except Exception as exc:
        log.warning("clusters section of %s failed: %r", ctx.run_dir, exc)
        ctx.extra["clusters"] = {"error": repr(exc)}


def mirror_component(mm: MirrorMaker, progress: Callable[[], int] | None = None,
                     wait_progress: Callable[[int, float], Any] | None = None,
                     recovery_timeout: float = START_TIMEOUT_S) -> Component:
    """MirrorMaker 2 as a ``nemesis.Component`` (target ``mirror-maker``). Recovery is
    observed: by default the mirrored records on the target grow past the count at the
    restore; a case passes its consumer's view instead (``progress`` / ``wait_progress``),
    which transaction markers cannot fake."""
    def default_wait(baseline: int, timeout: float) -> None:
        mm.wait_mirroring(baseline, timeout)

    return Component(NODE_NAME, "MirrorMaker 2", mm, progress or mm.target_total,
                     wait_progress or default_wait, recovery_timeout=recovery_timeout)


def target_batch_kinds(replicas_dir: Path) -> dict[str, int]:
    """What the target's log holds for the mirrored partitions, read from the snapshot's
    segments (one replica per partition: the replicas are compared elsewhere). ``data``
    batches, of which ``transactional``; ``commits`` / ``aborts``: transaction markers;
    ``records`` in data batches and ``aborted_records`` (in transactions that ended with an
    abort marker: what a read_uncommitted reader would see twice after a hard failure).
    Evidence that exactly-once mirroring really wrote transactionally."""
    from kafka.record.default_records import DefaultRecordBatch  # heavy: kafka

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


def pair_specs(case: Case, target_version: str | None = None
               ) -> tuple[ClusterSpec, ClusterSpec]:
    """The two ClusterSpecs of a mirrored case: equal but for their role, the target's
    version in a mixed-version pair and the target's size (``target_shape``, its heap sized
    to the replicas each of its brokers holds), so the session pool keeps them apart."""
    base = cluster_spec(case)
    brokers, factor = target_shape(case)
    heap = broker_heap_mb(replicas_per_broker(case.topics, case.partitions, factor, brokers))
    return (replace(base, role="source"),
            replace(base, role="target", kafka_version=target_version, brokers=brokers,
                    heap_mb=heap))


def acquire_pair(pool: ClusterPool, case: Case, target_version: str | None = None
                 ) -> tuple[Cluster, Cluster]:
    """A healthy source and target from the session pool, which then keeps two alive: the
    source, just used, is never the least recently used one the target's start evicts."""
    source_spec, target_spec = pair_specs(case, target_version)
    pool.max_alive = max(pool.max_alive, 2)
    return pool.acquire(source_spec), pool.acquire(target_spec)
