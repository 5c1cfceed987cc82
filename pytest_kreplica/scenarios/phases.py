"""Running one matrix case end to end, in timed phases:

    topics -> produce (+ consumer, + ``during_produce`` hooks in threads) -> drain
    (+ ``during_consume`` hooks) -> replica snapshot -> validation

It writes the run directory of shared/HISTORY.md (sends/polls/events, run.json,
replicas.json and the replicas' segments, verdict.json) and returns a ``CaseResult`` whose
``assert_valid`` fails with the offending ids, the run directory and the broker logs.

Faults plug in through ``CaseHooks``: each callable receives a ``CaseContext`` and runs in
its own thread while the producer runs (``during_produce``, joined before the drain) or while
the consumer drains (``during_consume``, joined after it). They must return soon after
``ctx.stop`` is set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import random
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..history import RunWriter, write_run_json

log = logging.getLogger(__name__)

DRAIN_TIMEOUT = 60.0  # seconds the consumer may take after the produce to see every ack
HOOK_JOIN_TIMEOUT = 120.0
REST_TIMEOUT = 30.0  # seconds to wait for every ISR replica to reach the leader's log end


@dataclass
class CaseContext:
    """What a hook gets: the live cluster, the case, the history writer, the case's topics,
    a ``random.Random`` seeded by the case (so a fault schedule can be replayed), and an
    event set when the phase the hook belongs to has ended."""

    case: Any
    cluster: Any
    writer: RunWriter
    topics: list[str]
    rng: random.Random
    stop: threading.Event
    run_dir: Path
    extra: dict[str, Any] = field(default_factory=dict)  # results a hook wants in verdict.json
    stats: Any = None  # the producer's ProduceStats (sent / acked counts), for progress lines
    consumer: Any = None  # the Consumer (``polled`` count), for progress lines


Hook = Callable[[CaseContext], None]


@dataclass
class CaseHooks:
    during_produce: list[Hook] = field(default_factory=list)
    during_consume: list[Hook] = field(default_factory=list)
    # the producer keeps sending past the case's ``messages`` while any of these is true
    # (a nemesis still has faults to inject), at most ``produce_rate`` sends a second
    keep_producing: list[Callable[[], bool]] = field(default_factory=list)
    produce_rate: float | None = None


@dataclass
class ReplicaCheck:
    """The replica-log check. With ``logs`` (``kreplica verify-logs``' verdict: replicas
    compared batch by batch) it is valid when no batch is corrupt, missing or divergent;
    without it (the interim form, closed segments compared by sha256) when no closed
    segment differs."""

    at_rest: bool
    segments: int  # segments read (batch check) / closed segments compared (interim form)
    mismatches: list[dict[str, Any]]  # closed segments whose sha256 differ
    skipped: str | None = None
    logs: dict[str, Any] | None = None  # LogVerdict.to_dict() without the per-file list

    @property
    def valid(self) -> bool:
        if self.skipped is not None:
            return True
        if self.logs is not None:
            return bool(self.logs["valid"])
        return not self.mismatches

    def as_dict(self) -> dict[str, Any]:
        out = {"valid": self.valid, "at_rest": self.at_rest, "segments": self.segments,
               "mismatches": self.mismatches, "skipped": self.skipped}
        if self.logs is not None:
            out.update(counts=self.logs["counts"],
                       first_divergence=self.logs["first_divergence"],
                       examples=self.logs["examples"])
        return out

    def failure_lines(self, run_dir: Path) -> list[str]:
        if self.logs is None:
            return [f"replicas: expected equal closed segments on every replica, "
                    f"{len(self.mismatches)} differ: {json.dumps(self.mismatches[:5])}"]
        counts = self.logs["counts"]
        bad = ("corrupt_batches", "missing_batches", "divergent_batches")
        lines = ["replicas: expected no corrupt, missing or divergent batches; seen "
                 + ", ".join(f"{k} {counts[k]}" for k in bad)]
        for d in self.logs["first_divergence"]:
            lines.append(f"  first divergence {d['topic']}-{d['partition']} at offset "
                         f"{d['offset']} ({d['kind']}), stored crc by node: "
                         f"{json.dumps(d['replicas'])}")
        for name in bad:
            rows = self.logs["examples"].get(name) or []
            if rows:
                lines.append(f"  {name} e.g. {json.dumps(rows[:5], default=str)}")
        lines.append(f"  replica logs: {run_dir / 'replicas'} (kreplica verify-logs {run_dir})")
        return lines


@dataclass
class CaseResult:
    """What a case showed: the checker's ``Verdict``, the replica check, scenario checks a
    hook added (``extra["checks"]``: ``{name, ok, detail}``), phase timings, broker logs."""

    case: Any
    run_dir: Path
    verdict: Any  # pytest_kreplica.validation.checker.Verdict
    replica: ReplicaCheck
    phases: dict[str, float]
    log_files: dict[int, str]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def hook_errors(self) -> list[str]:
        return self.extra.get("hook_errors") or []

    @property
    def failed_checks(self) -> list[dict[str, Any]]:
        return [c for c in self.extra.get("checks") or [] if not c.get("ok")]

    @property
    def outcome(self) -> dict[str, Any]:
        """``outcome.decide`` over every part: the one verdict ``kreplica check`` gives too."""
        from ..validation.outcome import decide

        return decide(history=_history_dict(self.verdict), replicas=self.replica.as_dict(),
                      checks=self.extra.get("checks"), hook_errors=self.hook_errors,
                      tradeoff=self.extra.get("tradeoff"), problems=self.problems)

    @property
    def valid(self) -> bool:
        return self.outcome["passed"]

    @property
    def problems(self) -> list[str]:
        """What the case should have checked and did not (``outcome.coverage_problems``)."""
        return self.extra.get("problems") or []

    @property
    def history_accepted(self) -> bool:
        """The checker's verdict, or a loss the fault evidence explains (``tradeoffs``;
        the evidence is in verdict.json and report.html)."""
        tradeoff = self.extra.get("tradeoff") or {}
        return bool(self.verdict.valid) or bool(tradeoff.get("accepted"))

    def summary(self) -> dict[str, Any]:
        """The JSON row for the summary table (scalar extras only: faults stay in
        verdict.json)."""
        scalars = {k: v for k, v in self.extra.items()
                   if isinstance(v, str | int | float | bool) or v is None}
        return {**scalars, "case_id": self.case.case_id, "matrix": self.case.matrix,
                "verdict": ("valid" if self.verdict.valid else "accepted") if self.valid
                else "invalid",
                "history_valid": bool(self.verdict.valid), "replicas_valid": self.replica.valid,
                "semantics": self.case.semantics, "counts": dict(self.verdict.counts),
                "duration_s": round(sum(self.phases.values()), 3), "phases": self.phases,
                "run_dir": str(self.run_dir)}

    def failure_message(self) -> str:
        lines = [f"case {self.case.case_id} ({self.case.semantics}) is not valid"]
        if not self.history_accepted:
            bad = self.verdict.failures()
            lines.append("history: expected no " + ", ".join(bad) + "; seen "
                         + ", ".join(f"{n} {self.verdict.counts[n]}" for n in bad))
            for name in bad:
                rows = self.verdict.examples.get(name) or []
                lines.append(f"  {name} e.g. {json.dumps(rows[:10], default=str)}")
            tradeoff = self.extra.get("tradeoff")
            if tradeoff:
                lines.append(f"  trade-off refused: {tradeoff.get('reason')}")
        lines.extend(f"coverage: {p}" for p in self.problems)
        if not self.replica.valid:
            lines.extend(self.replica.failure_lines(self.run_dir))
        for check in self.failed_checks:
            lines.append(f"check {check.get('name')}: {check.get('detail')}")
        if self.hook_errors:
            lines.append(f"hooks: expected none to fail, seen {self.hook_errors}")
        lines.append(f"run directory: {self.run_dir}")
        lines.extend(f"broker {n} log: {p}" for n, p in sorted(self.log_files.items()))
        return "\n".join(lines)

    def assert_valid(self) -> None:
        if not self.valid:
            raise AssertionError(self.failure_message())


class _Phases(dict):
    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self[name] = round(time.monotonic() - start, 3)


def topic_names(case: Any) -> list[str]:
    """Fresh topic names for one run of a case (unique even when a case is re-run)."""
    stamp = f"{time.time_ns() % 10**9:09d}"
    base = f"kr-{case.case_id}"[:200]
    return [f"{base}-{stamp}-{i}" for i in range(case.topics)]


def topic_config(case: Any) -> dict[str, str]:
    config = {"min.insync.replicas": str(case.min_insync_replicas),
              "unclean.leader.election.enable": str(case.unclean_leader_election).lower()}
    if case.segment_bytes is not None:
        config["segment.bytes"] = str(case.segment_bytes)  # the backend maps small ones on 4.x
    return config


def _versions(cluster: Any) -> dict[str, Any]:
    import kafka

    return {"python": platform.python_version(), "kafka_python": kafka.__version__,
            "kafka": cluster.describe().get("kafka_version")}


def _run_hooks(hooks: list[Hook], ctx: CaseContext, name: str) -> list[threading.Thread]:
    def wrapped(hook: Hook) -> Callable[[], None]:
        def run() -> None:
            try:
                hook(ctx)
            except Exception as exc:  # reported in verdict.json and fails the case
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


def run_case(case: Any, cluster: Any, run_dir: Path, hooks: CaseHooks | None = None, *,
             spark_master: str | None = None, replica_check: bool = True,
             drain_timeout: float = DRAIN_TIMEOUT,
             cluster_ready_s: float | None = None) -> CaseResult:
    """Run ``case`` on a started, healthy ``cluster``; write ``run_dir``; validate."""
    from ..cluster.base import TopicSpec
    from .workload import Consumer, ProduceStats, produce

    hooks = hooks or CaseHooks()
    run_dir = Path(run_dir)
    phases = _Phases()
    if cluster_ready_s is not None:  # the pool's health gate (or a cold start) for this case
        phases["cluster ready"] = round(cluster_ready_s, 3)
    topics = topic_names(case)
    meta: dict[str, Any] = {
        "case_id": case.case_id, "matrix": case.matrix, "scenario": case.scenario,
        "params": case.as_dict(), "semantics": case.semantics, "seed": case.seed,
        "topics": topics, "cluster": cluster.describe(), "versions": _versions(cluster),
        "start_time": time.time(), "source": case.source,
    }
    write_run_json(run_dir, meta)
    extra: dict[str, Any] = {}
    with RunWriter(run_dir) as writer:
        with phases.timed("topics"):
            cluster.create_topics([TopicSpec(t, case.partitions, case.replication_factor,
                                             topic_config(case)) for t in topics])
        consumer = Consumer(topics, case.partitions, cluster.live_bootstrap_servers, writer)
        stats = ProduceStats()
        ctx = CaseContext(case, cluster, writer, topics, random.Random(case.seed),
                          threading.Event(), run_dir, extra, stats, consumer)
        keep = hooks.keep_producing
        with phases.timed("produce"):
            consumer.start()
            threads = _run_hooks(hooks.during_produce, ctx, "during_produce")
            try:
                produce(case, topics, cluster.live_bootstrap_servers(), writer, stats,
                        keep_going=(lambda: any(k() for k in keep)) if keep else None,
                        max_rate=hooks.produce_rate)
            finally:
                _join(threads, ctx)
        with phases.timed("drain"):
            ctx.stop = threading.Event()
            threads = _run_hooks(hooks.during_consume, ctx, "during_consume")
            try:
                missing = consumer.drain(set(stats.acked_ids), drain_timeout,
                                         _readable_ends(cluster, topics, case.partitions))
            finally:
                consumer.stop()
                _join(threads, ctx)
        extra["unseen_after_drain"] = len(missing)
    if replica_check:
        replica = verify_replicas(cluster, topics, case.partitions, run_dir, spark_master,
                                  phases)
    else:
        replica = ReplicaCheck(False, 0, [], skipped="--kreplica-no-replica-check")
    with phases.timed("validation"):
        from ..validation.checker import check
        from ..validation.outcome import judge_case

        verdict = check(run_dir, case.semantics, spark_master=spark_master)
        judged = judge_case(run_dir, verdict, meta=meta, replicas=replica.as_dict(),
                            checks=extra.get("checks"), hook_errors=extra.get("hook_errors"),
                            faults=extra.get("faults"))
        if judged["tradeoff"] is not None:
            extra["tradeoff"] = judged["tradeoff"]
        if judged["problems"]:
            extra["problems"] = judged["problems"]
    result = CaseResult(case, run_dir, verdict, replica, dict(phases),
                        {n: str(p) for n, p in cluster.log_files().items()}, extra)
    meta.update(end_time=time.time(), phases=dict(phases))
    write_run_json(run_dir, meta)
    _write_verdict_and_report(result)
    _drop_topics(cluster, topics)
    return result


def _readable_ends(cluster: Any, topics: list[str], partitions: int
                   ) -> Callable[[], dict[tuple[str, int], int]] | None:
    """What lets the drain end once nothing more can be read (None: a backend without it,
    the drain then waits for every id or its deadline)."""
    ends = getattr(cluster, "readable_ends", None)
    parts = [(t, p) for t in topics for p in range(partitions)]
    return None if ends is None else (lambda: ends(parts))


def _write_verdict_and_report(result: CaseResult) -> None:
    """verdict.json (report.verdict) and report.html: the report is for people, so a
    problem drawing it is logged and noted in the verdict, never fails the case."""
    from ..report import build_verdict, write_report, write_verdict

    case, verdict = result.case, result.verdict
    history = _history_dict(verdict)
    extra = {k: v for k, v in result.extra.items()
             if k not in ("faults", "fault_plan", "checks", "election_s", "election_max_s")}
    doc = build_verdict(
        case_id=case.case_id, parameters=case.as_dict(), semantics=case.semantics,
        history=history, replicas=result.replica.as_dict(), phases=result.phases,
        faults=result.extra.get("faults"), fault_plan=result.extra.get("fault_plan"),
        seed=case.seed, checks=result.extra.get("checks"),
        duration_s=round(sum(result.phases.values()), 3),
        extra={**extra, **result.outcome})
    write_verdict(result.run_dir, doc)
    try:
        write_report(result.run_dir)
    except Exception as exc:
        log.warning("report.html for %s failed: %r", case.case_id, exc)
        doc["report_error"] = repr(exc)
        write_verdict(result.run_dir, doc)


def _history_dict(verdict: Any) -> dict[str, Any]:
    """The checker's ``Verdict.to_dict()`` (or the same keys of a stand-in)."""
    if hasattr(verdict, "to_dict"):
        return verdict.to_dict()
    return {"valid": bool(verdict.valid), "semantics": getattr(verdict, "semantics", None),
            "counts": dict(verdict.counts), "examples": getattr(verdict, "examples", {})}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    tmp.replace(path)


def _drop_topics(cluster: Any, topics: list[str]) -> None:
    """Keep the shared cluster lean; the run directory holds the evidence already."""
    try:
        cluster.delete_topics(topics)
    except Exception as exc:  # the next health gate judges the cluster
        log.warning("deleting topics %s failed: %s", topics, exc)


# ------------------------------------------------------------------ replica logs
def wait_at_rest(cluster: Any, topics: list[str], partitions: int,
                 timeout: float | None = None) -> tuple[bool, dict[tuple[str, int], Any]]:
    """Wait (bounded, ``REST_TIMEOUT`` by default) until every ISR replica of every partition
    has the leader's log end offset. Returns whether that happened and each partition's
    state and log end offsets."""
    deadline = time.monotonic() + (REST_TIMEOUT if timeout is None else timeout)
    while True:
        states, at_rest = {}, True
        for topic in topics:
            for p in range(partitions):
                state = cluster.partition_state(topic, p)
                ends = cluster.log_end_offsets(topic, p)
                states[(topic, p)] = (state, ends)
                isr_ends = {ends.get(n) for n in state.isr}
                if state.leader is None or len(isr_ends) != 1 or None in isr_ends:
                    at_rest = False
        if at_rest or time.monotonic() >= deadline:
            return at_rest, states
        time.sleep(0.2)


def verify_replicas(cluster: Any, topics: list[str], partitions: int, run_dir: Path,
                    spark_master: str | None = None, phases: _Phases | None = None
                    ) -> ReplicaCheck:
    """Snapshot every replica's log at rest into ``run_dir`` (``replicas.snapshot``) and
    compare them batch by batch on Spark (``replicas.verify``: HISTORY.md "Replica logs").
    With ``phases``, the two are timed apart as ``snapshot`` and ``replicas``."""
    from ..cluster.base import TopicSpec
    from ..validation.replicas.snapshot import snapshot_replicas
    from ..validation.replicas.verify import verify_logs

    phases = _Phases() if phases is None else phases
    with phases.timed("snapshot"):
        snapshot_replicas(cluster, [TopicSpec(t, partitions) for t in topics], run_dir,
                          timeout=REST_TIMEOUT)
    with phases.timed("replicas"):
        verdict = verify_logs(run_dir, spark_master=spark_master)
    logs = verdict.to_dict()
    logs.pop("segments")  # per-file sha256 list: ``kreplica verify-logs RUN_DIR --json``
    return ReplicaCheck(verdict.at_rest, verdict.counts["segments"],
                        verdict.examples.get("segment_mismatches") or [], logs=logs)


def snapshot_and_compare(cluster: Any, topics: list[str], partitions: int,
                         run_dir: Path) -> ReplicaCheck:
    """Copy every replica's segments of ``topics`` into ``run_dir/replicas/<node>/``, write
    replicas.json (HISTORY.md "Replica logs"), and compare closed segments by sha256.

    A stand-in until the batch-level verifier (``pytest_kreplica.validation.replicas``) lands."""
    import contextlib

    at_rest, states = wait_at_rest(cluster, topics, partitions)
    nodes: dict[str, str] = {}
    listing = []
    hashes: dict[tuple[str, int, str], dict[int, str]] = {}
    log_dirs = cluster.log_dirs()
    for (topic, p), (state, ends) in sorted(states.items()):
        leader_end = ends.get(state.leader) if state.leader is not None else None
        isr_ends = [ends[n] for n in state.isr if n in ends]
        hw = leader_end if at_rest else (min(isr_ends) if isr_ends else None)
        listing.append({"topic": topic, "partition": p, "leader": state.leader,
                        "replicas": list(state.replicas), "isr": list(state.isr),
                        "high_watermark": hw})
        for node in state.replicas:
            source = Path(log_dirs[node]) / f"{topic}-{p}"
            if not source.is_dir():
                continue
            target = run_dir / "replicas" / str(node) / source.name
            target.mkdir(parents=True, exist_ok=True)
            nodes[str(node)] = f"replicas/{node}"
            segments = sorted(source.glob("*.log"))
            for i, seg in enumerate(segments):
                with contextlib.suppress(FileNotFoundError):  # a roll may delete nothing
                    shutil.copy2(seg, target / seg.name)
                    if i < len(segments) - 1:  # closed: every segment but the last
                        hashes.setdefault((topic, p, seg.name), {})[node] = _sha256(
                            target / seg.name)
    _write_json(run_dir / "replicas.json", {"nodes": nodes, "partitions": listing,
                                            "at_rest": at_rest})
    mismatches = []
    compared = 0
    for (topic, p, name), by_node in sorted(hashes.items()):
        if set(by_node) != set(states[(topic, p)][0].replicas):
            continue  # not closed on every replica yet: roll points may differ
        compared += 1
        if len(set(by_node.values())) > 1:
            mismatches.append({"topic": topic, "partition": p, "segment": name,
                               "sha256": {str(n): h for n, h in sorted(by_node.items())}})
    return ReplicaCheck(at_rest, compared, mismatches)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
