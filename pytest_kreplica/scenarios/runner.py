"""The phase runner every scenario uses: one matrix case end to end, in timed phases:

    topics -> ``before_produce`` steps -> produce (+ consumer, + ``during_produce`` hooks in
    threads) -> drain (+ ``during_consume`` hooks) -> ``cleanup`` -> replica snapshot ->
    validation -> run.json, verdict.json, report.html

It writes the run directory of shared/HISTORY.md (sends/polls/events, run.json,
replicas.json and the replicas' segments, verdict.json) and returns a ``CaseResult``.

A scenario is a small module with ``run(case, pool, run_dir, options) -> CaseResult`` (see
``scenarios.SCENARIOS``) that picks its clusters and puts its own steps into ``CaseHooks``.
Faults plug in through the same hooks: each ``during_*`` callable receives a ``CaseContext``
and runs in its own thread while the producer runs (joined before the drain) or while the
consumer drains (joined after it); it must return soon after ``ctx.stop`` is set. A
``Flow`` says where records go: produced to one cluster, read from the same one, or (a
mirrored case) read from a second cluster's mirrored topics.
"""

from __future__ import annotations

import logging
import platform
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cluster.base import TopicSpec
from ..cluster.facilities.impl.tiered import topic_config as tiered_topic_config
from ..cluster.sizing import case_replicas, create_topics_in_batches, scaled_wait
from ..errors import HarnessError
from ..history import POLLS, SENDS, Roll, RunWriter, write_run_json
from ..validation.checker import check
from ..validation.checker.arrow import arrow_schema
from ..validation.outcome import judge_case
from ..workloads.choice import client_meta, workload_of
from ..workloads.plain import ProduceStats
from ..workloads.protocol import Reader
from .harness import harness_error, raise_harness_error
from .interrupt import cut_short
from .replicas import Phases, ReplicaCheck, verify_both, verify_replicas
from .result import CaseResult, write_verdict_and_report

if TYPE_CHECKING:
    from ..cluster.base import Cluster
    from ..faults.nemesis import Component
    from ..matrix import Case

__all__ = ["CaseContext", "CaseHooks", "CaseResult", "ClusterWriter", "Flow", "Phases",
           "ReplicaCheck", "RunOptions", "run_case", "topic_config", "topic_names",
           "verify_replicas"]

log = logging.getLogger(__name__)

DRAIN_TIMEOUT = 60.0  # seconds the consumer may take after the produce to see every ack
TOPICS_TIMEOUT = 30.0  # the case's topics created and in sync (admin requests retried within)
HOOK_JOIN_TIMEOUT = 120.0


@dataclass
class CaseContext:
    """What a hook gets: the live cluster (the source of a mirrored case), the case, the
    history writer, the case's topics, a ``random.Random`` seeded by the case (so a fault
    schedule can be replayed), and an event set when the hook's phase has ended."""

    case: Case
    cluster: Cluster
    writer: RunWriter
    topics: list[str]
    rng: random.Random
    stop: threading.Event
    run_dir: Path
    extra: dict[str, Any] = field(default_factory=dict)  # results a hook wants in verdict.json
    stats: ProduceStats | None = None  # the producer's sent / acked counts, for progress lines
    consumer: Reader | None = None  # the workload's reader (``polled``), for progress lines
    meta: dict[str, Any] = field(default_factory=dict)  # run.json (a step may add to it)
    # what the nemesis may fail beside the brokers (``faults.nemesis.Component`` by target)
    components: dict[str, Component] = field(default_factory=dict)
    acked_elsewhere: set[str] = field(default_factory=set)  # ids acked outside the producer
    logs: dict[str, str] = field(default_factory=dict)  # more logs for the failure message


Hook = Callable[[CaseContext], None]


@dataclass
class CaseHooks:
    """A scenario's and the faults' additions to the phases (module docstring)."""

    during_produce: list[Hook] = field(default_factory=list)
    during_consume: list[Hook] = field(default_factory=list)
    # the producer keeps sending past the case's ``messages`` while any of these is true
    # (a nemesis still has faults to inject), at most ``produce_rate`` sends a second
    keep_producing: list[Callable[[], bool]] = field(default_factory=list)
    produce_rate: float | None = None
    # phase name -> step, run in order on the main thread after the topics exist
    before_produce: dict[str, Hook] = field(default_factory=dict)
    cleanup: list[Hook] = field(default_factory=list)  # after the drain, even when it failed
    before_verdict: list[Hook] = field(default_factory=list)  # after run.json is final


@dataclass
class RunOptions:
    """What a scenario's ``run`` gets besides the case, the pool and the run directory."""

    spark_master: str | None = None
    replica_check: bool = True
    hooks: CaseHooks = field(default_factory=CaseHooks)


@dataclass
class Flow:
    """Where a case's records go: produced to ``source``, read from ``target`` (the same
    cluster unless mirrored) under ``read_names`` (topic -> its name on the target)."""

    source: Cluster
    target: Cluster | None = None
    read_names: dict[str, str] | None = None
    isolation_level: str | None = None  # None: the case's isolation, else the workload's own

    @property
    def mirrored(self) -> bool:
        return self.target is not None

    def read_topics(self, topics: list[str]) -> list[str]:
        return [(self.read_names or {}).get(t, t) for t in topics]

    def reader(self) -> Cluster:
        return self.target if self.target is not None else self.source

    def describe(self) -> dict[str, Any]:
        if self.target is None:
            return self.source.describe()
        return {"source": self.source.describe(), "target": self.target.describe()}

    def versions(self) -> dict[str, Any]:
        import kafka  # heavy: loaded when a case runs

        out = {"python": platform.python_version(), "kafka_python": kafka.__version__,
               "kafka": self.source.describe().get("kafka_version")}
        if self.target is not None:
            out["kafka_target"] = self.target.describe().get("kafka_version")
        return out

    def log_files(self) -> dict[int | str, str]:
        if self.target is None:
            return {n: str(p) for n, p in self.source.log_files().items()}
        out: dict[int | str, str] = {}
        for name, cluster in (("source", self.source), ("target", self.target)):
            out.update({f"{name}-{n}": str(p) for n, p in cluster.log_files().items()})
        return out


class ClusterWriter:
    """A RunWriter seen through one cluster of a mirrored run: sends, polls and events carry
    its ``cluster`` column (HISTORY.md "Mirrored runs")."""

    def __init__(self, writer: RunWriter, cluster: str):
        self._writer = writer
        self.cluster = cluster

    def send(self, *args: Any, **kwargs: Any) -> None:
        self._writer.send(*args, cluster=self.cluster, **kwargs)

    def poll(self, *args: Any, **kwargs: Any) -> None:
        self._writer.poll(*args, cluster=self.cluster, **kwargs)

    def event(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("cluster", self.cluster)
        self._writer.event(*args, **kwargs)


def topic_names(case: Case) -> list[str]:
    """Fresh topic names for one run of a case (unique even when a case is re-run)."""
    stamp = f"{time.time_ns() % 10**9:09d}"
    base = f"kr-{case.case_id}"[:200]
    return [f"{base}-{stamp}-{i}" for i in range(case.topics)]


def topic_config(case: Case) -> dict[str, str]:
    config = {"min.insync.replicas": str(case.min_insync_replicas),
              "unclean.leader.election.enable": str(case.unclean_leader_election).lower()}
    if case.segment_bytes is not None:
        config["segment.bytes"] = str(case.segment_bytes)  # the backend maps small ones on 4.x
    if case.flush_messages is not None:
        config["flush.messages"] = str(case.flush_messages)
    if getattr(case, "tiered", "off") == "on":
        config.update(tiered_topic_config())
    return config


def _run_hooks(hooks: list[Hook], ctx: CaseContext, name: str) -> list[threading.Thread]:
    def wrapped(hook: Hook) -> Callable[[], None]:
        def run() -> None:
            try:
                hook(ctx)
            except Exception as exc:  # reported in verdict.json and fails the case
                if harness_error(exc) is not None:  # the harness', not the broker's: an error
                    log.warning("hook %s could not do its job: %s", hook, exc)
                    ctx.extra.setdefault("harness_errors", []).append(
                        f"{name} {getattr(hook, '__name__', hook)}: {harness_error(exc)}")
                    return
                log.exception("hook %s failed", hook)
                ctx.extra.setdefault("hook_errors", []).append(
                    f"{name} {getattr(hook, '__name__', hook)}: {exc!r}")

        return run

    threads = [threading.Thread(target=wrapped(h), name=f"kreplica-{name}", daemon=True)
               for h in hooks]
    for t in threads:
        t.start()
    return threads


def _join(threads: list[threading.Thread], ctx: CaseContext) -> None:
    ctx.stop.set()
    deadline = time.monotonic() + HOOK_JOIN_TIMEOUT
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            ctx.extra.setdefault("hook_errors", []).append(
                f"{t.name} still running {HOOK_JOIN_TIMEOUT:.0f} s after its phase ended")


def run_case(case: Case, cluster: Cluster, run_dir: Path, hooks: CaseHooks | None = None, *,
             spark_master: str | None = None, replica_check: bool = True,
             drain_timeout: float = DRAIN_TIMEOUT, cluster_ready_s: float | None = None,
             flow: Flow | None = None, topics: list[str] | None = None,
             run_meta: dict[str, Any] | None = None) -> CaseResult:
    """Run ``case`` on a started, healthy ``cluster`` (``flow.source`` of a mirrored case);
    write ``run_dir``; validate. ``run_meta`` adds to run.json (a mirrored case's
    ``mirror`` section)."""
    hooks = hooks or CaseHooks()
    flow = flow or Flow(cluster)
    run_dir = Path(run_dir)
    phases = Phases()
    if cluster_ready_s is not None:  # the pool's health gate (or a cold start) for this case
        phases["cluster ready"] = round(cluster_ready_s, 3)
    topics = topics or topic_names(case)
    meta: dict[str, Any] = {
        "case_id": case.case_id, "matrix": case.matrix, "scenario": case.scenario,
        "params": case.as_dict(), "semantics": case.semantics, "seed": case.seed,
        "topics": topics, "cluster": flow.describe(), "versions": flow.versions(),
        "start_time": time.time(), "source": case.source, "client": client_meta(case),
    }
    meta.update(run_meta or {})
    workload = workload_of(case)
    if workload.history_version > 1:  # docs/history.md: a version 1 run.json names none
        meta["history_version"] = workload.history_version
    meta.update(workload.run_meta(topics))  # what the workload tells the checker
    write_run_json(run_dir, meta)
    with history_writer(case, run_dir) as writer:
        ctx = CaseContext(case, cluster, writer, topics, random.Random(case.seed),
                          threading.Event(), run_dir, meta=meta)
        harness: list[str] = []
        started = time.monotonic()
        try:
            with cut_short(ctx.stop, enabled=case.duration is not None) as cut:
                _produce_and_drain(ctx, flow, hooks, phases,
                                   scaled_wait(drain_timeout, case_replicas(case)))
        except Exception as exc:
            if harness_error(exc) is None:
                raise
            harness.append(harness_error(exc))
        finally:
            for step in hooks.cleanup:
                step(ctx)
    extra = ctx.extra
    if cut.signal is not None:  # verdict.json says the case was cut short, and when
        extra["interrupted"] = cut.describe(started)
    harness.extend(extra.pop("harness_errors", None) or [])
    if harness:  # nothing is judged about the broker: its verdict part is "harness"
        raise_harness_error(case, run_dir, harness, extra, dict(phases))
    try:
        replica, verdict, judged = _validate(case, cluster, flow, topics, run_dir, meta,
                                             extra, phases, spark_master, replica_check)
    except HarnessError as exc:  # a Spark job that died, a snapshot that could not be read
        raise_harness_error(case, run_dir, [f"validation: {exc}"], extra, dict(phases))
    if judged["tradeoff"] is not None:
        extra["tradeoff"] = judged["tradeoff"]
    if judged["problems"]:
        extra["problems"] = judged["problems"]
    if judged["availability"] is not None:
        extra["availability"] = judged["availability"]
    meta.update(end_time=time.time(), phases=dict(phases))
    write_run_json(run_dir, meta)
    for step in hooks.before_verdict:
        step(ctx)
    result = CaseResult(case, run_dir, verdict, replica, dict(phases),
                        {**flow.log_files(), **ctx.logs}, extra,
                        outcome={"passed": judged["passed"], "reason": judged["reason"]})
    write_verdict_and_report(result)
    _drop_topics(cluster, topics)
    if flow.mirrored:
        _drop_topics(flow.reader(), flow.read_topics(topics))
    return result


def history_writer(case: Case, run_dir: Path) -> RunWriter:
    """A duration-bounded case (a soak) rolls its sends and polls into Parquet parts, in
    bounded memory (docs/history.md); any other case writes JSON Lines."""
    if case.duration is None:
        return RunWriter(run_dir)
    return RunWriter(run_dir, roll=Roll(), schemas={n: arrow_schema(n) for n in (SENDS, POLLS)})


def _produce_and_drain(ctx: CaseContext, flow: Flow, hooks: CaseHooks, phases: Phases,
                       drain_timeout: float) -> None:
    case, cluster, topics, writer = ctx.case, ctx.cluster, ctx.topics, ctx.writer
    produce_writer = ClusterWriter(writer, "source") if flow.mirrored else writer
    read_writer = ClusterWriter(writer, "target") if flow.mirrored else writer
    with phases.timed("topics"):
        create_topics_in_batches(cluster, [TopicSpec(t, case.partitions, case.replication_factor,
                                                     topic_config(case)) for t in topics],
                                 TOPICS_TIMEOUT)
    for name, step in hooks.before_produce.items():
        with phases.timed(name):
            step(ctx)
    reader, read_topics = flow.reader(), flow.read_topics(topics)
    workload = workload_of(case)
    isolation = flow.isolation_level or case.isolation
    consumer = workload.consumer(
        read_topics, case.partitions, reader.live_bootstrap_servers, read_writer,
        **({"isolation_level": isolation} if isolation else {}),
        **workload.consumer_options(case))
    ctx.stats, ctx.consumer = ProduceStats(), consumer
    ctx.components.update(consumer.components())  # client processes the nemesis may fail
    producer: dict[str, Any] = {}
    if workload.producer_handle is not None:  # a producer process the nemesis may fail
        producer["producer"] = handle = workload.producer_handle()
        ctx.components[handle.role] = handle.component()
    keep = hooks.keep_producing
    with phases.timed("produce"):
        consumer.start()
        threads = _run_hooks(hooks.during_produce, ctx, "during_produce")
        try:
            workload.produce(case, topics, cluster.live_bootstrap_servers(), produce_writer,
                             ctx.stats,
                             keep_going=(lambda: any(k() for k in keep) and not ctx.stop.is_set())
                             if keep else None,  # ctx.stop: a soak cut short (interrupt.py)
                             max_rate=hooks.produce_rate, **producer)
        finally:
            _join(threads, ctx)
    with phases.timed("drain"):
        ctx.stop = threading.Event()
        threads = _run_hooks(hooks.during_consume, ctx, "during_consume")
        ends = None if flow.mirrored else _readable_ends(reader, read_topics, case.partitions)
        try:
            missing = consumer.drain(set(ctx.stats.acked_ids) | ctx.acked_elsewhere,
                                     drain_timeout, ends)
        finally:
            consumer.stop()
            _join(threads, ctx)
    ctx.extra["unseen_after_drain"] = len(missing)


def _validate(case: Case, cluster: Cluster, flow: Flow, topics: list[str], run_dir: Path,
              meta: dict[str, Any], extra: dict[str, Any], phases: Phases,
              spark_master: str | None, replica_check: bool
              ) -> tuple[ReplicaCheck, Any, dict[str, Any]]:
    """The replica check, the history check and the case's one verdict (``judge_case``);
    a check that could not run raises ``HarnessError`` (``CheckError``)."""
    if not replica_check:
        replica = ReplicaCheck(False, 0, [], skipped="--kreplica-no-replica-check")
    elif flow.mirrored:
        replica = verify_both({"source": (flow.source, topics),
                               "target": (flow.reader(), flow.read_topics(topics))},
                              case.partitions, run_dir, spark_master, phases, extra)
    else:
        replica = verify_replicas(cluster, topics, case.partitions, run_dir, spark_master,
                                  phases)
    with phases.timed("validation"):
        verdict = check(run_dir, case.semantics, spark_master=spark_master)
        judged = judge_case(run_dir, verdict, meta=meta, replicas=replica.as_dict(),
                            checks=extra.get("checks"), hook_errors=extra.get("hook_errors"),
                            faults=extra.get("faults"))
    return replica, verdict, judged


def _readable_ends(cluster: Cluster, topics: list[str], partitions: int
                   ) -> Callable[[], dict[tuple[str, int], int]] | None:
    """What lets the drain end once nothing more can be read (None: a backend without it,
    the drain then waits for every id or its deadline)."""
    ends = getattr(cluster, "readable_ends", None)
    parts = [(t, p) for t in topics for p in range(partitions)]
    return None if ends is None else (lambda: ends(parts))


def _drop_topics(cluster: Cluster, topics: list[str]) -> None:
    """Keep the shared cluster lean; the run directory holds the evidence already."""
    try:
        cluster.delete_topics(topics)
    except Exception as exc:  # the next health gate judges the cluster
        log.warning("deleting topics %s failed: %s", topics, exc)
