"""Reads a run directory (``shared/HISTORY.md``) into the series a person looks at: messages
acknowledged but not yet consumed over time (Jepsen's "unseen" plot), consumer lag, and the
acknowledged ids no consumer ever read.

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

SCHEMAS = {
    "sends": pa.schema([("process", pa.int64()), ("topic", pa.string()),
                        ("partition", pa.int64()), ("id", pa.string()),
                        ("offset", pa.int64()), ("status", pa.string()),
                        ("invoke_ns", pa.int64()), ("complete_ns", pa.int64()),
                        ("error", pa.string())]),
    "polls": pa.schema([("process", pa.int64()), ("poll", pa.int64()),
                        ("topic", pa.string()), ("partition", pa.int64()),
                        ("offset", pa.int64()), ("id", pa.string()),
                        ("time_ns", pa.int64())]),
    "events": pa.schema([("time_ns", pa.int64()), ("kind", pa.string()),
                         ("process", pa.int64()), ("node", pa.string()),
                         ("role", pa.string()), ("detail", pa.string())]),
}

OFFENDING_LIMIT = 200  # rows listed in the report; the count is always complete


def read_table(run_dir: Path, name: str) -> pa.Table:
    """``NAME.jsonl`` or ``NAME.parquet`` (file or folder), with the contract's columns; an
    absent table is empty (a run that crashed early still gets a report)."""
    schema = SCHEMAS[name]
    jsonl, parquet = run_dir / f"{name}.jsonl", run_dir / f"{name}.parquet"
    try:
        if parquet.exists():
            import pyarrow.parquet as pq

            table = pq.read_table(parquet)
            return table.select([c for c in schema.names if c in table.column_names])
        if jsonl.exists() and jsonl.stat().st_size > 0:
            from pyarrow import json as pj

            return pj.read_json(jsonl, parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, OSError) as exc:
        raise HistoryError(f"{jsonl if jsonl.exists() else parquet}: cannot be read: "
                           f"{str(exc).splitlines()[0]}") from None
    return schema.empty_table()


def _np(col: Any) -> np.ndarray:
    return col.to_numpy(zero_copy_only=False)


@dataclass
class Series:
    """Step series on a common time grid (seconds since the run's first recorded moment)."""

    t: np.ndarray
    values: np.ndarray


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

    def seconds(self, ns: int | None) -> float | None:
        return None if ns is None else (ns - self.t0_ns) / 1e9


def load(run_dir: str | Path, grid_points: int = 1500) -> RunData:
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise HistoryError(f"{run_dir}: not a run directory")
    run: dict[str, Any] = {}
    if (run_dir / "run.json").exists():
        try:
            run = json.loads((run_dir / "run.json").read_text())
        except json.JSONDecodeError as exc:
            raise HistoryError(f"{run_dir / 'run.json'}: not JSON: {exc}") from None
    sends, polls, events = (read_table(run_dir, n) for n in ("sends", "polls", "events"))

    starts = [pc.min(c).as_py() for c in (sends["invoke_ns"], polls["time_ns"],
                                          events["time_ns"]) if len(c)]
    ends = [pc.max(c).as_py() for c in (sends["complete_ns"], polls["time_ns"],
                                        events["time_ns"]) if len(c)]
    starts, ends = [s for s in starts if s is not None], [e for e in ends if e is not None]
    t0 = min(starts) if starts else 0
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

    lag = _lag(acked, polls, grid_ns)
    offending, total, lost = _offending(acked, polls, seen_mask, t0)
    counts = {
        "sent": sends.num_rows, "acked": acked.num_rows,
        "failed": int(pc.sum(pc.equal(sends["status"], "fail")).as_py() or 0),
        "indeterminate": int(pc.sum(pc.equal(sends["status"], "info")).as_py() or 0),
        "polled": polls.num_rows, "never_consumed": total, "never_consumed_lost": lost,
    }
    event_rows = sorted(events.to_pylist(), key=lambda e: e.get("time_ns") or 0)
    return RunData(run_dir, run, t0, end_s, counts, Series(grid, unseen),
                   Series(grid, lag), acked_rate, event_rows, offending, total)


def _rate(times_ns: np.ndarray, grid: np.ndarray, t0: int) -> Series:
    """Acknowledgements per second, in 1 s bins (the workload's pulse during faults)."""
    if not len(times_ns):
        return Series(np.zeros(0), np.zeros(0))
    secs = (times_ns - t0) / 1e9
    bins = np.arange(0.0, max(grid[-1], 1.0) + 1.0, 1.0)
    counts, edges = np.histogram(secs, bins=bins)
    return Series(edges[:-1], counts)


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
               t0: int) -> tuple[list[dict[str, Any]], int, int]:
    """Acknowledged ids no consumer read, each with its partition, offset and whether a poll
    of that partition went past it (``lost``) or not (``unseen``), as the contract defines."""
    missing = acked.filter(pa.array(~seen_mask))
    if not missing.num_rows:
        return [], 0, 0
    furthest = polls.group_by(["topic", "partition"]).aggregate([("offset", "max")])
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
