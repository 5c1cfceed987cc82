"""A tiered case's last step (``tiered: on``): the final read across the tier boundary and
the remote tier's check, after the drain and before the replica snapshot.

1. Wait (bounded) until every partition has a segment in the remote store and its leader's
   local log starts past offset 0: only then can a read from 0 cross the tier boundary.
2. Ask each leader for its local log start (ListOffsets ``earliest-local``, timestamp -4,
   KIP-405), then read every partition from offset 0 to its end with a fresh consumer. A
   record read below that start was served from the remote tier: ``remote_reads``.
3. Copy the remote segments into ``remote/`` of the run directory and check them
   (``validation.replicas.remote``) against what the leader acknowledged.

Both results are scenario checks (``tiered read``, ``remote tier``) and ``tiered`` in
verdict.json; ``remote_reads`` joins verdict.json's counts. The final read's records are
not written to polls.jsonl (the history stays the workload's own).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cluster.facilities.impl import tiered as cluster_tiered
from ..validation.replicas.records import record_id
from ..validation.replicas.remote import check_remote, copy_remote, remote_segments
from ..waits import wait_for

if TYPE_CHECKING:
    from ..cluster.base import Cluster
    from .runner import CaseContext

__all__ = ["TIER_WAIT_S", "acked_offsets", "final_read_step", "read_check", "upload_windows"]

BEFORE_STRIKE_S = 2.0  # an upload this close before a strike was in flight at it
TIER_WAIT_S = 60.0  # a closed segment reaches the remote tier and leaves the hotset
READ_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_MS = 10_000

Part = tuple[str, int]


def acked_offsets(run_dir: Path) -> dict[Part, dict[int, str]]:
    """offset -> id of every acknowledged send, per partition, from sends.jsonl."""
    out: dict[Part, dict[int, str]] = {}
    with open(run_dir / "sends.jsonl") as rows:
        for line in rows:
            row = json.loads(line)
            if row.get("status") == "ok" and row.get("offset") is not None:
                out.setdefault((row["topic"], row["partition"]), {})[row["offset"]] = row["id"]
    return out


def _local_starts(bootstrap: str, parts: list[Part]) -> dict[Part, int]:
    """Each partition leader's local log start offset (ListOffsets earliest-local)."""
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.protocol.consumer.offsets import OffsetSpec

    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","),
                             client_id="kreplica-tiered", request_timeout_ms=REQUEST_TIMEOUT_MS)
    try:
        answer = admin.list_partition_offsets(
            {TopicPartition(t, p): OffsetSpec.EARLIEST_LOCAL for t, p in parts})
    finally:
        admin.close()
    return {(tp.topic, tp.partition): o.offset for tp, o in answer.items()}


def _wait_tiered(cluster: Cluster, parts: list[Part], store: Path) -> None:
    def check() -> str | None:
        starts = _local_starts(cluster.live_bootstrap_servers(), parts)
        lacking = [f"{t}-{p}: {len(_segments(store, t, p))} remote segments, local start "
                   f"{starts.get((t, p))}" for t, p in parts
                   if not _segments(store, t, p) or not starts.get((t, p))]
        return "; ".join(lacking[:3]) or None

    wait_for(check, TIER_WAIT_S, "a remote segment of every partition and each leader's "
             "local log starting past offset 0", hint=f"remote store {store}", poll=1.0)


def _segments(store: Path, topic: str, partition: int) -> list[tuple[int, Path]]:
    name = f"{topic}-{partition}-"
    return [s for folder in (store.iterdir() if store.is_dir() else ())
            if folder.name.startswith(name) and len(folder.name) == len(name) + 22
            for s in remote_segments(folder)]


def upload_windows(run_dir: Path, store: Path, parts: list[Part],
                   wall_minus_mono_ns: int | None = None) -> list[dict[str, Any]]:
    """Per fault of the case (events.jsonl: a strike ``fault #N: ...`` to its restore), the
    remote segments of ``parts`` uploaded in the ``BEFORE_STRIKE_S`` before the strike and
    between strike and restore, by the upload time of each (its file's mtime: the store
    writes every segment file once). Segments uploaded on both sides of a leader's SIGKILL
    show that the copy task was busy when it was killed. Event times are the history's
    monotonic clock, file times the wall clock: ``wall_minus_mono_ns`` (now's by default)
    maps one onto the other."""
    shift = (time.time_ns() - time.monotonic_ns()) if wall_minus_mono_ns is None \
        else wall_minus_mono_ns
    times = sorted(path.stat().st_mtime_ns - shift
                   for t, p in parts for _, path in _segments(store, t, p))
    faults: dict[str, dict[str, int]] = {}
    events = run_dir / "events.jsonl"
    for line in events.read_text().splitlines() if events.exists() else ():
        row = json.loads(line)
        label = str(row.get("detail") or "").partition(":")[0]
        if label.startswith("fault #") and row.get("time_ns") is not None:
            key = "restore" if "restore node" in str(row["detail"]) else "strike"
            faults.setdefault(label, {}).setdefault(key, row["time_ns"])
    out = []
    for label, ns in sorted(faults.items(), key=lambda kv: int(kv[0][7:] or 0)):
        strike, restore = ns.get("strike"), ns.get("restore")
        if strike is None or restore is None:
            continue
        out.append({"fault": label, "uploaded_before": sum(1 for t in times if t < strike),
                    "uploaded_just_before_strike": sum(
                        1 for t in times if strike - BEFORE_STRIKE_S * 1e9 <= t < strike),
                    "uploaded_strike_to_restore": sum(1 for t in times if strike <= t <= restore),
                    "uploaded_total": len(times)})
    return out


def _read_from_zero(bootstrap: str, parts: list[Part]) -> dict[Part, list[tuple[int, str]]]:
    """(offset, id) of every record of ``parts`` from offset 0 to the end offset seen first."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","),
                             client_id="kreplica-tiered-read", group_id=None,
                             enable_auto_commit=False, request_timeout_ms=REQUEST_TIMEOUT_MS,
                             fetch_max_wait_ms=100, max_poll_records=2000)
    try:
        tps = [TopicPartition(t, p) for t, p in parts]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        read: dict[Part, list[tuple[int, str]]] = {part: [] for part in parts}
        deadline = time.monotonic() + READ_TIMEOUT_S
        while time.monotonic() < deadline and any(consumer.position(tp) < ends[tp]
                                                  for tp in tps):
            for tp, records in consumer.poll(timeout_ms=500).items():
                read[(tp.topic, tp.partition)].extend(
                    (r.offset, record_id(r.value) or "") for r in records if r.offset < ends[tp])
        return read
    finally:
        consumer.close()


def read_check(read: Mapping[Part, list[tuple[int, str]]], starts: Mapping[Part, int],
               acked: Mapping[Part, Mapping[int, str]]) -> dict[str, Any]:
    """The final read judged: from offset 0, gapless, every acknowledged record at its
    offset, and ``remote_reads`` (records read below the leader's local log start) > 0."""
    problems: list[str] = []
    remote_reads = 0
    for part, records in sorted(read.items()):
        where = f"{part[0]}-{part[1]}"
        offsets = [o for o, _ in records]
        if offsets != list(range(len(offsets))):
            first = next((i for i, o in enumerate(offsets) if o != i), len(offsets))
            problems.append(f"{where}: read from 0 is not gapless (offset {first} expected, "
                            f"{offsets[first] if first < len(offsets) else 'end'} seen)")
        got = dict(records)
        bad = [(o, i) for o, i in sorted(acked.get(part, {}).items()) if got.get(o) != i]
        if bad:
            problems.append(f"{where}: {len(bad)} acknowledged records not read at their "
                            f"offset, e.g. {bad[0][1]} at {bad[0][0]}")
        remote_reads += sum(1 for o in offsets if o < starts.get(part, 0))
    if remote_reads == 0:
        problems.append("no record was read from the remote tier (every offset read was at "
                        "or above the leader's local log start)")
    return {"ok": not problems, "remote_reads": remote_reads,
            "records": sum(len(r) for r in read.values()), "problems": problems}


def final_read_step(ctx: CaseContext) -> None:
    """The cleanup step of a tiered case (module docstring); never raises: what it could not
    do is a failed check naming why."""
    parts = [(t, p) for t in ctx.topics for p in range(ctx.case.partitions)]
    store = cluster_tiered.store_dir(ctx.cluster.workdir)
    checks = ctx.extra.setdefault("checks", [])
    started = time.monotonic()
    try:
        _wait_tiered(ctx.cluster, parts, store)
        bootstrap = ctx.cluster.live_bootstrap_servers()
        starts = _local_starts(bootstrap, parts)
        read = _read_from_zero(bootstrap, parts)
        acked = acked_offsets(ctx.run_dir)
        copied = copy_remote(store, parts, ctx.run_dir)
        remote = check_remote(ctx.run_dir, starts, acked)
    except Exception as exc:  # noqa: BLE001 - the case fails on it, with the reason
        checks.append({"name": "tiered read", "ok": False,
                       "detail": f"could not read across the tier boundary: {exc}"})
        return
    judged = read_check(read, starts, acked)
    ctx.extra["extra_counts"] = {"remote_reads": judged["remote_reads"]}
    ctx.extra["tiered"] = {"read": judged, "remote": remote, "remote_files": copied,
                           "local_starts": {f"{t}-{p}": o for (t, p), o in starts.items()},
                           "uploads": upload_windows(ctx.run_dir, store, parts),
                           "step_s": round(time.monotonic() - started, 3)}
    checks.append({"name": "tiered read", "ok": judged["ok"], "detail": (
        f"{judged['records']} records read from offset 0, {judged['remote_reads']} of them "
        "below the leader's local log start (from the remote tier)"
        if judged["ok"] else "; ".join(judged["problems"]))})
    bad = {k: v for k, v in remote["counts"].items() if v}
    checks.append({"name": "remote tier", "ok": remote["valid"], "detail": (
        f"{remote['segments']} remote segments of {len(parts)} partitions: CRCs valid, "
        "offsets contiguous from 0, no gap to the local log start, acknowledged records "
        "at their offsets" if remote["valid"] else
        ", ".join(f"{k} {v}" for k, v in bad.items()) + ": "
        + "; ".join(e for ex in remote["examples"].values() for e in ex[:2]))})
