"""``verify_logs``: every replica's log compared batch by batch, on Spark.

One Spark task per segment file reads it (``batches.SegmentScanner``: CRC-32C per batch,
sha256 per file) and returns Arrow rows; the cross-replica comparison over each partition's
committed range (from the largest first offset any replica holds up to the high watermark)
is DataFrame joins and aggregations; only the anomalies and the per-file list reach the
driver. Definitions: HISTORY.md "Replica logs".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CheckError
from .batches import SegmentScanner
from .layout import ReplicaLayout, load_layout

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
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
ARROW_ROWS = 65536
TASK_BYTES = 256 << 20  # a Spark task reads about this much

SCAN_COLUMNS = (
    ("kind", "string"),  # "batch" or "segment"
    ("topic", "string"), ("partition", "int"), ("node", "int"), ("file", "string"),
    ("position", "bigint"), ("base_offset", "bigint"), ("last_offset", "bigint"),
    ("length", "bigint"), ("leader_epoch", "int"), ("stored_crc", "bigint"),
    ("crc_ok", "boolean"), ("content_hash", "binary"), ("problem", "string"),
    # segment rows only
    ("sha256", "string"), ("closed", "boolean"), ("batches", "bigint"),
)
SCAN_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in SCAN_COLUMNS)


# -- the per-file task (runs in Spark's Python workers) ----------------------------------
def _arrow_types() -> dict[str, pa.DataType]:
    import pyarrow as pa

    return {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(),
            "boolean": pa.bool_(), "binary": pa.binary()}


def scan_files_arrow(bins: list[list[dict[str, Any]]],
                     task_ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: each input row is a task number; out come the batch rows (in
    blocks of at most ARROW_ROWS) and one segment row of every file of that task's bin."""
    for block in task_ids:
        for task in block.column(0).to_pylist():
            for f in bins[task]:
                yield from scan_file_arrow(f)


def scan_file_arrow(f: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    types = _arrow_types()
    schema = pa.schema([(name, types[kind]) for name, kind in SCAN_COLUMNS])
    scanner = SegmentScanner(f["path"], first_offset=f["base_offset"],
                             next_segment_offset=f["next_base_offset"])
    names = ("position", "base_offset", "last_offset", "length", "leader_epoch",
             "stored_crc", "crc_ok", "content_hash", "problem")
    rows: list[tuple] = []

    def flush() -> pa.RecordBatch:
        n = len(rows)
        cols = {"kind": pa.repeat("batch", n), "topic": pa.repeat(f["topic"], n),
                "partition": pa.repeat(pa.scalar(f["partition"], pa.int32()), n),
                "node": pa.repeat(pa.scalar(f["node"], pa.int32()), n),
                "file": pa.repeat(f["file"], n)}
        for name, values in zip(names, zip(*rows, strict=True), strict=True):
            cols[name] = pa.array(values, types[kinds[name]])
        for name in ("sha256", "closed", "batches"):
            cols[name] = pa.nulls(n, types[kinds[name]])
        rows.clear()
        return pa.RecordBatch.from_arrays([cols[name] for name in schema.names], schema=schema)

    kinds = dict(SCAN_COLUMNS)
    add = rows.append
    for b in scanner:
        if b.length:
            add((b.position, b.base_offset, b.last_offset, b.length, b.leader_epoch,
                 b.stored_crc, b.crc_ok, b.content_hash, b.problem))
        else:  # no readable header: no crc, epoch or hash
            add((b.position, b.base_offset, b.last_offset, 0, None, None, False, None,
                 b.problem))
        if len(rows) >= ARROW_ROWS:
            yield flush()
    if rows:
        yield flush()
    seg = {"kind": "segment", "topic": f["topic"], "partition": f["partition"],
           "node": f["node"], "file": f["file"], "position": None,
           "base_offset": f["base_offset"], "last_offset": scanner.last_offset,
           "length": scanner.size, "leader_epoch": None, "stored_crc": None, "crc_ok": None,
           "content_hash": None, "problem": None, "sha256": scanner.sha256,
           "closed": f["closed"], "batches": scanner.batches}
    yield pa.RecordBatch.from_pylist([seg], schema=schema)


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
    from ..checker.core import start_spark

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
            elif not any(f.stat().st_size for f in directory.glob("*.log")):
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


def scan_dataframe(spark: SparkSession, layout: ReplicaLayout) -> DataFrame:
    """The scan rows of every segment file: one Spark task per bin of files."""
    from functools import partial

    files = [{"topic": s.topic, "partition": s.partition, "node": s.node, "path": s.path,
              "file": s.file, "base_offset": s.base_offset,
              "next_base_offset": s.next_base_offset, "closed": s.closed,
              "size": Path(s.path).stat().st_size} for s in layout.segment_files()]
    bins = plan_tasks(files, spark.sparkContext.defaultParallelism)
    n = max(1, len(bins))
    return spark.range(0, len(bins), 1, n).mapInArrow(partial(scan_files_arrow, bins),
                                                     SCAN_SCHEMA)


def _verify(spark: SparkSession, layout: ReplicaLayout) -> LogVerdict:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    key = ["topic", "partition"]
    scan = scan_dataframe(spark, layout).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        parts = spark.createDataFrame(
            [(p.topic, p.partition, p.high_watermark, list(p.replicas), list(p.isr))
             for p in layout.partitions],
            "topic string, partition int, hw bigint, replicas array<int>, isr array<int>")
        replicas = parts.select(*key, F.explode("replicas").alias("node"),
                                F.array_contains("isr", F.col("node")).alias("in_isr"))
        batches = scan.where(F.col("kind") == "batch").drop("sha256", "closed", "batches")
        segs = scan.where(F.col("kind") == "segment")

        # committed range: from the largest first offset any replica holds up to the HW
        per_replica = batches.groupBy(*key, "node").agg(
            F.min("base_offset").alias("first"),  # corrupt copies count: they are held
            (F.max("last_offset") + 1).alias("leo"))
        bounds = parts.join(per_replica.groupBy(*key).agg(F.max("first").alias("lo")),
                            key, "left").select(*key, "hw", F.coalesce("lo", F.lit(0)).alias("lo"))
        committed = (batches.join(F.broadcast(bounds), key)
                     .where((F.col("base_offset") >= F.col("lo"))
                            & (F.col("base_offset") < F.col("hw"))))

        corrupt = committed.where(F.col("problem").isNotNull()).select(
            *key, F.col("base_offset").alias("offset"), F.lit("corrupt").alias("kind"),
            "node", "file", "position", "problem")
        held = committed.select(*key, "node", F.col("base_offset").alias("offset")).distinct()
        expected = (held.select(*key, "offset").distinct()
                    .join(F.broadcast(replicas), key)
                    .join(per_replica.select(*key, "node", "leo"), [*key, "node"], "left")
                    .where(F.col("in_isr") | (F.col("offset") < F.col("leo"))))
        missing = expected.join(held, [*key, "node", "offset"], "left_anti").select(
            *key, "offset", F.lit("missing").alias("kind"), "node",
            F.lit(None).cast("string").alias("file"), F.lit(None).cast("bigint").alias("position"),
            F.lit(None).cast("string").alias("problem"))
        divergent = (committed.where(F.col("problem").isNull())
                     .groupBy(*key, F.col("base_offset").alias("offset"))
                     .agg(F.countDistinct("content_hash").alias("copies"))
                     .where(F.col("copies") > 1)
                     .select(*key, "offset", F.lit("divergent").alias("kind"),
                             F.lit(None).cast("int").alias("node"),
                             F.lit(None).cast("string").alias("file"),
                             F.lit(None).cast("bigint").alias("position"),
                             F.lit(None).cast("string").alias("problem")))
        anomalies = corrupt.unionByName(missing).unionByName(divergent).persist(
            StorageLevel.MEMORY_AND_DISK)
        try:
            return _collect(spark, layout, segs, batches, anomalies, F)
        finally:
            anomalies.unpersist()
    finally:
        scan.unpersist()


def _collect(spark, layout: ReplicaLayout, segs, batches, anomalies, F) -> LogVerdict:
    from pyspark.sql import Window

    key = ["topic", "partition"]
    seg_rows = segs.select(*key, "node", "file", "base_offset", "last_offset", "sha256",
                           "closed", "length", "batches").collect()
    segments = sorted(({"topic": r.topic, "partition": r.partition, "node": r.node,
                        "file": r.file, "base_offset": r.base_offset,
                        "last_offset": r.last_offset, "sha256": r.sha256} for r in seg_rows),
                      key=lambda s: (s["topic"], s["partition"], s["node"], s["base_offset"]))
    counts = {k: 0 for k in ANOMALIES}
    # per partition and kind: how many, and the first offset
    firsts: dict[tuple[str, int], tuple[int, int, str]] = {}
    order = {"corrupt": 0, "divergent": 1, "missing": 2}
    for r in anomalies.groupBy(*key, "kind").agg(F.count("*").alias("n"),
                                                  F.min("offset").alias("first")).collect():
        counts[KIND_OF[r.kind]] += r.n
        candidate = (r.first, order[r.kind], r.kind)
        firsts[(r.topic, r.partition)] = min(firsts.get((r.topic, r.partition), candidate),
                                             candidate)

    # closed segments starting at one base offset on every replica, with different sha256
    mismatch_rows = []
    if any(r.closed for r in seg_rows):
        mismatch_rows = (segs.where(F.col("closed"))
                         .groupBy(*key, "base_offset")
                         .agg(F.countDistinct("node").alias("nodes"),
                              F.countDistinct("sha256").alias("hashes"),
                              F.map_from_entries(F.collect_list(F.struct("node", "sha256")))
                              .alias("sha256"))
                         .join(F.broadcast(layout_replica_counts(spark, layout)), key)
                         .where((F.col("nodes") == F.col("replica_count"))
                                & (F.col("hashes") > 1))
                         .orderBy(*key, "base_offset").collect())
    counts["segment_mismatches"] = len(mismatch_rows)

    # first divergence per partition, with every replica's stored crc at that offset
    crcs: dict[tuple, dict[int, int | None]] = {}
    if firsts:
        at_first = None
        for (topic, partition), (offset, _, _) in firsts.items():
            cond = ((F.col("topic") == topic) & (F.col("partition") == partition)
                    & (F.col("base_offset") == offset))
            at_first = cond if at_first is None else at_first | cond
        for r in batches.where(at_first).select(*key, "node", "stored_crc").collect():
            crcs.setdefault((r.topic, r.partition), {})[r.node] = r.stored_crc
    replicas_of = {(p.topic, p.partition): p.replicas for p in layout.partitions}
    first_divergence = []
    for (topic, partition), (offset, _, kind) in sorted(firsts.items()):
        seen = crcs.get((topic, partition), {})
        first_divergence.append({
            "topic": topic, "partition": partition, "offset": offset, "kind": kind,
            "replicas": {str(n): seen.get(n) for n in replicas_of[(topic, partition)]}})

    examples: dict[str, list[dict[str, Any]]] = {k: [] for k in ANOMALIES}
    ex_rows = [] if not firsts else (
        anomalies.withColumn("rank", F.row_number().over(
            Window.partitionBy("kind").orderBy(*key, "offset", "node")))
        .where(F.col("rank") <= EXAMPLES_PER_KIND).orderBy("kind", "rank").collect())
    for r in ex_rows:
        ex: dict[str, Any] = {"topic": r.topic, "partition": r.partition, "offset": r.offset}
        if r.kind != "divergent":
            ex["node"] = r.node
        if r.kind == "corrupt":
            ex.update(file=r.file, position=r.position, problem=r.problem)
        examples[KIND_OF[r.kind]].append(ex)
    for r in mismatch_rows[:EXAMPLES_PER_KIND]:
        examples["segment_mismatches"].append({
            "topic": r.topic, "partition": r.partition, "base_offset": r.base_offset,
            "sha256": {str(n): h for n, h in sorted(r.sha256.items())}})

    counts.update(partitions=len(layout.partitions),
                  replicas=sum(len(p.replicas) for p in layout.partitions),
                  segments=len(seg_rows), batches=sum(r.batches or 0 for r in seg_rows),
                  bytes=sum(r.length or 0 for r in seg_rows))
    valid = not any(counts[k] for k in INVALIDATING)
    return LogVerdict(valid, counts, first_divergence, segments, examples, layout.at_rest,
                      str(layout.run_dir))


def layout_replica_counts(spark, layout: ReplicaLayout):
    return spark.createDataFrame(
        [(p.topic, p.partition, len(p.replicas)) for p in layout.partitions],
        "topic string, partition int, replica_count int")
