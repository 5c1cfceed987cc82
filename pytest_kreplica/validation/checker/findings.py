"""The counts, the examples and the missing ids of a history's version 1 rules, in one query.

Users wait longest for the histories with anomalies, so finding and showing them must not
cost a second full pass over the history. The per-id step of the rules
(``rules._example_carriers``) carries the row numbers of what a pair rule's example shows;
the one aggregation that counts every anomaly also keeps, per anomaly, the ids with the
lowest codes (``rules._as_longs``) and those row numbers (``min_by(…, k)``: a bounded top-k,
not a collected list: a fixed choice, the same on every run), and the lost and unseen ids for
the replica-log look-up up to ``MISSING_IN_PASS`` of them. The rows behind them (where an id
was acknowledged, the two polls of a pair, every position of a duplicated id) come from one
scan of the input filtered by those row numbers and id codes (no window, no shuffle), and
only when there is an anomaly; the ids shown are the input's own. Only a history with more
missing ids than that reads its per-id table a second time, for the look-up alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..engine.reuse import per_session
from .codes import code
from .rules import ID_FLAGS, PAIR_COUNTS, ROW_FLAGS, Frames, carrier_names, count_when
from .verdict import EXAMPLES_PER_ANOMALY

MISSING_IN_PASS = 10_000  # lost + unseen ids brought back with the counts
MISSING_SCHEMA = ("id string, cluster string, topic string, partition long, offset long, "
                  "anomaly string")
POSITIONED = ("duplicated", "aborted_reads", "unexpected", "recovered")
# the verdict's totals and the per-id counts they sum
TOTALS = {"sent": "n_send", "acked": "n_ok", "failed": "n_fail", "indeterminate": "n_info",
          "polled": "n_poll", "bad_sends": "n_bad_sends", "bad_polls": "n_bad_polls"}


@dataclass
class Findings:
    counts: dict[str, int]
    examples: dict[str, list[dict[str, Any]]]
    missing: list[dict[str, Any]] | None  # None: more than MISSING_IN_PASS (see ``missing``)


def find(frames: Frames, limit: int = EXAMPLES_PER_ANOMALY) -> Findings:
    """Every anomaly's count and up to ``limit`` examples (lowest id codes), one query."""
    # a small history's thousand ids need no collapsing (``_collapsed``): one step fewer
    per_id = frames.per_id if frames.one_task else _collapsed(frames.per_id)
    row = per_id.agg(*_found_columns(limit, MISSING_IN_PASS)).collect()[0].asDict(
        recursive=True)
    counts = {k: int(v or 0) for k, v in row.items() if not k.startswith("x_")}
    carried = {name: (row.get(f"x_{name}") or []) if counts.get(name) else []
               for name in (*ID_FLAGS, *PAIR_COUNTS)}
    missing = row["x_missing"] or []
    rows = _read_rows(frames, carried, missing)
    examples = {name: found for name, found in
                ((name, _example(name, carried[name], rows, limit)) for name in carried)
                if found}
    too_many = counts["lost"] + counts["unseen"] > len(missing)
    located = [{**_at(rows["seq"].get(m["seq"]), ("id", "cluster", "topic", "partition",
                                                  "offset")),
                "anomaly": m["anomaly"]} for m in missing]
    return Findings(counts, examples, None if too_many else located)


@per_session
def _found_columns(limit: int, missing_in_pass: int) -> list[Column]:
    """The one row ``find`` collects: counts, totals, examples and missing ids."""
    c = F.col
    real = c("id").isNotNull()
    return [
        *[count_when(c(name) & real).alias(name) for name in ID_FLAGS],
        *[F.coalesce(F.sum(name), F.lit(0)).alias(name) for name in PAIR_COUNTS],
        *[F.coalesce(F.sum(column), F.lit(0)).alias(total) for total, column in TOTALS.items()],
        count_when(real & (c("n_send") > 1)).alias("reused_ids"),
        *_example_columns(limit),
        _lowest(F.struct(c("id"), c("ok_seq").alias("seq"), _anomaly()),
                (c("lost") | c("unseen")) & real, missing_in_pass).alias("x_missing"),
    ]


def _collapsed(per_id: DataFrame) -> DataFrame:
    """The per-id table with every id that shows nothing summed into one row.

    The aggregation that keeps the examples (``min_by(…, k)``) cannot be a generated hash
    aggregation, so Spark evaluates it row by row: 17 s of task time over 10M ids, nearly
    all of them clean. Summing the clean ids first is a hash aggregation over longs (its
    partial step runs in the per-id step's own tasks), and only the ids with something to
    count or show, plus that one row, reach the examples. The sums and every count are the
    same (the pair rules' counts are sums); an id with an anomaly keeps its own row."""
    keys, aggregates = _collapsing()
    return per_id.groupBy(*keys).agg(*aggregates)


@per_session
def _collapsing() -> tuple[list[Column], list[Column]]:
    """``_collapsed``'s grouping keys and aggregates."""
    c = F.col
    shows = c("n_send") > 1  # reused_ids counts these
    for name in ID_FLAGS:
        shows = shows | c(name)
    carried = carrier_names()
    for name in carried:
        shows = shows | c(name).isNotNull()
    shows = F.coalesce(shows, F.lit(True))  # a null flag: keep the row as it is
    return ([shows.alias("_shows"), F.when(shows, c("id")).alias("id"),
             F.when(shows, c("id2")).alias("id2")],
            [*[F.sum(name).alias(name) for name in (*TOTALS.values(), *PAIR_COUNTS)],
             *[F.max(name).alias(name) for name in (*ID_FLAGS, "ok_seq", *carried)]])


def missing_ids(frames: Frames) -> DataFrame:
    """Lost and unseen ids with their acknowledged position (for the replica-log lookup):
    the second read, only when there are more than ``MISSING_IN_PASS``."""
    c = F.col
    ids = frames.per_id.where(c("lost") | c("unseen")).select(
        c("ok_seq").alias("m_seq"), _anomaly())  # the id itself: its acknowledged row's
    at = frames.positions.select("seq", "id", "cluster", "topic", "partition", "offset")
    return ids.join(at, c("m_seq") == c("seq"), "left").select(
        "id", "cluster", "topic", c("partition").cast("long"), c("offset").cast("long"),
        "anomaly")


def missing_frame(spark, rows: list[dict[str, Any]]) -> DataFrame:
    """The missing ids brought back with the counts, as the look-up's input."""
    return spark.createDataFrame(
        [(r["id"], r.get("cluster"), r.get("topic"), r.get("partition"), r.get("offset"),
          r["anomaly"]) for r in rows], MISSING_SCHEMA)


def _lowest(value: Column, where: Column, k: int) -> Column:
    """Up to ``k`` values of the rows ``where`` holds, those of the lowest ids."""
    return F.min_by(F.when(where, value), F.when(where, F.col("id")), k)


def _anomaly() -> Column:
    return F.when(F.col("lost"), "lost").otherwise("unseen").alias("anomaly")


def _example_columns(limit: int) -> list[Column]:
    """Per anomaly, the lowest ids shown and the row numbers of what they show."""
    c = F.col
    real = c("id").isNotNull()
    out = [_lowest(F.struct(c("id"), c("ok_seq").alias("seq")), c(name) & real, limit)
           .alias(f"x_{name}") for name in ("lost", "unseen")]
    for name in POSITIONED:
        out.append(_lowest(F.struct(c("id")), c(name) & real, limit).alias(f"x_{name}"))
    for name, flag in ROW_FLAGS.items():
        out.append(_lowest(F.struct(c("id"), c(f"ex_{flag}").alias("seq"),
                                    c(f"ex_{flag}_prev").alias("prev")),
                           c(f"ex_{flag}").isNotNull(), limit).alias(f"x_{name}"))
    incons = c("ex_inconsistent_offset")
    out.append(_lowest(F.struct(incons.alias("seq"),
                                c("ex_inconsistent_offset_other").alias("other")),
                       incons.isNotNull(), limit).alias("x_inconsistent_offsets"))
    return out


def _read_rows(frames: Frames, carried: dict[str, list[dict[str, Any]]],
               missing: list[dict[str, Any]]) -> dict[str, dict[Any, Any]]:
    """The input rows behind the examples and the missing ids: one scan filtered by their
    row numbers and by the codes of the shown duplicated / aborted / unexpected / recovered
    ids, only when there is anything to show. ``{"seq": {seq: row}, "id": {code: [rows]}}``
    (two ids with one code both come back, and are shown apart)."""
    seqs = sorted({e[k] for name, found in carried.items() if name not in POSITIONED
                   for e in found for k in ("seq", "prev", "other") if e.get(k) is not None}
                  | {m["seq"] for m in missing if m.get("seq") is not None})
    ids = sorted({e["id"] for name in POSITIONED for e in carried[name]})
    out: dict[str, dict[Any, Any]] = {"seq": {}, "id": {}}
    if not seqs and not ids:
        return out
    wanted = F.lit(False)
    if seqs:
        wanted = wanted | F.col("seq").isin(seqs)
    if ids:
        wanted = wanted | code("id").isin(ids)
    for r in frames.positions.where(wanted).select("*", code("id").alias("_code")).collect():
        row = r.asDict()
        out["seq"][row["seq"]] = row
        out["id"].setdefault(row.pop("_code"), []).append(row)
    return out


def _at(row: dict[str, Any] | None, keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: row.get(k) for k in keys} if row else {k: None for k in keys}


def _example(name: str, carried: list[dict[str, Any]], rows: dict[str, dict[Any, Any]],
             limit: int) -> list[dict[str, Any]]:
    """One anomaly's examples as the verdict shows them, no empty keys."""
    if name in POSITIONED:
        # where it was acknowledged at an offset, or polled (not an acks=0 send's no-offset)
        return _group_positions([r for e in carried for r in rows["id"].get(e["id"], [])
                                 if r["offset"] is not None or r["poll"] is not None], limit)
    by_seq = rows["seq"]
    out = []
    for e in carried:
        if name in ("lost", "unseen"):
            shown = _at(by_seq.get(e["seq"]), (
                "id", "cluster", "topic", "partition", "offset", "process"))
        elif name in ROW_FLAGS:
            this, prev = by_seq.get(e["seq"]) or {}, by_seq.get(e["prev"]) or {}
            shown = {"id": this.get("id"), "prev_id": prev.get("id"), **_at(this, (
                "cluster", "topic", "partition", "offset")), "prev_offset": prev.get("offset"),
                "process": this.get("process"), "poll": this.get("poll"),
                "prev_poll": prev.get("poll")}
        else:  # inconsistent_offsets: the two ids at one offset
            lo, hi = by_seq.get(e["seq"]) or {}, by_seq.get(e["other"]) or {}
            shown = {"id": lo.get("id"), "other_id": hi.get("id"),
                     **_at(lo, ("cluster", "topic", "partition", "offset"))}
        out.append({k: v for k, v in shown.items() if v is not None})
    return out


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
