"""Disk faults on the node's own small filesystem (cluster/facilities/impl/smalldisk.py).

``disk_full`` fills the victim's log-dir filesystem to the brim while the workload produces;
``disk_readonly`` makes the kernel turn it read-only, as ext4 does after an I/O error
(``errors=remount-ro``; ``mount -o remount,ro`` is refused while Kafka holds segments open
for writing). Either way Kafka's next write to the directory fails, it takes the directory
offline, and as the node's only log dir also holds its KRaft metadata log, the node halts:
its leadership moves to another replica of the ISR.

Each strike is verified to act before it counts, and the figures go into its event: the free
bytes (or the mount options) before and after, the node's own log line saying the directory
failed, and the partitions it led handing their leadership over; a fault whose effect is not
seen raises instead. The heal undoes the cause (the filler removed; the filesystem unmounted,
repaired with ``e2fsck`` and mounted again) and restarts the node, which Kafka needs to use a
directory it took offline.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ClusterError, InputError
from ..waits import wait_for
from .failure import GONE_AT_ELECTION, SUITE_OWNED, Failure

if TYPE_CHECKING:
    from ..cluster.facilities.impl.smalldisk import SmallDisk

# the node's log dir is mounted on the host; a container's bind mount takes it along
BACKENDS = SUITE_OWNED
NEEDS = frozenset({"small_disk"})  # the node facility of every disk fault
FULL_SLACK_BYTES = 256 * 1024  # "full": at most this much left after the fill
OFFLINE_TIMEOUT_S = 30.0  # Kafka writes every 0.5 s at least (KRaft no-op records)
LEADERSHIP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
# the node's own words: the write that failed, then the log dir taken offline (ReplicaManager)
# and, as it was the node's only one, the broker's shutdown (LogManager); or, when the KRaft
# metadata log's write failed first, the raft IO thread's fatal fault, which halts the node
FAILED_WRITE = re.compile(r"LogDirFailureChannel|No space left on device|Read-only file system")
OFFLINE = re.compile(r"Stopping serving (replicas|logs) in dir|Shutdown broker because|"
                     r"Encountered fatal fault")


def disk_of(cluster: Any, node: int, failure: str) -> SmallDisk:
    """The node's small filesystem; a cluster started without them cannot take the fault."""
    disks = cluster.facility("small_disk")
    if disks is None:
        raise InputError(f"failure {failure} needs a cluster whose log dirs are on small "
                         "filesystems (facility small_disk); this one has none")
    return disks[node]


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def fill(path: Path) -> int:
    """Fill the filesystem holding ``path`` to the brim with the file ``path``: allocate
    what is free at once, then write ever smaller chunks until the kernel says ENOSPC.
    Returns the bytes the file holds."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        st = os.statvfs(path)
        with contextlib.suppress(OSError):  # metadata blocks may make the exact size fail
            os.posix_fallocate(fd, 0, max(st.f_bavail * st.f_frsize - 1024 * 1024, 1))
        os.lseek(fd, 0, os.SEEK_END)
        for size in (1024 * 1024, 64 * 1024, 4096, 512):
            chunk = b"\0" * size
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
        with contextlib.suppress(OSError):
            os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def _topics_on(disk: SmallDisk) -> list[str]:
    """Topics with a replica in the node's log dir (``<topic>-<partition>`` folders)."""
    names = set()
    for entry in disk.mountpoint.iterdir():
        topic, _, part = entry.name.rpartition("-")
        if entry.is_dir() and part.isdigit() and topic and not topic.startswith("__"):
            names.add(topic)
    return sorted(names)


def _led(cluster: Any, node: int, topics: list[str]) -> list[tuple[str, int]]:
    if not topics:
        return []
    states = cluster.partition_states(topics)
    return sorted(tp for tp, s in states.items() if s.leader == node)


def _log_offset(cluster: Any, node: int) -> int:
    path = cluster.node(node).log_file
    return path.stat().st_size if path.exists() else 0


def _lines_since(cluster: Any, node: int, offset: int) -> list[str]:
    with open(cluster.node(node).log_file, "rb") as fh:
        fh.seek(offset)
        return fh.read().decode(errors="replace").splitlines()


def _quote(line: str) -> str:
    """A log line without its timestamp, cut to a readable length."""
    return repr(re.sub(r"^\[[^]]*\] ", "", line.strip())[:200])


def offline_evidence(cluster: Any, node: int, offset: int, failure: str) -> str:
    """Wait for the node's log to say the dir went offline; returns the failed write's line
    and the offline lines it wrote."""
    seen: list[list[str]] = [[]]

    def said() -> str | None:
        seen[0] = _lines_since(cluster, node, offset)
        return None if any(OFFLINE.search(x) for x in seen[0]) else \
            "no log line about the log dir going offline yet"
    log_file = cluster.node(node).log_file
    wait_for(said, OFFLINE_TIMEOUT_S, f"node {node} taking its log dir offline after "
             f"{failure}", f"log: {log_file}", poll=0.2)
    lines = seen[0]
    first = next((x for x in lines if FAILED_WRITE.search(x)), None)
    offline = [x for x in lines if OFFLINE.search(x)]
    return f"node {node} log: " + " / ".join(_quote(x) for x in ([first] if first else [])
                                            + offline[:2])


def _verify_moved(cluster: Any, node: int, led: list[tuple[str, int]]) -> str:
    """Wait until none of the partitions the node led is led by it any more."""
    if not led:
        return f"node {node} led no partition"
    topics = sorted({t for t, _ in led})
    started = time.monotonic()

    def moved() -> str | None:
        states = cluster.partition_states(topics)
        still = [f"{t}-{p}" for t, p in led if states[(t, p)].leader == node]
        return f"node {node} still leads {still}" if still else None
    wait_for(moved, LEADERSHIP_TIMEOUT_S, f"leadership moved off node {node}",
             f"log: {cluster.node(node).log_file}", poll=0.2)
    return (f"leadership of {len(led)} partition(s) moved off node {node} within "
            f"{time.monotonic() - started:.1f} s of the dir failing")


def _node_state(cluster: Any, node: int) -> str:
    state = cluster.node_state(node).value
    return f"node {node} {state}"


def strike_full(cluster: Any, node: int) -> str:
    """Fill the victim's filesystem; verified: free bytes before/after, the node's log line,
    its leadership moved."""
    disk = disk_of(cluster, node, "disk_full")
    led = _led(cluster, node, _topics_on(disk))
    offset = _log_offset(cluster, node)
    before = disk.free_bytes()
    held = fill(disk.filler)
    after = disk.free_bytes()
    if after > FULL_SLACK_BYTES:
        raise ClusterError(f"disk_full did not fill node {node}'s filesystem: {_mib(after)} "
                           f"still free after a filler of {_mib(held)} (expected at most "
                           f"{_mib(FULL_SLACK_BYTES)}); mount {disk.mountpoint}")
    said = offline_evidence(cluster, node, offset, "disk_full")
    moved = _verify_moved(cluster, node, led)
    return (f"free {_mib(before)} -> {_mib(after)} (filler {_mib(held)}); {said}; "
            f"{moved}; {_node_state(cluster, node)}")


def _restart(cluster: Any, node: int, timeout: float) -> str:
    """Start the node again (stopping it first if it ran on without its log dir)."""
    state = cluster.node_state(node).value
    if state != "stopped":
        cluster.terminate(node, timeout=STOP_TIMEOUT_S)
    cluster.start_node(node, timeout=timeout)
    return f"node {node} restarted (it was {state})"


def restore_full(cluster: Any, node: int, timeout: float) -> str:
    """Remove the filler and restart the node; verified: the space is free again."""
    disk = disk_of(cluster, node, "disk_full")
    disk.filler.unlink(missing_ok=True)
    free = disk.free_bytes()
    if free <= FULL_SLACK_BYTES:
        raise ClusterError(f"disk_full on node {node} did not heal: {_mib(free)} free after "
                           f"removing {disk.filler}")
    return f"filler removed, {_mib(free)} free; {_restart(cluster, node, timeout)}"


def _write_refused(disk: SmallDisk) -> str | None:
    """The error a new file on the disk gets now (None: it was written)."""
    probe = disk.mountpoint / "kreplica-probe"
    try:
        probe.write_bytes(b"probe")
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))
    probe.unlink(missing_ok=True)
    return None


def strike_readonly(cluster: Any, node: int) -> str:
    """Raise an ext4 error on the victim's filesystem (``errors=remount-ro`` turns it
    read-only); verified: the mount options, a refused write, the node's log line, its
    leadership moved."""
    disk = disk_of(cluster, node, "disk_readonly")
    led = _led(cluster, node, _topics_on(disk))
    offset = _log_offset(cluster, node)
    seen = disk.source()
    if seen is None:
        raise ClusterError(f"node {node}'s filesystem is not mounted at {disk.mountpoint}")
    before = seen[2]
    trigger = Path("/sys/fs/ext4") / Path(seen[0]).name / "trigger_fs_error"
    trigger.write_text("kreplica disk_readonly\n")
    after, refused = disk.options(), _write_refused(disk)
    if "ro" not in re.split(r"[,_]", after) or refused is None:
        raise ClusterError(f"disk_readonly did not make node {node}'s filesystem read-only: "
                           f"mount options {after!r}, a new file was "
                           f"{'refused: ' + refused if refused else 'written'} (expected ro "
                           f"and EROFS); {trigger}")
    said = offline_evidence(cluster, node, offset, "disk_readonly")
    moved = _verify_moved(cluster, node, led)
    return (f"mount {before!r} -> {after!r}, a new file refused with {refused}; {said}; "
            f"{moved}; {_node_state(cluster, node)}")


def restore_readonly(cluster: Any, node: int, timeout: float) -> str:
    """Stop the node, unmount, repair and mount the filesystem again, restart the node;
    verified: the disk takes writes again."""
    disk = disk_of(cluster, node, "disk_readonly")
    state = cluster.node_state(node).value
    if state != "stopped":
        cluster.terminate(node, timeout=STOP_TIMEOUT_S)
    fsck = disk.remount_checked()
    refused = _write_refused(disk)
    if refused is not None:
        raise ClusterError(f"disk_readonly on node {node} did not heal: a new file was "
                           f"refused with {refused} after the remount ({disk.options()!r})")
    cluster.start_node(node, timeout=timeout)
    return (f"remounted {disk.options()!r} after e2fsck ({fsck}); node {node} restarted "
            f"(it was {state})")


def _failure(name: str, doc: str, colour: str, label: str, strike: Any,
             restore: Any) -> Failure:
    """The registry's entry: process backend only (a loop mount per node), the node's
    leadership must move, never drawn by ``random``; its ISR watched on the timeline."""
    return Failure(name=name, doc=doc, event=name, restore_event="heal", colour=colour,
                   label=label, backends=BACKENDS, moves_leadership=True,
                   leader_gone=GONE_AT_ELECTION, random=False, strike=strike,
                   restore=restore, watch_isr=True, facilities=NEEDS)


# the FAILURES registry's entries (faults/registry.py, one line each)
DISK_FULL = _failure("disk_full", "the node's log-dir filesystem filled to the brim; heal: "
                     "filler removed, node restarted", "#393b79", "disk full (ENOSPC)",
                     strike_full, restore_full)
DISK_READONLY = _failure("disk_readonly", "the node's log-dir filesystem made read-only by an "
                         "ext4 error; heal: fsck, remount, node restarted", "#637939",
                         "disk read-only (EROFS)", strike_readonly, restore_readonly)
