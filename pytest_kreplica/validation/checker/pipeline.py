"""The read-process-write rules of history version 2 (docs/history.md), on Spark.

A pipeline reads committed records, and in one transaction writes a copy of each (the
copy's send names its ``source`` id) and commits its consumer positions
(``send_offsets_to_transaction``, the txns ``offsets`` column). Exactly-once means each
record it consumed has exactly one committed copy:

  copied_twice  (per source id)  two or more committed copies of one source record
  uncopied      (per source id)  a committed source record lies below the position the
                                 pipeline committed for its partition (it was consumed for
                                 good), but no committed copy of it exists
  not_copied    (per source id)  a committed record of a topic the pipeline reads (run.json
                                 ``pipeline.inputs``) at or above its committed position, with
                                 no committed copy: the pipeline never got to it (the
                                 pipeline's ``unseen``; a pipeline that copied nothing cannot
                                 pass)

Both are joins and aggregations over the sends already labelled with their transaction's
outcome (``txn.build``); nothing is collected here.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PIPELINE_ANOMALIES = ("copied_twice", "uncopied", "not_copied")


def positions(out: DataFrame) -> DataFrame:
    """topic, partition, position: the highest position a committed transaction committed."""
    c = F.col
    entries = (out.where((c("outcome") == "committed") & c("offsets").isNotNull())
               .select(F.explode(F.split("offsets", " ")).alias("_e"))
               .select(F.split("_e", ":").alias("_p")))
    return (entries.select(c("_p")[0].alias("topic"),
                           c("_p")[1].cast("long").alias("partition"),
                           c("_p")[2].cast("long").alias("position"))
            .groupBy("topic", "partition").agg(F.max("position").alias("position")))


def offending(sends: DataFrame, out: DataFrame, inputs: list[str] | None = None
              ) -> list[tuple[str, DataFrame, str]]:
    """(anomaly, offending rows, key column) for each rule. ``sends``: transactional sends
    with their transaction's ``outcome`` and the ``source`` column; ``inputs``: the topics
    the run says its pipeline reads (none: ``not_copied`` is not judged)."""
    c = F.col
    committed = sends.where((c("outcome") == "committed") & (c("status") == "ok")
                            & c("offset").isNotNull())
    copies = committed.where(c("source").isNotNull())
    twice = (copies.groupBy("source").agg(F.count_distinct("id").alias("_copies"))
             .where(c("_copies") >= 2).select("source"))
    copied_twice = copies.join(twice, "source")
    owed = (committed.where(c("source").isNull())
            .join(positions(out), ["topic", "partition"], "left")
            .join(copies.select(c("source").alias("id")).distinct(), "id", "left_anti"))
    uncopied = owed.where(c("offset") < c("position"))
    found = [("copied_twice", copied_twice, "source"), ("uncopied", uncopied, "id")]
    if inputs:
        found.append(("not_copied", owed.where(
            c("topic").isin(*inputs) & (c("position").isNull() | (c("offset") >= c("position")))),
            "id"))
    return found
