"""``verify_logs``: every replica's log compared batch by batch, on Spark, as one job.

One Spark task per bin of partitions reads every replica of each partition side by side
(``scan``: CRC-32C and a sha256 per batch, a sha256 per file), collapses the batches that
are sound and identical on every replica, and judges the rest over the partition's committed
range (from the largest first offset any replica holds up to the high watermark). Only
counts, the first few examples, the stored crcs at the first anomaly and the per-file list
reach the driver, in one action. Definitions: HISTORY.md "Replica logs".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import CheckError
from ..engine.spark import conf_set, default_parallelism, job_tag, start_spark
from .layout import ReplicaLayout, load_layout
from .scan import RESULT_SCHEMA, scan_units_arrow

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

ANOMALIES = ("corrupt_batches", "missing_batches", "divergent_batches", "segment_mismatches",
             "uncovered_replicas")
# uncovered_replicas: an ISR replica holding no copy of a non-empty committed range (no
# partition directory, or no byte of log in it): a stricter reading of HISTORY.md, see
# docs/verifier.md; without it such a replica is compared with nothing and passes
INVALIDATING = ("corrupt_batches", "missing_batches", "divergent_batches",
                "uncovered_replicas")
KIND_OF = {"corrupt": "corrupt_batches", "missing": "missing_batches",
           "divergent": "divergent_batches"}
EXAMPLES_PER_KIND = 5
TASK_BYTES = 256 << 20  # a Spark task reads about this much
JOB_GROUP = "kreplica-verify-logs"

# -- the verdict ----------------------------------------------------------------------------
@dataclass
class LogVerdict:
    """What verify-logs found; ``to_dict()`` is the ``--json`` shape of HISTORY.md."""

    valid: bool
    counts: dict[str, int]
    first_divergence: list[dict[str, Any]]
    segments: list[dict[str, Any]]
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    at_rest: bool = True
    run_dir: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "counts": self.counts,
                "first_divergence": self.first_divergence, "segments": self.segments,
                "examples": self.examples, "at_rest": self.at_rest}

    def summary(self) -> str:
        c = self.counts
        head = (f"replica logs {'VALID' if self.valid else 'INVALID'}: "
                + ", ".join(f"{k}={c[k]}" for k in ANOMALIES)
                + f" ({c['partitions']} partitions, {c['replicas']} replicas, "
                  f"{c['segments']} segments, {c['batches']} batches, {c['bytes']} bytes)")
        lines = [head]
        if not self.at_rest:
            lines.append("  note: the snapshot was taken before every ISR replica caught up "
                         "(at_rest false)")
        for d in self.first_divergence:
            crcs = ", ".join(f"node {n}: " + (f"{v:#010x}" if v is not None else "none")
                             for n, v in d["replicas"].items())
            lines.append(f"  first divergence {d['topic']}-{d['partition']} at offset "
                         f"{d['offset']} ({d['kind']}): stored crc {crcs}")
        for kind in ANOMALIES:
            for ex in self.examples.get(kind, [])[:3]:
                lines.append(f"  {kind}: " + ", ".join(f"{k}={v}" for k, v in ex.items()))
        if self.run_dir:
            lines.append(f"  run directory: {self.run_dir}")
        return "\n".join(lines)


def verify_logs(run_dir: str | Path, spark_master: str | None = None,
                spark: SparkSession | None = None) -> LogVerdict:
    """Verify the replica snapshot of ``run_dir`` (raises HistoryError when unreadable)."""
    layout = load_layout(run_dir)
    if spark is None:
        spark = start_spark(spark_master)
    try:
        uncovered = uncovered_replicas(layout)
        verdict = _verify(spark, layout)
    except OSError as exc:  # a segment vanished or became unreadable while it was read
        raise CheckError(f"{run_dir}: the replica logs could not be read to the end: "
                         f"{exc.strerror or exc} ({exc.filename or 'a segment file'})"
                         ) from None
    except Exception as exc:
        failure = _spark_failure(run_dir, exc)
        if failure is exc:
            raise
        raise failure from None
    verdict.counts["uncovered_replicas"] = len(uncovered)
    verdict.examples["uncovered_replicas"] = uncovered[:EXAMPLES_PER_KIND]
    verdict.valid = not any(verdict.counts[k] for k in INVALIDATING)
    return verdict


def uncovered_replicas(layout: ReplicaLayout) -> list[dict[str, Any]]:
    """ISR replicas (every replica when the ISR is empty) of a partition whose high
    watermark is above 0 that hold no byte of log: nothing of theirs could be compared."""
    out = []
    for p in layout.partitions:
        if p.high_watermark <= 0:
            continue
        for node in p.isr or p.replicas:
            directory = layout.partition_dir(node, p.topic, p.partition)
            if not directory.is_dir():
                problem = "no partition directory in the snapshot"
            elif not any(f.stat().st_size for f in directory.glob("*.log")) and max(
                    (int(f.stem) for f in directory.glob("*.log")), default=0
            ) < p.high_watermark:  # an empty segment at the HW: retention emptied the log
                problem = "no record batch in the snapshot"
            else:
                continue
            out.append({"topic": p.topic, "partition": p.partition, "node": node,
                        "high_watermark": p.high_watermark, "problem": problem})
    return out


def _spark_failure(run_dir: str | Path, exc: Exception) -> Exception:
    """A Spark task that failed (a file vanishing under a worker, a dying JVM): CheckError
    with its first line; anything else is a bug and goes up unchanged."""
    try:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover
        return exc
    if not isinstance(exc, PySparkException | Py4JError):
        return exc
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    cause = next((ln for ln in lines if "Error:" in ln and "Traceback" not in ln),
                 lines[0] if lines else type(exc).__name__)
    return CheckError(f"{run_dir}: the replica logs could not be verified on Spark: "
                      f"{cause[:300]}")


def plan_tasks(files: list[dict[str, Any]], parallelism: int,
               task_bytes: int = TASK_BYTES) -> list[list[dict[str, Any]]]:
    """Bins of files of about equal size: at least ``parallelism`` of them (when there are
    that many files), more when the data exceeds ``task_bytes`` a bin."""
    total = sum(f["size"] for f in files)
    n = min(len(files), max(parallelism, -(-total // task_bytes)))
    bins: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    loads = [0] * n
    for f in sorted(files, key=lambda f: -f["size"]):
        i = loads.index(min(loads))
        bins[i].append(f)
        loads[i] += f["size"]
    return bins


def scan_dataframe(spark: SparkSession, layout: ReplicaLayout) -> tuple[DataFrame, int]:
    """The result rows (``scan.RESULT_COLUMNS``) of every partition, and the bytes read: one
    Spark task per bin of partitions, each partition's replicas read side by side and
    judged there (``scan.judge_partition``)."""
    from functools import partial

    units = {(p.topic, p.partition): {"topic": p.topic, "partition": p.partition,
                                      "replicas": list(p.replicas), "isr": list(p.isr),
                                      "hw": p.high_watermark, "files": [], "size": 0}
             for p in layout.partitions}
    for s in layout.segment_files():
        unit = units[(s.topic, s.partition)]
        size = Path(s.path).stat().st_size
        unit["files"].append({"topic": s.topic, "partition": s.partition, "node": s.node,
                              "path": s.path, "file": s.file, "base_offset": s.base_offset,
                              "next_base_offset": s.next_base_offset, "closed": s.closed})
        unit["size"] += size
    bins = plan_tasks(list(units.values()), default_parallelism(spark))
    n = max(1, len(bins))
    total = sum(u["size"] for u in units.values())
    return spark.range(0, len(bins), 1, n).mapInArrow(partial(scan_units_arrow, bins),
                                                     RESULT_SCHEMA), total


def _settings() -> dict[str, str]:
    """Query settings for this check: no AQE (it would submit the stage as a job of its own
    beside the action); the plan has no shuffle, so nothing else matters."""
    return {"spark.sql.adaptive.enabled": "false"}


def _verify(spark: SparkSession, layout: ReplicaLayout) -> LogVerdict:
    scan, _ = scan_dataframe(spark, layout)
    return _verdict(layout, _collect_once(spark, scan, _settings()))


def _collect_once(spark: SparkSession, df: DataFrame, settings: dict[str, str]) -> list:
    """``df.collect()`` under ``settings`` (the session's own values restored after), in the
    job group ``JOB_GROUP`` so a listener or a test can count its Spark jobs."""
    with conf_set(spark, settings), job_tag(spark, JOB_GROUP, "kreplica verify-logs"):
        return df.collect()


def _verdict(layout: ReplicaLayout, rows: list) -> LogVerdict:
    """The verdict from the one collected result (HISTORY.md "Replica logs")."""
    seg_rows = [r for r in rows if r.what == "segment"]
    segments = sorted(({"topic": r.topic, "partition": r.partition, "node": r.node,
                        "file": r.file, "base_offset": r.offset,
                        "last_offset": r.last_offset, "sha256": r.sha256} for r in seg_rows),
                      key=lambda s: (s["topic"], s["partition"], s["node"], s["base_offset"]))
    counts = {k: 0 for k in ANOMALIES}
    # per partition: the first offset of any anomaly, the kind breaking ties in this order
    firsts: dict[tuple[str, int], tuple[int, int, str]] = {}
    order = {"corrupt": 0, "divergent": 1, "missing": 2}
    for r in rows:
        if r.what != "count":
            continue
        counts[KIND_OF[r.kind]] += r.n
        candidate = (r.offset, order[r.kind], r.kind)
        firsts[(r.topic, r.partition)] = min(firsts.get((r.topic, r.partition), candidate),
                                             candidate)
    mismatch_rows = sorted((r for r in rows if r.what == "mismatch"),
                           key=lambda r: (r.topic, r.partition, r.offset))
    counts["segment_mismatches"] = len(mismatch_rows)

    # first divergence per partition, with every replica's stored crc at that offset
    crcs: dict[tuple, dict[int, int | None]] = {}
    for r in rows:
        if r.what == "crc":
            crcs.setdefault((r.topic, r.partition), {})[r.node] = r.stored_crc
    replicas_of = {(p.topic, p.partition): p.replicas for p in layout.partitions}
    first_divergence = []
    for (topic, partition), (offset, _, kind) in sorted(firsts.items()):
        seen = crcs.get((topic, partition), {})
        first_divergence.append({
            "topic": topic, "partition": partition, "offset": offset, "kind": kind,
            "replicas": {str(n): seen.get(n) for n in replicas_of[(topic, partition)]}})

    examples: dict[str, list[dict[str, Any]]] = {k: [] for k in ANOMALIES}
    ranked = sorted((r for r in rows if r.what == "example"),
                    key=lambda r: (r.kind, r.topic, r.partition, r.offset,
                                   -1 if r.node is None else r.node))
    for r in ranked:
        if len(examples[KIND_OF[r.kind]]) >= EXAMPLES_PER_KIND:
            continue
        ex: dict[str, Any] = {"topic": r.topic, "partition": r.partition, "offset": r.offset}
        if r.kind != "divergent":
            ex["node"] = r.node
        if r.kind == "corrupt":
            ex.update(file=r.file, position=r.position, problem=r.problem)
        examples[KIND_OF[r.kind]].append(ex)
    for r in mismatch_rows[:EXAMPLES_PER_KIND]:
        examples["segment_mismatches"].append({
            "topic": r.topic, "partition": r.partition, "base_offset": r.offset,
            "sha256": {n: h for n, h in sorted(json.loads(r.hashes).items(),
                                                key=lambda kv: int(kv[0]))}})

    counts.update(partitions=len(layout.partitions),
                  replicas=sum(len(p.replicas) for p in layout.partitions),
                  segments=len(seg_rows), batches=sum(r.batches or 0 for r in seg_rows),
                  bytes=sum(r.length or 0 for r in seg_rows))
    valid = not any(counts[k] for k in INVALIDATING)
    return LogVerdict(valid, counts, first_divergence, segments, examples, layout.at_rest,
                      str(layout.run_dir))
