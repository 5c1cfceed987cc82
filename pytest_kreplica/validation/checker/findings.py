"""The counts, the examples and the missing ids of a history's version 1 rules, in one query.

Users wait longest for the histories with anomalies, so finding and showing them must not
cost a second full pass over the history (issue 15). The per-id step of the rules
(``rules._example_carriers``) carries what a pair rule's example shows; the one aggregation that
counts every anomaly also keeps, per anomaly, the examples of the lowest ids
(``min_by(…, k)``: a bounded top-k, not a collected list), and the lost and unseen ids for
the replica-log look-up up to ``MISSING_IN_PASS`` of them. The positions of the few
duplicated / aborted / unexpected / recovered ids shown come from one scan of the input
filtered by those ids (no window, no shuffle). Only a history with more missing ids than
that reads its per-id table a second time, for the look-up alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .rules import ID_FLAGS, PAIR_COUNTS, ROW_FLAGS, Frames, count_when
from .verdict import EXAMPLES_PER_ANOMALY

MISSING_IN_PASS = 10_000  # lost + unseen ids brought back with the counts
MISSING_SCHEMA = ("id string, cluster string, topic string, partition long, offset long, "
                  "anomaly string")
POSITIONED = ("duplicated", "aborted_reads", "unexpected", "recovered")


@dataclass
class Findings:
    counts: dict[str, int]
    examples: dict[str, list[dict[str, Any]]]
    missing: list[dict[str, Any]] | None  # None: more than MISSING_IN_PASS (see ``missing``)


def find(frames: Frames, limit: int = EXAMPLES_PER_ANOMALY) -> Findings:
    """Every anomaly's count and up to ``limit`` examples (lowest ids first), one query."""
    p, c = frames.per_id, F.col
    real = c("id").isNotNull()
    row = p.agg(
        *[count_when(c(name) & real).alias(name) for name in ID_FLAGS],
        *[F.coalesce(F.sum(name), F.lit(0)).alias(name) for name in PAIR_COUNTS],
        F.coalesce(F.sum("n_send"), F.lit(0)).alias("sent"),
        F.coalesce(F.sum("n_ok"), F.lit(0)).alias("acked"),
        F.coalesce(F.sum("n_fail"), F.lit(0)).alias("failed"),
        F.coalesce(F.sum("n_info"), F.lit(0)).alias("indeterminate"),
        F.coalesce(F.sum("n_poll"), F.lit(0)).alias("polled"),
        F.coalesce(F.sum("n_bad_sends"), F.lit(0)).alias("bad_sends"),
        F.coalesce(F.sum("n_bad_polls"), F.lit(0)).alias("bad_polls"),
        count_when(real & (c("n_send") > 1)).alias("reused_ids"),
        *_example_columns(limit),
        _lowest(F.struct(*_missing_columns()), (c("lost") | c("unseen")) & real,
                MISSING_IN_PASS)
        .alias("x_missing"),
    ).collect()[0].asDict(recursive=True)
    counts = {k: int(v or 0) for k, v in row.items() if not k.startswith("x_")}
    examples = {}
    for name in (*ID_FLAGS, *PAIR_COUNTS):
        found = [_plain(e) for e in row.get(f"x_{name}") or [] if counts.get(name)]
        if found:
            examples[name] = found
    _add_positions(frames, examples, limit)
    missing = row["x_missing"] or []
    too_many = counts["lost"] + counts["unseen"] > len(missing)
    return Findings(counts, examples, None if too_many else missing)


def missing_ids(frames: Frames) -> DataFrame:
    """Lost and unseen ids with their acknowledged position (for the replica-log lookup):
    the second read, only when there are more than ``MISSING_IN_PASS``."""
    return frames.per_id.where(F.col("lost") | F.col("unseen")).select(*_missing_columns())


def missing_frame(spark, rows: list[dict[str, Any]]) -> DataFrame:
    """The missing ids brought back with the counts, as the look-up's input."""
    return spark.createDataFrame(
        [(r["id"], r.get("cluster"), r.get("topic"), r.get("partition"), r.get("offset"),
          r["anomaly"]) for r in rows], MISSING_SCHEMA)


def _lowest(value: Column, where: Column, k: int) -> Column:
    """Up to ``k`` values of the rows ``where`` holds, those of the lowest ids."""
    return F.min_by(F.when(where, value), F.when(where, F.col("id")), k)


def _missing_columns() -> list[Column]:
    """A lost or unseen id and where it was acknowledged, as the look-up takes it
    (``MISSING_SCHEMA``)."""
    c = F.col
    return [c("id"), c("ok_cluster").alias("cluster"), c("ok_topic").alias("topic"),
            c("ok_partition").cast("long").alias("partition"),
            c("ok_offset").cast("long").alias("offset"),
            F.when(c("lost"), "lost").otherwise("unseen").alias("anomaly")]


def _example_columns(limit: int) -> list[Column]:
    c = F.col
    real = c("id").isNotNull()
    out = []
    for name in ("lost", "unseen"):
        out.append(_lowest(F.struct(
            c("id"), c("ok_cluster").alias("cluster"), c("ok_topic").alias("topic"),
            c("ok_partition").alias("partition"), c("ok_offset").alias("offset"),
            c("ok_process").alias("process")), c(name) & real, limit).alias(f"x_{name}"))
    for name in POSITIONED:
        out.append(_lowest(F.struct(c("id")), c(name) & real, limit).alias(f"x_{name}"))
    for name, flag in ROW_FLAGS.items():
        out.append(_lowest(F.struct(c("id"), c(f"ex_{flag}").alias("pair")),
                           c(f"ex_{flag}").isNotNull(), limit).alias(f"x_{name}"))
    incons = c("ex_inconsistent_offset")
    out.append(_lowest(incons, incons.isNotNull(), limit).alias("x_inconsistent_offsets"))
    return out


def _add_positions(frames: Frames, examples: dict[str, list[dict[str, Any]]],
                   limit: int) -> None:
    """Where each shown duplicated / aborted / unexpected / recovered id was acknowledged or
    polled: one scan of the input filtered by those few ids (no window, no shuffle of the
    history), only when there are any."""
    ids = sorted({e["id"] for name in POSITIONED for e in examples.get(name, [])})
    if not ids:
        return
    rows = [r.asDict() for r in frames.positions.where(F.col("id").isin(ids)).collect()]
    for name in POSITIONED:
        if name in examples:
            wanted = {e["id"] for e in examples[name]}
            examples[name] = _group_positions([r for r in rows if r["id"] in wanted], limit)


def _group_positions(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Per id: where it was seen, ``positions`` as topic/partition/offset (and cluster)."""
    grouped: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: (r["id"], r.get("topic") or "",
                                         r.get("partition") if r.get("partition") is not None
                                         else -1,
                                         r.get("offset") if r.get("offset") is not None
                                         else -1)):
        entry = grouped.setdefault(r["id"], {"id": r["id"], "positions": []})
        pos = {k: r[k] for k in ("cluster", "topic", "partition", "offset", "process", "poll")
               if r.get(k) is not None}
        if pos not in entry["positions"]:
            entry["positions"].append(pos)
    return list(grouped.values())[:limit]


def _plain(example: dict[str, Any]) -> dict[str, Any]:
    """An example as the verdict shows it: pairs flat, no empty keys."""
    if "pair" in example:
        return {k: v for k, v in {"id": example["id"], **(example["pair"] or {})}.items()
                if v is not None}
    if "id_lo" in example:  # inconsistent offsets: the two ids at one offset
        example = {**example, "id": example.pop("id_lo"), "other_id": example.pop("id_hi")}
    return {k: v for k, v in example.items() if v is not None}
