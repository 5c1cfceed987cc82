"""The rules of shared/HISTORY.md in plain single-process Python.

The reference the Spark checker is measured against (benchmarks/bench_checker.py) and
cross-checked with (tests): same inputs, same counts. Everything lives in dicts and sets, so
memory grows with the history; fine up to a few million rows, hopeless at 100M.
"""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from collections import defaultdict
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...history import EVENTS, POLLS, SENDS, read_run_json
from .anomalies import NAMES
from .core import is_mirrored, is_v2, resolve_semantics
from .tables import check_run_dir, find_table, iter_rows, read_exempting_events
from .verdict import EXAMPLES_PER_ANOMALY, TOTALS, Verdict


class _Id:
    __slots__ = ("n_send", "n_ok", "n_fail", "n_info", "n_poll", "n_poll_loss", "ok")

    def __init__(self) -> None:
        self.n_send = self.n_ok = self.n_fail = self.n_info = self.n_poll = self.n_poll_loss = 0
        self.ok: tuple | None = None  # (offset, cluster, topic, partition, process)


class _Tally:
    """What the history's rows say, gathered in one pass over each table."""

    def __init__(self, mirrored: bool) -> None:
        self.mirrored = mirrored
        self.ids: dict[str, _Id] = defaultdict(_Id)
        self.positions: dict[tuple, set] = defaultdict(set)  # (cluster, topic, p, offset) -> ids
        self.id_positions: dict[tuple, set] = defaultdict(set)  # (id, bucket) -> positions
        self.max_polled: dict[tuple, int] = {}
        self.send_streams: dict[tuple, list] = defaultdict(list)
        self.poll_streams: dict[tuple, list] = defaultdict(list)
        self.totals = dict.fromkeys(TOTALS, 0)

    def read_sends(self, rows) -> None:
        ids, totals = self.ids, self.totals
        for row in rows:
            rid, status, offset = row["id"], row["status"], row.get("offset")
            cluster = row.get("cluster")
            entry = ids[rid]
            entry.n_send += 1
            totals["sent"] += 1
            if status == "ok":
                entry.n_ok += 1
                totals["acked"] += 1
                first = entry.ok is None or entry.ok[0] is None
                if first or (offset is not None and offset < entry.ok[0]):
                    entry.ok = (offset, cluster, row["topic"], row["partition"], row["process"])
                if offset is not None:
                    tp = (cluster, row["topic"], row["partition"])
                    self.positions[(*tp, offset)].add(rid)
                    self.id_positions[(rid, cluster if self.mirrored else None)].add(
                        (*tp, offset))
                    self.send_streams[(row["process"], *tp)].append(
                        (row["invoke_ns"], row["complete_ns"], offset, rid))
            elif status == "fail":
                entry.n_fail += 1
                totals["failed"] += 1
            else:
                entry.n_info += 1
                totals["indeterminate"] += 1

    def read_polls(self, rows) -> None:
        mirrored, max_polled = self.mirrored, self.max_polled
        for seq, row in enumerate(rows):
            rid, offset, cluster = row["id"], row["offset"], row.get("cluster")
            tp = (cluster, row["topic"], row["partition"])
            entry = self.ids[rid]
            entry.n_poll += 1
            self.totals["polled"] += 1
            if not mirrored or cluster == "target":
                entry.n_poll_loss += 1
            self.positions[(*tp, offset)].add(rid)
            self.id_positions[(rid, cluster if mirrored else None)].add((*tp, offset))
            if offset > max_polled.get(tp, -1 << 62):
                max_polled[tp] = offset
            index = row.get("index")
            self.poll_streams[(row["process"], *tp)].append(
                (row["poll"], seq if index is None else index, offset, rid, row["time_ns"]))


class _Notes:
    """Anomaly counts, with the first few examples of each."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(NAMES, 0)
        self.examples: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def note(self, name: str, **example: Any) -> None:
        self.counts[name] += 1
        if len(self.examples[name]) < EXAMPLES_PER_ANOMALY:
            self.examples[name].append(example)


def check_baseline(run_dir: str | os.PathLike[str], semantics: str | None = None) -> Verdict:
    path: Path = check_run_dir(run_dir)
    meta = read_run_json(path, missing_ok=True)
    chosen = resolve_semantics(semantics, meta)
    mirrored = is_mirrored(path, meta)
    if is_v2(path, meta):
        raise InputError(f"{path}: history version 2 (transactions): the baseline checks "
                         f"version 1 only; use the Spark checker (kreplica check)")
    sends_table, polls_table = find_table(path, SENDS), find_table(path, POLLS)
    exempting = read_exempting_events(find_table(path, EVENTS, required=False))

    tally = _Tally(mirrored)
    tally.read_sends(iter_rows(sends_table))
    tally.read_polls(iter_rows(polls_table))
    notes = _Notes()
    known = _offset_anomalies(tally, notes)
    _record_anomalies(tally, notes)
    _poll_order_anomalies(tally, known, exempting, notes)
    _send_order_anomalies(tally, notes)
    return Verdict.from_counts({**notes.counts, **tally.totals}, chosen, dict(notes.examples))


def _offset_anomalies(tally: _Tally, notes: _Notes) -> dict[tuple, list[int]]:
    """Inconsistent offsets and duplicated ids; returns the sorted known offsets of each
    partition (for skips)."""
    known: dict[tuple, list[int]] = defaultdict(list)
    for (cluster, topic, partition, offset), holders in tally.positions.items():
        known[(cluster, topic, partition)].append(offset)
        if len(holders) > 1:
            a, b = sorted(holders)[:2]
            notes.note("inconsistent_offsets", id=a, other_id=b, topic=topic,
                       partition=partition, offset=offset)
    for offsets in known.values():
        offsets.sort()
    duplicated = {rid for (rid, _bucket), where in tally.id_positions.items() if len(where) > 1}
    for rid in sorted(duplicated):
        notes.note("duplicated", id=rid)
    return known


def _record_anomalies(tally: _Tally, notes: _Notes) -> None:
    """Per id: lost or unseen, aborted reads, unexpected and recovered records."""
    mirrored = tally.mirrored
    reach: dict[tuple, int] = {}
    if mirrored:
        for entry in tally.ids.values():
            if entry.ok is not None and entry.n_poll_loss and entry.ok[0] is not None:
                key = entry.ok[1:4]
                reach[key] = max(reach.get(key, entry.ok[0]), entry.ok[0])
    for rid, entry in tally.ids.items():
        if entry.n_ok and not entry.n_poll_loss:
            offset, cluster, topic, partition, process = entry.ok
            if mirrored:
                passed = offset is not None and reach.get((cluster, topic, partition), -1) > offset
            else:
                top = tally.max_polled.get((cluster, topic, partition))
                passed = offset is not None and top is not None and top > offset
            notes.note("lost" if passed else "unseen", id=rid, topic=topic, partition=partition,
                       offset=offset, process=process)
        if entry.n_poll:
            if entry.n_fail:
                notes.note("aborted_reads", id=rid)
            if not entry.n_send:
                notes.note("unexpected", id=rid)
            if entry.n_info:
                notes.note("recovered", id=rid)


def _poll_order_anomalies(tally: _Tally, known: dict[tuple, list[int]],
                          exempting: dict, notes: _Notes) -> None:
    """Skips and backward steps of each consumer's polls, except across an assign or
    rebalance."""
    for (process, cluster, topic, partition), rows in tally.poll_streams.items():
        rows.sort(key=lambda r: (r[0], r[1]))
        offsets = known[(cluster, topic, partition)]
        times = exempting.get(process, [])
        for prev, cur in zip(rows, rows[1:], strict=False):
            o1, o2 = prev[2], cur[2]
            if o2 > o1:
                if bisect_left(offsets, o2) - bisect_right(offsets, o1) <= 0:
                    continue
                name = "poll_skips"
            else:
                name = "nonmonotonic_polls"
            if times and bisect_right(times, cur[4]) - bisect_right(times, prev[4]) > 0:
                continue  # an assign / rebalance in (previous poll, this poll]
            notes.note(name, id=cur[3], prev_id=prev[3], topic=topic, partition=partition,
                       offset=o2, prev_offset=o1, process=process)


def _send_order_anomalies(tally: _Tally, notes: _Notes) -> None:
    for (process, _cluster, topic, partition), rows in tally.send_streams.items():
        rows.sort(key=lambda r: (r[0], r[1]))
        for prev, cur in zip(rows, rows[1:], strict=False):
            if cur[2] < prev[2]:
                notes.note("nonmonotonic_sends", id=cur[3], prev_id=prev[3], topic=topic,
                           partition=partition, offset=cur[2], prev_offset=prev[2],
                           process=process)
