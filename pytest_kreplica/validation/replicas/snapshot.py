"""Copy every replica's log of a case's topics into the run directory, with the cluster at
rest, and write ``replicas.json`` (HISTORY.md "Replica logs").

At rest means: every partition's ISR is full and every replica's log end offset equals the
leader's. The wait is bounded; when it ends the snapshot is taken anyway and ``at_rest`` is
false, so the verifier (and a person) knows the copies may lag. The high watermark is read
*before* the files are copied, so every ISR copy holds at least the committed range.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from ...errors import ClusterError
from ...rundir import REPLICAS_JSON

if TYPE_CHECKING:  # pragma: no cover
    from ...cluster.base import Cluster, PartitionState, TopicSpec

REPLICAS_DIR = "replicas"


class NotAtRest(Exception):
    """The cluster is not at rest yet; the message says which partition and why."""


def _partitions_of(cluster: Cluster, topics: list[str | TopicSpec], timeout: float
                   ) -> list[tuple[str, int]]:
    """Every (topic, partition) of ``topics``; a topic given by name is looked up in the
    cluster's metadata (one request for all of them)."""
    names = [t if isinstance(t, str) else t.name for t in topics]
    known = {t.name: t.partitions for t in topics if not isinstance(t, str)}
    unknown = [n for n in names if n not in known]
    if unknown:
        states = cluster.partition_states(unknown, timeout)
        for name in unknown:
            known[name] = 1 + max(p for t, p in states if t == name)
    return [(name, p) for name in names for p in range(known[name])]


# A cluster object with only the one-partition methods (a test double) is asked partition by
# partition; the admin backends answer each question for all partitions at once.
def _states(cluster: Cluster, parts: list[tuple[str, int]]
            ) -> dict[tuple[str, int], PartitionState]:
    if not hasattr(cluster, "partition_states"):
        return {part: cluster.partition_state(*part) for part in parts}
    states = cluster.partition_states(sorted({t for t, _ in parts}))
    return {part: states[part] for part in parts if part in states}


def _high_watermarks(cluster: Cluster, parts: list[tuple[str, int]], timeout: float
                     ) -> dict[tuple[str, int], int]:
    if not hasattr(cluster, "high_watermarks"):
        return {part: cluster.high_watermark(*part, timeout) for part in parts}
    return cluster.high_watermarks(parts, timeout)


def _check_at_rest(cluster: Cluster, parts: list[tuple[str, int]]
                   ) -> dict[tuple[str, int], PartitionState]:
    """The partitions' states when every one has a leader, a full ISR and the leader's log
    end offset on every replica (one Metadata request, one ListOffsets per broker)."""
    states = _states(cluster, parts)
    missing = [f"{t}-{p}" for t, p in parts if (t, p) not in states]
    if missing:
        raise NotAtRest(f"{missing} not in the cluster's metadata")
    states = {part: states[part] for part in parts}
    for (topic, partition), state in states.items():
        if state.leader is None or state.leader < 0:
            raise NotAtRest(f"{topic}-{partition} has no leader")
        if not state.isr_full:
            raise NotAtRest(f"{topic}-{partition}: ISR {list(state.isr)} of replicas "
                            f"{list(state.replicas)}")
    ends = (cluster.replica_log_end_offsets(states)
            if hasattr(cluster, "replica_log_end_offsets")
            else {part: cluster.log_end_offsets(*part) for part in states})
    for (topic, partition), leos in sorted(ends.items()):
        state = states[(topic, partition)]
        leader_leo = leos.get(state.leader)
        behind = {n: o for n, o in leos.items() if o != leader_leo}
        if leader_leo is None or isinstance(leader_leo, str) or behind \
                or set(leos) != set(state.replicas):
            raise NotAtRest(f"{topic}-{partition}: log end offsets {leos}, leader "
                            f"{state.leader}")
    return states


def _copy_logs(source: Path, dest: Path) -> int:
    """Copy ``*.log`` of one replica's partition directory; a segment deleted meanwhile
    (retention) is skipped. Returns the bytes copied."""
    copied = 0
    if not source.is_dir():
        return 0
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.glob("*.log")):
        try:
            shutil.copyfile(path, dest / path.name)
            copied += (dest / path.name).stat().st_size
        except FileNotFoundError:
            continue
    return copied


def snapshot_replicas(cluster: Cluster, topics: list[str | TopicSpec], run_dir: str | Path,
                      timeout: float = 60.0) -> dict[str, Any]:
    """Wait (at most ``timeout`` s) for the cluster to be at rest, copy the replicas' logs
    of ``topics`` to ``run_dir/replicas/<node>/`` and write ``run_dir/replicas.json``.
    Returns the replicas.json document (plus nothing else)."""
    run_dir = Path(run_dir)
    started = time.monotonic()
    parts = _partitions_of(cluster, topics, timeout)
    at_rest = True
    last_reason = ""
    states: dict[tuple[str, int], PartitionState] = {}
    remaining = max(1.0, timeout - (time.monotonic() - started))
    try:
        for attempt in Retrying(stop=stop_after_delay(remaining), wait=wait_fixed(0.2),
                                retry=retry_if_exception_type((NotAtRest, ClusterError)),
                                reraise=False):
            with attempt:
                try:
                    states = _check_at_rest(cluster, parts)
                except (NotAtRest, ClusterError) as exc:
                    last_reason = str(exc)
                    raise
    except RetryError:
        at_rest = False
    try:
        hws = _high_watermarks(cluster, parts, max(5.0, timeout / 4))
    except ClusterError as exc:
        raise ClusterError(f"cannot read the high watermarks of {parts}: {exc}") from exc
    if not at_rest:  # the states as they are now, for replicas.json
        states = _states(cluster, parts)

    log_dirs = cluster.log_dirs()
    nodes = sorted({n for s in states.values() for n in s.replicas})
    partitions = []
    not_copied = []  # named in replicas.json; an ISR one fails verify-logs (uncovered_replicas)
    for (topic, partition), state in sorted(states.items()):
        for node in state.replicas:
            source = Path(log_dirs[node]) / f"{topic}-{partition}" if node in log_dirs else None
            if source is None or not source.is_dir():
                not_copied.append({"topic": topic, "partition": partition, "node": node,
                                   "why": "no log directory known for the node"
                                   if source is None else f"{source} does not exist"})
                continue
            _copy_logs(source, run_dir / REPLICAS_DIR / str(node) / f"{topic}-{partition}")
        partitions.append({"topic": topic, "partition": partition,
                           "leader": state.leader if state.leader is not None else -1,
                           "replicas": list(state.replicas), "isr": list(state.isr),
                           "high_watermark": hws[(topic, partition)]})
    for node in nodes:
        (run_dir / REPLICAS_DIR / str(node)).mkdir(parents=True, exist_ok=True)
    doc = {"nodes": {str(n): f"{REPLICAS_DIR}/{n}" for n in nodes},
           "partitions": partitions, "at_rest": at_rest}
    if not at_rest:
        doc["not_at_rest_reason"] = last_reason
    if not_copied:
        doc["not_copied"] = not_copied
    tmp = run_dir / (REPLICAS_JSON + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, run_dir / REPLICAS_JSON)
    return doc
