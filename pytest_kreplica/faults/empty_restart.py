"""empty_restart: a node SIGKILLed, its disk emptied of partition data, then started again.

The strike kills the victim and deletes every partition directory of its log dir (the
case's topics, ``__consumer_offsets``, the remote log metadata topic) and the offset
checkpoint files that name them. What stays is what KRaft needs for the node to rejoin as
itself: ``meta.properties`` (node id, cluster id, the log dir's directory id, which the
controller's partition assignments name) and the metadata log ``__cluster_metadata-0`` with
its ``bootstrap.checkpoint`` (every node is a KRaft voter here: a voter that forgot its log
and its vote could help elect a quorum leader missing committed metadata). So the node comes
back as a broker with an empty disk and every replica it holds is rebuilt by fetching.

On a tiered cluster (``tiered: on``) a follower cannot fetch what left the leader's local
log: the leader answers ``OFFSET_MOVED_TO_TIERED_STORAGE``, the follower reads the leader
epochs and producer state of the segment below the leader's local log start from the remote
tier and starts its local log there. That is the fault's point, and what it verifies.

Verified to act: the strike reads the log dir back (no partition directory left, the kept
files present) and records what it deleted. The restore waits (bounded) until the
controller has fenced the node and taken it out of the ISR, starts it, waits until it is
back in the ISR of every partition it held, and reads its rebuilt log dir:
every partition directory is back, and on a tiered cluster each partition that had remote
segments at the strike starts its local log past offset 0 (its first segment's base offset),
which proves it rebuilt from the tier boundary and not from a full local copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ..cluster.facilities.impl import tiered
from ..errors import ClusterError
from ..waits import wait_for
from .failure import GONE_AT_STRIKE, STOPS, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster

# what KRaft needs to rejoin as the same node (everything else in the log dir is deleted)
KEPT = ("meta.properties", "bootstrap.checkpoint", "__cluster_metadata-0", ".lock")
NOTE = "empty-restart.json"  # beside the log dir: what the strike deleted, for the restore
ISR_TIMEOUT_S = 90.0  # a tiered follower fetches remote aux state before it catches up
MAX_LISTED = 6

Part = tuple[str, int]


def _part(name: str) -> Part | None:
    topic, _, number = name.rpartition("-")
    return (topic, int(number)) if topic and number.isdigit() else None


def _first_offset(folder: Path) -> int | None:
    """The base offset of the partition directory's first segment (None: no segment)."""
    offsets = [int(p.stem) for p in folder.glob("*.log") if p.stem.isdigit()]
    return min(offsets) if offsets else None


def _tiered_parts(cluster: Cluster, parts: list[Part]) -> list[str]:
    """``topic-partition`` of ``parts`` with a segment in the cluster's remote store."""
    if cluster.facility("tiered_storage") is None:
        return []
    store = tiered.store_dir(cluster.workdir)
    folders = [f for f in (store.iterdir() if store.is_dir() else ()) if any(f.glob("*.log"))]
    return [f"{t}-{p}" for t, p in parts
            if any(f.name.startswith(f"{t}-{p}-") and len(f.name) == len(f"{t}-{p}-") + 22
                   for f in folders)]


def strike(cluster: Cluster, node: int) -> str:
    """SIGKILL the node and delete its partition data; verified by reading the dir back."""
    log_dir = cluster.node(node).log_dir
    cluster.kill(node)
    state = cluster.node_state(node).value
    if state != "stopped":
        raise ClusterError(f"empty_restart: node {node} is {state} after SIGKILL (expected "
                           f"stopped); its log dir {log_dir} was not emptied")
    doomed = [e for e in sorted(log_dir.iterdir()) if e.name not in KEPT]
    parts = [p for e in doomed if e.is_dir() and (p := _part(e.name)) is not None]
    remote = _tiered_parts(cluster, [p for p in parts if not p[0].startswith("__")])
    size = sum(f.stat().st_size for e in doomed for f in ([e] if e.is_file() else e.rglob("*"))
               if f.is_file())
    for entry in doomed:
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    left = [e.name for e in log_dir.iterdir() if e.name not in KEPT]
    missing = [k for k in ("meta.properties", "__cluster_metadata-0")
               if not (log_dir / k).exists()]
    if left or missing or not parts:
        raise ClusterError(f"empty_restart did not empty node {node}'s log dir {log_dir}: "
                           f"left {left[:MAX_LISTED]}, kept files missing {missing}, "
                           f"{len(parts)} partition dirs found to delete")
    (log_dir.parent / NOTE).write_text(json.dumps(
        {"parts": [f"{t}-{p}" for t, p in parts], "remote": remote}))
    shown = sorted(parts, key=lambda tp: (tp[0].startswith("__"), tp))  # the case's first
    listed = " ".join(f"{t}-{p}" for t, p in shown[:MAX_LISTED])
    return (f"node {node} killed; {len(parts)} partition dirs and {len(doomed) - len(parts)} "
            f"checkpoint files deleted ({size} bytes: {listed}"
            f"{' ...' if len(parts) > MAX_LISTED else ''}), kept {', '.join(KEPT[:3])}; "
            f"{len(remote)} of them had remote segments")


def _rebuilt(log_dir: Path, names: list[str]) -> dict[str, int | None]:
    return {n: _first_offset(log_dir / n) if (log_dir / n).is_dir() else None for n in names}


def _isr_lacking(cluster: Cluster, node: int, topics: list[str], inside: bool) -> str | None:
    """None once the node is in (``inside``) or out of the ISR of every partition of
    ``topics`` it replicates; else the first partitions that are not yet."""
    if not topics:
        return None
    states = cluster.partition_states(topics)
    out = [f"{t}-{p} isr {list(s.isr)}" for (t, p), s in sorted(states.items())
           if node in s.replicas and (node in s.isr) != inside]
    return "; ".join(out[:3]) or None


def restore(cluster: Cluster, node: int, timeout: float) -> str:
    """Start the node once the controller took it out of the ISR (so that being back in it
    means it caught up), wait until it is back in the ISR of every partition it held, then
    read where each rebuilt local log starts (tiered: past offset 0)."""
    log_dir = cluster.node(node).log_dir
    note = json.loads((log_dir.parent / NOTE).read_text())
    names = [n for n in note["parts"] if not n.startswith("__")]
    topics = sorted({part[0] for n in names if (part := _part(n)) is not None})
    hint = f"log: {cluster.node(node).log_file}"
    wait_for(lambda: _isr_lacking(cluster, node, topics, inside=False), ISR_TIMEOUT_S,
             f"node {node} fenced and out of the ISR before its empty restart", hint, poll=0.5)
    cluster.start_node(node, timeout=timeout)

    def back() -> str | None:
        lacking = _isr_lacking(cluster, node, topics, inside=True)
        empty = [n for n, o in _rebuilt(log_dir, names).items() if o is None]
        return lacking or (f"no local segment of {empty[:3]} yet" if empty else None)
    wait_for(back, ISR_TIMEOUT_S, f"node {node} back in the ISR of every partition it held "
             "after its empty restart, each with a local segment", hint, poll=0.5)
    starts = _rebuilt(log_dir, names)
    from_zero = sorted(n for n in note["remote"] if starts.get(n) == 0)
    if from_zero:
        raise ClusterError(f"empty_restart: node {node} did not rebuild from the remote tier: "
                           "its local log starts at 0 although the remote tier held the "
                           f"older segments of {from_zero[:MAX_LISTED]}; log dir {log_dir}")
    shown = ", ".join(f"{n} from {o}" for n, o in sorted(starts.items())[:MAX_LISTED])
    return (f"node {node} back in the ISR of {len(names)} partitions with an emptied disk; "
            f"local logs start: {shown}"
            + (f" ({len(note['remote'])} rebuilt from the tier boundary, past offset 0)"
               if note["remote"] else ""))


FAILURE = Failure(
    name="empty_restart", doc="SIGKILL, the node's partition data deleted (meta.properties "
    "and the KRaft metadata log kept), then a restart that rebuilds every replica",
    event="wipe", restore_event="start", colour="#8c6d31", label="kill + empty disk",
    backends=("process",), moves_leadership=True, leader_gone=GONE_AT_STRIKE, random=False,
    strike=strike, restore=restore, struck_state="stopped", availability=STOPS)
