"""Each node's log directory on its own small filesystem, for the disk faults.

A node's ``data`` directory is the mount point of a 64 MiB ext4 image, loop-mounted with
``errors=remount-ro``. Why ext4 on a loop device and not a tmpfs: a read-only disk cannot be
made with ``mount -o remount,ro`` while Kafka holds its segments open for writing (the
kernel answers EBUSY, tmpfs and ext4 alike), but ext4 goes read-only on its own after an
error, as real disks do in production; ``trigger_fs_error`` in sysfs raises such an error.
Mounting needs root (CAP_SYS_ADMIN) and util-linux / e2fsprogs; without them the start
fails with one line saying so.

Every image is named with its owner's token (``reaper.owner_token``). A session killed with
SIGKILL cannot unmount, so every cluster start (``reaper.reap_orphans``) calls
``sweep_stale``: each loop mount whose image names a dead owner is unmounted and its image
deleted; mounts of live sessions are never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ....errors import ClusterError, EnvironmentProblem
from ...ports import identity_alive, process_identity
from .pernode import PerNode

SIZE_MIB = 64
IMAGE_PREFIX = "kreplica-disk."
IMAGE_RE = re.compile(r"^kreplica-disk\.(\d+)-([\d.]+)\.img$")
FILLER = "kreplica-filler"
TOOL_TIMEOUT_S = 60.0
TOOLS = ("mount", "umount", "mkfs.ext4", "e2fsck", "sync")


def _run(cmd: list[str], what: str, ok: tuple[int, ...] = (0,)) -> str:
    """Run a system tool; a failure raises ``ClusterError`` with its own words."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                          stdin=subprocess.DEVNULL, check=False)
    if proc.returncode not in ok:
        said = (proc.stderr or proc.stdout).strip().splitlines()
        raise ClusterError(f"{what} failed: {' '.join(cmd)} exited {proc.returncode} "
                           f"(expected {' or '.join(map(str, ok))}): "
                           f"{said[0] if said else 'no output'}")
    return proc.stdout


def check_environment() -> None:
    """Raise ``EnvironmentProblem`` unless this process may loop-mount an ext4 image."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise EnvironmentProblem(
            f"the disk faults (disk_full, disk_readonly) need {', '.join(missing)} on PATH "
            "(Debian: apt-get install mount e2fsprogs)")
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            f"the disk faults (disk_full, disk_readonly) loop-mount a small ext4 image per "
            f"node and need root; this process runs as uid {os.geteuid()}")


def mounts() -> dict[Path, tuple[str, str, str]]:
    """Mount point -> (source, filesystem type, options) from the kernel's mount table."""
    found: dict[Path, tuple[str, str, str]] = {}
    try:
        with open("/proc/self/mounts") as fh:
            lines = fh.read().splitlines()
    except OSError:  # not Linux: no loop mounts of ours can exist
        return found
    for line in lines:
        source, point, fstype, options = line.split()[:4]
        found[Path(point.replace("\\040", " "))] = (source, fstype, options)
    return found


def backing_file(device: str) -> Path | None:
    """The image behind a loop device (``/dev/loopN``), None for anything else."""
    sys_file = Path("/sys/block") / Path(device).name / "loop" / "backing_file"
    try:
        return Path(sys_file.read_text().strip())
    except OSError:
        return None


@dataclass
class SmallDisk:
    """One node's filesystem: ``image`` loop-mounted at ``mountpoint`` (its log dir)."""

    node_id: int
    image: Path
    mountpoint: Path

    @property
    def filler(self) -> Path:
        return self.mountpoint / FILLER

    def source(self) -> tuple[str, str, str] | None:
        return mounts().get(self.mountpoint)

    def mounted(self) -> bool:
        return self.source() is not None

    def options(self) -> str:
        """The mount options the kernel shows now (``ro`` / ``emergency_ro`` after an error)."""
        seen = self.source()
        return seen[2] if seen else "not mounted"

    def free_bytes(self) -> int:
        st = os.statvfs(self.mountpoint)
        return st.f_bavail * st.f_frsize

    def create(self) -> None:
        """Make the image (sparse) and mount it; the mount point must be empty."""
        self.image.parent.mkdir(parents=True, exist_ok=True)
        with open(self.image, "wb") as fh:
            fh.truncate(SIZE_MIB * 1024 * 1024)
        # -m 0: no blocks reserved for root (we run as root: "full" must mean full)
        _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-L", f"kreplica-n{self.node_id}",
              str(self.image)], f"making node {self.node_id}'s filesystem")
        self.mount()

    def mount(self) -> None:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        _run(["mount", "-o", "loop,errors=remount-ro", str(self.image), str(self.mountpoint)],
             f"mounting node {self.node_id}'s filesystem")
        # Kafka would take the directory ext4 makes for fsck for a partition and fail
        with contextlib.suppress(OSError):
            (self.mountpoint / "lost+found").rmdir()

    def unmount(self) -> None:
        """Unmount (lazily when something still holds it: it goes once that is gone)."""
        if not self.mounted():
            return
        try:
            _run(["umount", str(self.mountpoint)], f"unmounting node {self.node_id}'s disk")
        except ClusterError:
            _run(["umount", "-l", str(self.mountpoint)],
                 f"unmounting node {self.node_id}'s disk lazily")

    def remount_checked(self) -> str:
        """Unmount, repair with ``e2fsck -fy`` (exit 1: errors fixed) and mount again: what
        an operator does after the kernel made the disk read-only. Returns fsck's verdict."""
        self.unmount()
        out = _run(["e2fsck", "-f", "-y", str(self.image)],
                   f"checking node {self.node_id}'s filesystem", ok=(0, 1))
        self.mount()
        last = [line for line in out.strip().splitlines() if line.strip()]
        return last[-1] if last else "clean"

    def remove(self) -> None:
        self.unmount()
        self.image.unlink(missing_ok=True)


@dataclass
class SmallDisks(PerNode[SmallDisk]):
    """The small filesystems of one cluster's nodes."""

    def close(self) -> None:
        """Unmount every disk and delete its image (the nodes must have exited)."""
        self.each(SmallDisk.remove)

    def sync(self) -> None:
        """Write every disk's dirty pages (``syncfs``): what is there now survives an error."""
        for disk in self.disks.values():
            _run(["sync", "-f", str(disk.mountpoint)], f"syncing node {disk.node_id}'s disk")

    def describe(self) -> dict[str, str]:
        return {str(n): f"{d.image} on {d.mountpoint} ({SIZE_MIB} MiB ext4)"
                for n, d in self.disks.items()}


def image_name(owner: dict | None = None) -> str:
    ident = owner or process_identity()
    return f"{IMAGE_PREFIX}{ident['pid']}-{ident['started']}.img"


def mount_all(log_dirs: dict[int, Path]) -> SmallDisks:
    """A small filesystem mounted at each node's (empty) log dir; the image beside it, named
    with this session's owner token. Raises ``EnvironmentProblem`` when mounting is not
    possible here; mounts already made are undone on any failure."""
    check_environment()
    sweep_stale()
    name = image_name()
    return SmallDisks().add_each(
        ((n, SmallDisk(n, Path(d).parent / name, Path(d))) for n, d in sorted(log_dirs.items())),
        SmallDisk.create)


def sweep_stale() -> list[Path]:
    """Unmount every loop mount whose image names an owner that is dead, and delete the
    image; returns the mount points freed. Cheap (reads the mount table): called at each
    cluster start. Unreadable or foreign mounts are left alone."""
    freed = []
    for point, (source, fstype, _opts) in mounts().items():
        if fstype != "ext4" or not source.startswith("/dev/loop"):
            continue
        image = backing_file(source)
        match = IMAGE_RE.match(image.name) if image is not None else None
        if image is None or match is None:
            continue
        if identity_alive({"pid": int(match.group(1)), "started": float(match.group(2))}):
            continue
        disk = SmallDisk(0, image, point)
        with contextlib.suppress(ClusterError, OSError):
            disk.remove()
            freed.append(point)
    return freed
