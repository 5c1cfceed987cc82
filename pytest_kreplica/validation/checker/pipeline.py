"""The read-process-write rules of history version 2 (docs/history.md), on Spark.

A pipeline reads committed records, and in one transaction writes a copy of each (the
copy's send names its ``source`` id) and commits its consumer positions
(``send_offsets_to_transaction``, the txns ``offsets`` column). Exactly-once means each
record it consumed has exactly one committed copy:

  copied_twice  (per source id)  two or more committed copies of one source record
  uncopied      (per source id)  a committed source record lies below the position the
                                 pipeline committed for its partition (it was consumed for
                                 good), but no committed copy of it exists

Both are joins and aggregations over the sends already labelled with their transaction's
outcome (``txn.build``); nothing is collected here.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PIPELINE_ANOMALIES = ("copied_twice", "uncopied")


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


def offending(sends: DataFrame, out: DataFrame) -> list[tuple[str, DataFrame, str]]:
    """(anomaly, offending rows, key column) for each rule. ``sends``: transactional sends
    with their transaction's ``outcome`` and the ``source`` column."""
    c = F.col
    committed = sends.where((c("outcome") == "committed") & (c("status") == "ok")
                            & c("offset").isNotNull())
    copies = committed.where(c("source").isNotNull())
    twice = (copies.groupBy("source").agg(F.count_distinct("id").alias("_copies"))
             .where(c("_copies") >= 2).select("source"))
    copied_twice = copies.join(twice, "source")
    uncopied = (committed.where(c("source").isNull())
                .join(positions(out), ["topic", "partition"])
                .where(c("offset") < c("position"))
                .join(copies.select(c("source").alias("id")).distinct(), "id", "left_anti"))
    return [("copied_twice", copied_twice, "source"), ("uncopied", uncopied, "id")]
