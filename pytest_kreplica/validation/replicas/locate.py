"""Lost or merely unseen? Look acknowledged-but-never-polled ids up in the replicas' logs.

``in_log``: the id is in some replica's log below the high watermark (the broker kept it, a
consumer missed it). ``not_in_log``: no replica holds it (the broker lost it). Records are
decoded on Spark (one task per bin of segment files, decompression by kafka-python's
codecs); only batches whose CRC holds are decoded. The found ids are joined to the missing
ids as DataFrames; only counts and a few examples reach the driver.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine.spark import default_parallelism
from .layout import ReplicaLayout, load_layout
from .records import Unreadable, records_below
from .verify import plan_tasks

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

RECORD_SCHEMA = "id string, topic string, partition int, node int, offset bigint"
FILTER_IN_TASKS = 200_000  # up to this many missing ids travel to the tasks as a set
EXAMPLES = 5


def records_arrow(bins: list[list[dict[str, Any]]], wanted: frozenset[str] | None,
                  task_ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: (id, topic, partition, node, offset) of every record below the
    high watermark (only ids in ``wanted`` when given); a batch that cannot be decoded
    yields one row with a null id at its base offset."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.string()), ("topic", pa.string()),
                        ("partition", pa.int32()), ("node", pa.int32()),
                        ("offset", pa.int64())])
    for block in task_ids:
        for task in block.column(0).to_pylist():
            for f in bins[task]:
                ids: list[str | None] = []
                offsets: list[int] = []
                for item in records_below(f["path"], f["base_offset"], f["next_base_offset"],
                                          f["hw"]):
                    if isinstance(item, Unreadable):
                        if not item.crc_failed:  # a CRC failure is the verifier's to report
                            ids.append(None)
                            offsets.append(item.base_offset)
                    elif wanted is None or item[1] in wanted:
                        ids.append(item[1])
                        offsets.append(item[0])
                if ids:
                    n = len(ids)
                    yield pa.RecordBatch.from_arrays(
                        [pa.array(ids, pa.string()), pa.repeat(f["topic"], n),
                         pa.repeat(pa.scalar(f["partition"], pa.int32()), n),
                         pa.repeat(pa.scalar(f["node"], pa.int32()), n),
                         pa.array(offsets, pa.int64())], schema=schema)


def records_dataframe(spark: SparkSession, layout: ReplicaLayout,
                      wanted: frozenset[str] | None = None) -> DataFrame:
    """Every committed record's id and position on every replica, as a DataFrame."""
    hws = {(p.topic, p.partition): p.high_watermark for p in layout.partitions}
    files = [{"topic": s.topic, "partition": s.partition, "node": s.node, "path": s.path,
              "base_offset": s.base_offset, "next_base_offset": s.next_base_offset,
              "hw": hws[(s.topic, s.partition)], "size": Path(s.path).stat().st_size}
             for s in layout.segment_files()]
    bins = plan_tasks(files, default_parallelism(spark))
    return spark.range(0, len(bins), 1, max(1, len(bins))).mapInArrow(
        partial(records_arrow, bins, wanted), RECORD_SCHEMA)


def locate_missing(spark: SparkSession, run_dir: str | Path, missing: DataFrame
                   ) -> dict[str, Any]:
    """``missing`` has at least the column ``id`` (the checker also passes ``anomaly``,
    ``topic``, ``partition``, ``offset``). Returns ``{"counts": {"in_log", "not_in_log",
    "undecodable_batches"}, "examples": {"in_log": [...], "not_in_log": [...]}}``."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    layout = load_layout(run_dir)
    ids = missing.select("id").distinct().persist(StorageLevel.MEMORY_AND_DISK)
    try:
        total = ids.count()
        if total == 0:
            return {"counts": {"in_log": 0, "not_in_log": 0, "undecodable_batches": 0},
                    "examples": {"in_log": [], "not_in_log": []}}
        wanted = None
        if total <= FILTER_IN_TASKS:
            wanted = frozenset(r.id for r in ids.collect())
        records = records_dataframe(spark, layout, wanted).persist(
            StorageLevel.MEMORY_AND_DISK)
        try:
            undecodable = records.where(F.col("id").isNull()).count()
            found = records.where(F.col("id").isNotNull()).join(ids, "id", "left_semi")
            where = (found.groupBy("id").agg(F.sort_array(F.collect_list(F.struct(
                "node", "topic", "partition", "offset"))).alias("found")))
            in_log = where.count()
            context = [c for c in ("anomaly", "topic", "partition", "offset")
                       if c in missing.columns]
            about = missing.select("id", *context).dropDuplicates(["id"])
            in_rows = (where.join(about, "id", "left").orderBy("id").limit(EXAMPLES)
                       .collect())
            out_rows = (about.join(found.select("id").distinct(), "id", "left_anti")
                        .orderBy("id").limit(EXAMPLES).collect())
        finally:
            records.unpersist()
    finally:
        ids.unpersist()

    def describe(row) -> dict[str, Any]:
        d = {"id": row.id}
        for c in context:
            d[c if c not in ("topic", "partition", "offset") else f"acked_{c}"] = row[c]
        return d

    in_examples = []
    for r in in_rows:
        d = describe(r)
        d["found"] = [{"node": f.node, "topic": f.topic, "partition": f.partition,
                       "offset": f.offset} for f in r.found]
        in_examples.append(d)
    return {"counts": {"in_log": in_log, "not_in_log": total - in_log,
                       "undecodable_batches": undecodable},
            "examples": {"in_log": in_examples, "not_in_log": [describe(r) for r in out_rows]}}
