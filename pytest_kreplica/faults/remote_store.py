"""remote_store_readonly: the tiered cluster's remote store refuses writes for the downtime.

The store (Kafka's LocalTieredStorage, a directory every node shares) is frozen with the
immutable attribute (``cluster/facilities/impl/tieredfreeze.py``): each upload the leaders'
remote log managers try fails at its first file, Kafka logs ``Error occurred while copying log
segments of partition`` and counts it in ``RemoteCopyErrorsPerSec``, and keeps the segments
locally (local retention never deletes a segment that is not in the remote tier), retrying at
every copy task. Reads of segments already uploaded go on. The struck node is the case's
target (its leader): the store is the cluster's, the node is whose log is read for the
evidence.

Verified to act: a probe file is refused in the store, and the nodes' logs show upload
errors within ``ERROR_TIMEOUT_S`` (a case that rolls no segment in the window cannot see
the fault: that is a fault that did not act, and raises). The heal thaws the store, checks
a new file is taken again, and waits (bounded) until the remote tier holds more segments
than it did at the strike: the copy tasks caught up.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..cluster.facilities.impl import tiered
from ..errors import ClusterError, InputError
from ..waits import wait_for
from .failure import degrading

if TYPE_CHECKING:
    from ..cluster import Cluster

NAME = "remote_store_readonly"
COPY_ERROR = re.compile(r"Error occurred while copying log segments of partition")
ERROR_TIMEOUT_S = 30.0  # a 2 KiB segment rolls within a second under the workload
CATCH_UP_TIMEOUT_S = 60.0
OFFSETS = "remote-store-fault.json"  # beside the store: segments and log sizes at the strike


def _store(cluster: Cluster) -> Path:
    if cluster.facility("tiered_storage") is None:
        raise InputError(f"failure {NAME} needs a tiered cluster (tiered: on, facility "
                         "tiered_storage); this one has no remote store")
    return tiered.store_dir(cluster.workdir)


def _segments(root: Path) -> int:
    return sum(1 for f in root.iterdir() if f.is_dir() for _ in f.glob("*.log"))


def _log_sizes(cluster: Cluster) -> dict[int, int]:
    return {n.node_id: (n.log_file.stat().st_size if n.log_file.exists() else 0)
            for n in cluster.nodes}


def _copy_errors(cluster: Cluster, since: dict[int, int]) -> dict[int, int]:
    """Upload errors each node logged after the offsets ``since``."""
    out = {}
    for n in cluster.nodes:
        if not n.log_file.exists():
            continue
        with open(n.log_file, "rb") as fh:
            fh.seek(since.get(n.node_id, 0))
            out[n.node_id] = len(COPY_ERROR.findall(fh.read().decode(errors="replace")))
    return out


def strike(cluster: Cluster, node: int, name: str) -> str:
    from ..cluster.facilities.impl import tieredfreeze  # pulls in psutil

    root = _store(cluster)
    sizes, before = _log_sizes(cluster), _segments(root)
    started = time.monotonic()
    folders = tieredfreeze.freeze(root)
    (root.parent / OFFSETS).write_text(json.dumps({"segments": before, "logs": sizes}))
    refused = tieredfreeze.write_refused(root)
    if refused is None:
        raise ClusterError(f"{name}: the remote store {root} still takes new files after "
                           "chattr +i")
    errors: dict[int, int] = {}

    def failing() -> str | None:
        errors.update(_copy_errors(cluster, sizes))
        return None if any(errors.values()) else \
            f"no upload error logged yet; {_segments(root)} remote segments (were {before})"
    wait_for(failing, ERROR_TIMEOUT_S, f"an upload to the frozen remote store failing ({name})",
             f"store {root}; logs: {', '.join(str(n.log_file) for n in cluster.nodes)}",
             poll=0.5)
    shown = ", ".join(f"node {n}: {c}" for n, c in sorted(errors.items()) if c)
    return (f"remote store frozen ({folders} folders, chattr +i), a new file refused: "
            f"{refused}; uploads failing {time.monotonic() - started:.1f} s later ({shown} "
            f"copy errors logged); {before} remote segments at the strike (node {node} led)")


def restore(cluster: Cluster, node: int, name: str, timeout: float) -> str:
    from ..cluster.facilities.impl import tieredfreeze  # pulls in psutil

    root = _store(cluster)
    note = root.parent / OFFSETS
    at_strike = json.loads(note.read_text()) if note.exists() else {}
    before = at_strike.get("segments", 0)
    failed = sum(_copy_errors(cluster, {int(n): size for n, size in
                                        at_strike.get("logs", {}).items()}).values())
    tieredfreeze.thaw(root)
    refused = tieredfreeze.write_refused(root)
    if refused is not None:
        raise ClusterError(f"{name}: the remote store {root} still refuses new files after "
                           f"the thaw: {refused}")
    started = time.monotonic()

    def caught_up() -> str | None:
        now = _segments(root)
        return None if now > before else f"{now} remote segments (as at the strike)"
    wait_for(caught_up, min(timeout, CATCH_UP_TIMEOUT_S), f"uploads resumed after {name}",
             f"store {root}", poll=0.5)
    return (f"{failed} copy errors logged while the store was frozen; thawed, a new file "
            f"taken; {_segments(root)} remote segments {time.monotonic() - started:.1f} s "
            f"later (were {before} at the strike)")


FAILURE = degrading(NAME, "the tiered cluster's remote store made unwritable (chattr +i) for "
                    "the downtime; heal: thawed, uploads caught up", "thaw", "#c49c94",
                    "remote store read-only", strike, restore,
                    facilities=frozenset({"tiered_storage"}))
