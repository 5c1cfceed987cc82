"""Reads a run directory (``shared/HISTORY.md``) into the series a person looks at: messages
acknowledged but not yet consumed over time (Jepsen's "unseen" plot), consumer lag, and the
acknowledged ids no consumer ever read. A mirrored run (run.json ``mirror.topics``: sends on
the source cluster, polls on the target) also gets ``MirrorData``: what was acknowledged on
the source and polled on the target over time, and the mirror lag of every message.

Columnar all the way (pyarrow tables, numpy arrays): a soak run's millions of rows fit, where
Python dicts per message would not. This is presentation, not judgement: the verdict is the
checker's; what is computed here only draws and lists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import HistoryError
from ..rundir import RUN_JSON
from ..validation.checker.arrow import read_arrow, time_origin_ns

SCHEMAS = {
    "sends": pa.schema([("process", pa.int64()), ("topic", pa.string()),
                        ("partition", pa.int64()), ("id", pa.string()),
                        ("offset", pa.int64()), ("status", pa.string()),
                        ("invoke_ns", pa.int64()), ("complete_ns", pa.int64()),
                        ("error", pa.string()), ("cluster", pa.string())]),
    "polls": pa.schema([("process", pa.int64()), ("poll", pa.int64()),
                        ("topic", pa.string()), ("partition", pa.int64()),
                        ("offset", pa.int64()), ("id", pa.string()),
                        ("time_ns", pa.int64()), ("cluster", pa.string())]),
    "events": pa.schema([("time_ns", pa.int64()), ("kind", pa.string()),
                         ("process", pa.int64()), ("node", pa.string()),
                         ("role", pa.string()), ("detail", pa.string()),
                         ("cluster", pa.string())]),
}

OFFENDING_LIMIT = 200  # rows listed in the report; the count is always complete


def read_table(run_dir: Path, name: str) -> pa.Table:
    """``NAME.jsonl`` or ``NAME.parquet`` (file or folder), with the columns drawn here, read
    by the checker's reader (``read_arrow``: the same contract and torn-last-line rule); an
    absent table is empty (a run that crashed early still gets a report)."""
    return read_arrow(run_dir, name).select(SCHEMAS[name].names)


def _np(col: Any) -> np.ndarray:
    return col.to_numpy(zero_copy_only=False)


@dataclass
class Series:
    """Step series on a common time grid (seconds since the run's first recorded moment)."""

    t: np.ndarray
    values: np.ndarray


@dataclass
class MirrorData:
    """A mirrored run seen across its two clusters (HISTORY.md "Mirrored runs")."""

    topics: dict[str, str]  # source topic -> its name on the target
    source_acked: Series  # acknowledged on the source so far
    target_seen: Series  # acknowledged ids polled on the target so far (first poll)
    target_polled: Series  # records polled on the target so far (duplicates included)
    lag_at_s: np.ndarray  # per mirrored message: when the source acknowledged it (s)
    lag_s: np.ndarray  # and how long until the target's consumer first polled it (s)
    duplicated: int  # ids polled at two or more distinct positions on the target
    polled_rows: int

    def lag_quantile(self, q: float) -> float | None:
        return float(np.quantile(self.lag_s, q)) if len(self.lag_s) else None

    def summary(self) -> dict[str, Any]:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 3)

        return {"mirrored": int(len(self.lag_s)), "polled_rows": self.polled_rows,
                "duplicated": self.duplicated, "lag_p50_s": r(self.lag_quantile(0.5)),
                "lag_p99_s": r(self.lag_quantile(0.99)),
                "lag_max_s": r(float(self.lag_s.max()) if len(self.lag_s) else None)}


@dataclass
class RunData:
    run_dir: Path
    run: dict[str, Any]
    t0_ns: int
    end_s: float
    counts: dict[str, int]
    unseen: Series
    lag: Series
    acked_rate: Series
    events: list[dict[str, Any]]
    offending: list[dict[str, Any]] = field(default_factory=list)  # never-consumed acked ids
    offending_total: int = 0
    mirror: MirrorData | None = None
    # per acknowledged send, by acknowledgement time (s): its latency, invoke to ack (ms)
    ack_latency: Series = field(default_factory=lambda: Series(np.zeros(0), np.zeros(0)))

    @property
    def mirrored(self) -> bool:
        return self.mirror is not None

    def seconds(self, ns: int | None) -> float | None:
        return None if ns is None else (ns - self.t0_ns) / 1e9


def load(run_dir: str | Path, grid_points: int = 1500) -> RunData:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise HistoryError(f"{run_dir}: not a run directory")
    run: dict[str, Any] = {}
    if (run_dir / RUN_JSON).exists():
        try:
            run = json.loads((run_dir / RUN_JSON).read_text())
        except json.JSONDecodeError as exc:
            raise HistoryError(f"{run_dir / 'run.json'}: not JSON: {exc}") from None
    sends, polls, events = (read_table(run_dir, n) for n in ("sends", "polls", "events"))

    t0 = time_origin_ns(sends, polls, events)
    ends = [pc.max(c).as_py() for c in (sends["complete_ns"], polls["time_ns"],
                                        events["time_ns"]) if len(c)]
    ends = [e for e in ends if e is not None]
    end_s = max(((max(ends) - t0) / 1e9) if ends else 0.0, 1e-3)
    grid = np.linspace(0.0, end_s, grid_points)
    grid_ns = t0 + (grid * 1e9).astype(np.int64)

    acked = sends.filter(pc.equal(sends["status"], "ok"))
    ack_ns = _np(acked["complete_ns"].fill_null(t0)).astype(np.int64)
    first = polls.group_by("id").aggregate([("time_ns", "min")])
    where = pc.index_in(acked["id"], value_set=first["id"])
    first_poll = pc.take(first["time_ns_min"], where)  # null: never polled
    seen_mask = _np(pc.is_valid(first_poll)).astype(bool)
    seen_ns = np.maximum(_np(first_poll.fill_null(0)).astype(np.int64), ack_ns)[seen_mask]
    unseen = (np.searchsorted(np.sort(ack_ns), grid_ns, side="right")
              - np.searchsorted(np.sort(seen_ns), grid_ns, side="right"))
    acked_rate = _rate(ack_ns, grid, t0)
    latency_ms = (ack_ns - _np(acked["invoke_ns"].fill_null(t0)).astype(np.int64)) / 1e6
    by_ack = np.argsort(ack_ns, kind="stable")
    ack_latency = Series((ack_ns[by_ack] - t0) / 1e9, np.maximum(latency_ms[by_ack], 0.0))

    topics = (run.get("mirror") or {}).get("topics") if isinstance(run.get("mirror"),
                                                                    dict) else None
    mirror = None
    if topics:
        # offsets differ between the clusters: the offset lag means nothing across them
        lag = np.zeros(len(grid_ns), dtype=np.int64)
        mirror = _mirror(topics, grid, grid_ns, t0, ack_ns, polls, seen_mask, first_poll)
    else:
        lag = _lag(acked, polls, grid_ns)
    offending, total, lost = _offending(acked, polls, seen_mask, t0, mirrored=bool(topics))
    counts = {
        "sent": sends.num_rows, "acked": acked.num_rows,
        "failed": int(pc.sum(pc.equal(sends["status"], "fail")).as_py() or 0),
        "indeterminate": int(pc.sum(pc.equal(sends["status"], "info")).as_py() or 0),
        "polled": polls.num_rows, "never_consumed": total, "never_consumed_lost": lost,
    }
    event_rows = sorted(events.to_pylist(), key=lambda e: e.get("time_ns") or 0)
    return RunData(run_dir, run, t0, end_s, counts, Series(grid, unseen),
                   Series(grid, lag), acked_rate, event_rows, offending, total, mirror,
                   ack_latency)


def _cumulative(times_ns: np.ndarray, grid_ns: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.sort(times_ns), grid_ns, side="right")


def _mirror(topics: dict[str, str], grid: np.ndarray, grid_ns: np.ndarray, t0: int,
            ack_ns: np.ndarray, polls: pa.Table, seen_mask: np.ndarray,
            first_poll: Any) -> MirrorData:
    """Source acknowledgements against target polls, joined by id (the contract's rule for
    mirrored runs); lag = first poll on the target - acknowledgement on the source."""
    first_ns = _np(first_poll.fill_null(0)).astype(np.int64)[seen_mask]
    acked_seen = ack_ns[seen_mask]
    lag_s = np.maximum(first_ns - acked_seen, 0) / 1e9
    order = np.argsort(acked_seen, kind="stable")
    poll_ns = _np(polls["time_ns"].fill_null(t0)).astype(np.int64)
    positions = polls.group_by(["id", "topic", "partition", "offset"]).aggregate([])
    per_id = positions.group_by("id").aggregate([("offset", "count")])
    duplicated = int(pc.sum(pc.greater(per_id["offset_count"], 1)).as_py() or 0)
    return MirrorData(dict(topics), Series(grid, _cumulative(ack_ns, grid_ns)),
                      Series(grid, _cumulative(np.maximum(first_ns, acked_seen), grid_ns)),
                      Series(grid, _cumulative(poll_ns, grid_ns)),
                      ((acked_seen - t0) / 1e9)[order], lag_s[order], duplicated,
                      polls.num_rows)


RATE_BARS = 1500  # at most this many bars: 1 s each, wider in a run longer than that


def _rate(times_ns: np.ndarray, grid: np.ndarray, t0: int) -> Series:
    """Acknowledgements per second, in 1 s bins (the workload's pulse during faults), or in
    ``RATE_BARS`` equal bins of a longer run (a soak of hours)."""
    if not len(times_ns):
        return Series(np.zeros(0), np.zeros(0))
    secs = (times_ns - t0) / 1e9
    span = max(grid[-1], 1.0)
    width = max(1.0, span / RATE_BARS)
    bins = np.arange(0.0, span + width, width)
    counts, edges = np.histogram(secs, bins=bins)
    return Series(edges[:-1], counts / width)


def _lag(acked: pa.Table, polls: pa.Table, grid_ns: np.ndarray) -> np.ndarray:
    """Sum over partitions of (highest acknowledged offset so far) - (highest offset any
    consumer polled so far): how far consumers trail the log, moment by moment."""
    total = np.zeros(len(grid_ns), dtype=np.int64)
    keys = sorted({(r["topic"], r["partition"]) for r in
                   acked.select(["topic", "partition"]).group_by(["topic", "partition"])
                   .aggregate([]).to_pylist()})
    for topic, partition in keys:
        produced = _running_max(acked, "complete_ns", topic, partition, grid_ns)
        consumed = _running_max(polls, "time_ns", topic, partition, grid_ns)
        total += np.maximum(produced - consumed, 0)
    return total


def _running_max(table: pa.Table, time_col: str, topic: str, partition: int,
                 grid_ns: np.ndarray) -> np.ndarray:
    mask = pc.and_(pc.equal(table["topic"], topic), pc.equal(table["partition"], partition))
    part = table.filter(mask).filter(pc.is_valid(table.filter(mask)["offset"]))
    if not part.num_rows:
        return np.zeros(len(grid_ns), dtype=np.int64)
    times = _np(part[time_col].fill_null(0)).astype(np.int64)
    order = np.argsort(times, kind="stable")
    next_offsets = np.maximum.accumulate(_np(part["offset"]).astype(np.int64)[order] + 1)
    idx = np.searchsorted(times[order], grid_ns, side="right")
    return np.where(idx > 0, next_offsets[np.maximum(idx - 1, 0)], 0)


def _offending(acked: pa.Table, polls: pa.Table, seen_mask: np.ndarray,
               t0: int, mirrored: bool = False) -> tuple[list[dict[str, Any]], int, int]:
    """Acknowledged ids no consumer read, each with its partition, offset and whether a poll
    of that partition went past it (``lost``) or not (``unseen``), as the contract defines.
    Mirrored: past it means a polled record that the source acknowledged at a greater
    offset of the same partition (the target's own offsets are not comparable)."""
    missing = acked.filter(pa.array(~seen_mask))
    if not missing.num_rows:
        return [], 0, 0
    reached = acked.filter(pa.array(seen_mask)) if mirrored else polls
    furthest = reached.group_by(["topic", "partition"]).aggregate([("offset", "max")])
    furthest_by = {(r["topic"], r["partition"]): r["offset_max"] for r in furthest.to_pylist()}
    rows, lost = [], 0
    for r in missing.sort_by([("topic", "ascending"), ("partition", "ascending"),
                              ("offset", "ascending")]).to_pylist():
        beyond = furthest_by.get((r["topic"], r["partition"]))
        kind = "lost" if (beyond is not None and r["offset"] is not None
                          and beyond > r["offset"]) else "unseen"
        lost += kind == "lost"
        if len(rows) < OFFENDING_LIMIT:
            rows.append({"id": r["id"], "topic": r["topic"], "partition": r["partition"],
                         "offset": r["offset"], "kind": kind,
                         "acked_at_s": round((r["complete_ns"] - t0) / 1e9, 3)
                         if r["complete_ns"] is not None else None})
    return rows, missing.num_rows, lost


OVER_TIME_POINTS = 120  # rows of the over-time table in verdict.json


def clusters_section(data: RunData) -> dict[str, Any] | None:
    """verdict.json's view of a mirrored run across its clusters: each cluster's nodes,
    version and events (the events name their cluster; MirrorMaker 2's are its own), what
    was acknowledged on the source and polled on the target over time, and the mirror
    lag. None for a one-cluster run."""
    m = data.mirror
    if m is None:
        return None
    described = data.run.get("cluster") or {}
    mirror_meta = data.run.get("mirror") or {}

    def events(select: Any) -> list[dict[str, Any]]:
        return [{"t_s": round(data.seconds(e["time_ns"]) or 0.0, 3), "kind": e.get("kind"),
                 "node": e.get("node"), "role": e.get("role"), "process": e.get("process"),
                 "detail": e.get("detail")} for e in data.events if select(e)]

    def side(name: str) -> dict[str, Any]:
        d = described.get(name) or {}
        return {"kafka_version": d.get("kafka_version"), "backend": d.get("backend"),
                "bootstrap_servers": d.get("bootstrap_servers"),
                "nodes": sorted((d.get("nodes") or {}), key=lambda n: (len(n), n)),
                "events": events(lambda e, n=name: e.get("cluster") == n)}

    def is_mirror(e: dict[str, Any]) -> bool:
        return e.get("node") == "mirror-maker" or e.get("role") == "mirror-maker"

    step = max(1, len(m.source_acked.t) // OVER_TIME_POINTS)
    over_time = [{"t_s": round(float(t), 3), "acked_source": int(a), "seen_target": int(s),
                  "polled_target": int(p)}
                 for t, a, s, p in zip(m.source_acked.t[::step], m.source_acked.values[::step],
                                       m.target_seen.values[::step],
                                       m.target_polled.values[::step], strict=True)]
    return {
        "source": {**side("source"), "topics": sorted(m.topics),
                   "acked": data.counts["acked"]},
        "target": {**side("target"), "topics": sorted(m.topics.values()),
                   "polled_rows": m.polled_rows, "distinct_acked_polled": int(len(m.lag_s)),
                   "duplicated": m.duplicated},
        "mirror_maker": {"kafka_version": mirror_meta.get("kafka_version"),
                         "policy": mirror_meta.get("policy"),
                         "exactly_once": mirror_meta.get("exactly_once"),
                         "events": events(is_mirror), "lag": m.summary()},
        "over_time": over_time,
    }
