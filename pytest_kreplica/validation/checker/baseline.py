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

    ids: dict[str, _Id] = defaultdict(_Id)
    positions: dict[tuple, set] = defaultdict(set)  # (cluster, topic, partition, offset) -> ids
    id_positions: dict[tuple, set] = defaultdict(set)  # (id, bucket) -> positions
    max_polled: dict[tuple, int] = {}
    send_streams: dict[tuple, list] = defaultdict(list)
    poll_streams: dict[tuple, list] = defaultdict(list)
    totals = dict.fromkeys(TOTALS, 0)

    for row in iter_rows(sends_table):
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
                positions[(*tp, offset)].add(rid)
                id_positions[(rid, cluster if mirrored else None)].add((*tp, offset))
                send_streams[(row["process"], *tp)].append(
                    (row["invoke_ns"], row["complete_ns"], offset, rid))
        elif status == "fail":
            entry.n_fail += 1
            totals["failed"] += 1
        else:
            entry.n_info += 1
            totals["indeterminate"] += 1

    for seq, row in enumerate(iter_rows(polls_table)):
        rid, offset, cluster = row["id"], row["offset"], row.get("cluster")
        tp = (cluster, row["topic"], row["partition"])
        entry = ids[rid]
        entry.n_poll += 1
        totals["polled"] += 1
        if not mirrored or cluster == "target":
            entry.n_poll_loss += 1
        positions[(*tp, offset)].add(rid)
        id_positions[(rid, cluster if mirrored else None)].add((*tp, offset))
        if offset > max_polled.get(tp, -1 << 62):
            max_polled[tp] = offset
        index = row.get("index")
        poll_streams[(row["process"], *tp)].append(
            (row["poll"], seq if index is None else index, offset, rid, row["time_ns"]))

    counts = dict.fromkeys(NAMES, 0)
    examples: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def note(name: str, **example: Any) -> None:
        counts[name] += 1
        if len(examples[name]) < EXAMPLES_PER_ANOMALY:
            examples[name].append(example)

    # offsets: inconsistent, and the sorted known offsets of each partition (for skips)
    known: dict[tuple, list[int]] = defaultdict(list)
    for (cluster, topic, partition, offset), holders in positions.items():
        known[(cluster, topic, partition)].append(offset)
        if len(holders) > 1:
            a, b = sorted(holders)[:2]
            note("inconsistent_offsets", id=a, other_id=b, topic=topic, partition=partition,
                 offset=offset)
    for offsets in known.values():
        offsets.sort()
    duplicated = {rid for (rid, _bucket), where in id_positions.items() if len(where) > 1}
    for rid in sorted(duplicated):
        note("duplicated", id=rid)

    reach: dict[tuple, int] = {}
    if mirrored:
        for entry in ids.values():
            if entry.ok is not None and entry.n_poll_loss and entry.ok[0] is not None:
                key = entry.ok[1:4]
                reach[key] = max(reach.get(key, entry.ok[0]), entry.ok[0])
    for rid, entry in ids.items():
        if entry.n_ok and not entry.n_poll_loss:
            offset, cluster, topic, partition, process = entry.ok
            if mirrored:
                passed = offset is not None and reach.get((cluster, topic, partition), -1) > offset
            else:
                top = max_polled.get((cluster, topic, partition))
                passed = offset is not None and top is not None and top > offset
            note("lost" if passed else "unseen", id=rid, topic=topic, partition=partition,
                 offset=offset, process=process)
        if entry.n_poll:
            if entry.n_fail:
                note("aborted_reads", id=rid)
            if not entry.n_send:
                note("unexpected", id=rid)
            if entry.n_info:
                note("recovered", id=rid)

    for (process, cluster, topic, partition), rows in poll_streams.items():
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
            note(name, id=cur[3], prev_id=prev[3], topic=topic, partition=partition,
                 offset=o2, prev_offset=o1, process=process)
    for (process, _cluster, topic, partition), rows in send_streams.items():
        rows.sort(key=lambda r: (r[0], r[1]))
        for prev, cur in zip(rows, rows[1:], strict=False):
            if cur[2] < prev[2]:
                note("nonmonotonic_sends", id=cur[3], prev_id=prev[3], topic=topic,
                     partition=partition, offset=cur[2], prev_offset=prev[2], process=process)
    return Verdict.from_counts({**counts, **totals}, chosen, dict(examples))
