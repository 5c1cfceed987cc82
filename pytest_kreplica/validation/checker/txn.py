"""The transactional rules of history version 2 (docs/history.md), on Spark.

A version 2 run directory adds a ``txns`` table (one row per transaction: its outcome) and
a ``txn`` column to sends, ``isolation`` / ``generation`` to polls. Two things happen here:

* ``v1_view``: what the version 1 rules should judge. Sends of an aborted transaction are
  not acknowledged writes (dropped, and so are read_committed polls of them: those are
  ``aborted_read``); sends of an indeterminate transaction are indeterminate; only
  read_committed (or unlabelled) polls and a group member's count as the consumers' reads:
  the read_uncommitted observer (no group) legitimately sees uncommitted and aborted records.
* ``build`` / ``find``: the four transactional anomalies, each a Spark join
  over the reads and the transactional sends (no Python UDF, nothing collected but counts
  and a few examples):

  aborted_read      (per id)   a read_committed poll returned a record of an aborted txn (G1a)
  precommitted_read (per id)   a read_committed poll returned a record of a transaction
                               before that transaction's commit was invoked
  lost_committed    (per txn)  a committed transaction has an acknowledged record no
                               read_committed poll returned, although a read_committed poll
                               of its partition returned a greater offset
  torn_transaction  (per txn and reader) a read_committed reader returned some records of a
                               committed transaction but not another one lying strictly
                               inside the offsets it read of that partition in one group
                               generation

  and, reported only, what a read_uncommitted consumer (a group member with
  ``isolation: read_uncommitted``, or a poll naming no isolation: Kafka's consumer default)
  sees that a read_committed one must not: ``ru_aborted_read`` and ``ru_precommitted_read``,
  the same two rules over its polls. ``isolation`` is ``read_committed``,
  ``read_uncommitted`` or absent; any other value is refused when the table is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ...history import TXNS
from .pipeline import PIPELINE_ANOMALIES
from .pipeline import offending as pipeline_offending
from .spark_tables import read_spark
from .tables import find_table

TXN_ANOMALIES = ("aborted_read", "precommitted_read", "lost_committed", "torn_transaction",
                 "ru_aborted_read", "ru_precommitted_read", *PIPELINE_ANOMALIES)
HISTORY_VERSION = 2
RC, RU = "read_committed", "read_uncommitted"
_EXAMPLE = {"txn": "string", "id": "string", "process": "long", "topic": "string",
            "partition": "long", "offset": "long", "poll": "long", "time_ns": "long",
            "end_ns": "long", "source": "string"}


@dataclass
class TxnFrames:
    offending: DataFrame  # anomaly, key, and the example columns
    outcomes: DataFrame   # txn, outcome, end_ns


def outcomes(spark, run_dir: Path, one_task: bool = False) -> DataFrame:
    """One row per transaction: txn, outcome (two differing rows: indeterminate), end_ns,
    and the consumer offsets it committed (read-process-write). ``one_task``: read in one
    partition, like the small check's other tables (``core.check``)."""
    table = find_table(run_dir, TXNS, required=False)
    if table is None:
        out = spark.createDataFrame([], "txn string, outcome string, end_ns long, "
                                        "offsets string")
        return out.coalesce(1) if one_task else out
    txns = read_spark(spark, table).where(~F.col("_bad"))
    if one_task:
        txns = txns.coalesce(1)
    return txns.groupBy("txn").agg(
        F.when(F.count_distinct("status") == 1, F.first("status")).otherwise(F.lit("info"))
        .alias("outcome"),
        F.max("end_ns").alias("end_ns"), F.first("offsets", ignorenulls=True).alias("offsets"))


def _with_outcome(sends: DataFrame, out: DataFrame) -> DataFrame:
    o = out.select(F.col("txn").alias("_txn"), F.col("outcome").alias("_outcome"),
                   F.col("end_ns").alias("_end_ns"))
    joined = sends.join(o, sends["txn"] == o["_txn"], "left")
    # a transaction that never wrote its outcome (the producer crashed) is indeterminate
    outcome = F.when(F.col("txn").isNotNull(), F.coalesce("_outcome", F.lit("info")))
    return joined.withColumn("_outcome", outcome)


def v1_view(sends: DataFrame, polls: DataFrame, out: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The sends and polls the version 1 rules judge (module docstring)."""
    s = _with_outcome(sends, out)
    status = (F.when((F.col("_outcome") == "info") & (F.col("status") == "ok"), F.lit("info"))
              .otherwise(F.col("status")))
    kept = s.where(F.col("_outcome").isNull() | (F.col("_outcome") != "aborted"))
    sends_v1 = kept.select(*[status.alias(c) if c == "status" else F.col(c)
                             for c in sends.columns])
    aborted = s.where(F.col("_outcome") == "aborted").select("id").distinct()
    # file order stands for a missing index: the row numbers (``rules.ROW``, taken by the
    # read) were taken before the join can reorder rows (the rules order by
    # index, else by row number)
    p = polls.where(F.col("isolation").isNull() | (F.col("isolation") != RU)
                    | F.col("generation").isNotNull())
    polls_v1 = p.join(aborted, "id", "left_anti").select(*p.columns)
    return sends_v1, polls_v1


def build(sends: DataFrame, polls: DataFrame, out: DataFrame,
          pipeline_inputs: list[str] | None = None) -> TxnFrames:
    c = F.col
    labelled = _with_outcome(sends.where(~c("_bad") & c("txn").isNotNull()), out).select(
        "id", "txn", "process", "topic", "partition", "offset", "status", "source",
        c("_outcome").alias("outcome"), c("_end_ns").alias("end_ns"))
    s = labelled.drop("process", "source")  # the joins below take process from the reads
    reads = polls.where(~c("_bad")).select(
        "process", "poll", "id", "topic", "partition", "offset", "time_ns", "isolation",
        "generation", F.coalesce("generation", F.lit(-1)).alias("gen"))
    rc = reads.where(c("isolation") == RC)
    # a read_uncommitted consumer: a group member with the weaker setting, or a poll that
    # names no isolation (Kafka's consumer default); the observer (read_uncommitted, no
    # generation) alone legitimately reads aborted and open transactions
    ru = reads.where(c("isolation").isNull()
                     | ((c("isolation") == RU) & c("generation").isNotNull()))
    aborted_txns = s.where(c("outcome") == "aborted").select("id", "txn")
    open_txns = s.where(c("outcome") != "aborted").select("id", "txn", "end_ns")

    def before_commit(r: DataFrame) -> DataFrame:
        return r.join(open_txns, "id").where(c("end_ns").isNull() | (c("time_ns") < c("end_ns")))

    aborted, precommitted = rc.join(aborted_txns, "id"), before_commit(rc)

    committed = s.where((c("outcome") == "committed") & (c("status") == "ok")
                        & c("offset").isNotNull())
    reach = rc.groupBy("topic", "partition").agg(F.max("offset").alias("reach"))
    read_ids = rc.select("id").distinct()
    lost = (committed.join(reach, ["topic", "partition"]).where(c("reach") > c("offset"))
            .join(read_ids, "id", "left_anti"))

    touched = rc.join(committed.select("id", "txn"), "id").select("process", "txn").distinct()
    ranges = rc.groupBy("process", "topic", "partition", "gen").agg(
        F.min("offset").alias("lo"), F.max("offset").alias("hi"))
    torn = (touched.join(committed, "txn")
            .join(ranges, ["process", "topic", "partition"])
            .where((c("lo") < c("offset")) & (c("offset") < c("hi")))
            .join(rc.select("process", "id"), ["process", "id"], "left_anti"))

    def shape(df: DataFrame, name: str, key) -> DataFrame:
        cols = set(df.columns)
        return df.select(F.lit(name).alias("anomaly"), key.cast("string").alias("key"),
                         *[(c(k) if k in cols else F.lit(None)).cast(t).alias(k)
                           for k, t in _EXAMPLE.items()])

    offending = (shape(aborted, "aborted_read", c("id"))
                 .unionByName(shape(precommitted, "precommitted_read", c("id")))
                 .unionByName(shape(lost, "lost_committed", c("txn")))
                 .unionByName(shape(torn, "torn_transaction",
                                    F.concat_ws("/", c("txn"), c("process").cast("string"))))
                 .unionByName(shape(ru.join(aborted_txns, "id"), "ru_aborted_read", c("id")))
                 .unionByName(shape(before_commit(ru), "ru_precommitted_read", c("id"))))
    for name, df, key in pipeline_offending(labelled, out, pipeline_inputs):
        offending = offending.unionByName(shape(df, name, c(key)))
    return TxnFrames(offending, out)


def find(frames: TxnFrames, limit: int) -> tuple[dict[str, int], dict[str, list[dict]]]:
    """The anomalies' counts (distinct offending keys), up to ``limit`` example rows of each
    that occurred, and the transactions by outcome. The offending rows are computed once:
    counted and picked by windows over one partitioning by anomaly (a count query, then an
    examples query, ran the whole plan of joins twice when anything was found)."""
    c = F.col
    by_key = Window.partitionBy("anomaly").orderBy("key")
    by_row = Window.partitionBy("anomaly").orderBy("key", "process", "offset")
    whole = Window.partitionBy("anomaly")
    # distinct non-null keys: the highest dense rank, less the rank null keys take (first)
    distinct = (F.max(F.dense_rank().over(by_key)).over(whole)
                - F.max(F.when(c("key").isNull(), 1).otherwise(0)).over(whole))
    picked = (frames.offending
              .select("*", F.row_number().over(by_row).alias("_n"))
              .select("*", distinct.alias("_count"))
              .where(c("_n") <= limit).collect())
    counts = dict.fromkeys(TXN_ANOMALIES, 0)
    examples: dict[str, list[dict]] = {}
    for r in sorted(picked, key=lambda r: (r["anomaly"], r["_n"])):
        counts[r["anomaly"]] = int(r["_count"])
        if r["_count"]:
            examples.setdefault(r["anomaly"], []).append(
                {k: v for k, v in r.asDict().items()
                 if v is not None and k not in ("anomaly", "key", "_n", "_count")})
    by_outcome = {r["outcome"]: int(r["n"]) for r in
                  frames.outcomes.groupBy("outcome").agg(F.count("*").alias("n")).collect()}
    for outcome in ("committed", "aborted", "info"):
        counts[f"txns_{outcome}"] = by_outcome.get(outcome, 0)
    return counts, examples
