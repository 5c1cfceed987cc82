"""Each node's log directory on a lazy FUSE filesystem (``lazyfs.py``), for the power-loss
fault: mounted before the cluster formats its storage, asked to cut or sync through request
files, unmounted after every JVM has exited.

The daemon is a Python process of ours (libfuse 3 through mfusepy; the library is Debian's
``libfuse3-3``, fetched once into the cache like libfaketime, or the system's). As root the
library mounts with mount(2) itself, so no setuid ``fusermount3`` is needed; anyone else
needs Debian's ``fuse3`` package. Each daemon dies with the session (parent-death signal),
carries the reaper's owner marker, and names its owner in the mount's source
(``kreplica-lazy.<pid>-<start time>``), so a killed session's mounts, left answering
"transport endpoint is not connected", are unmounted at the next cluster start
(``sweep_stale``).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .... import once
from ....cache import cache_dir
from ....errors import ClusterError, EnvironmentProblem
from ...launcher import Launcher
from ...owner import owner_env
from ...ports import identity_alive, process_identity
from . import debpkg, smalldisk
from .pernode import PerNode

VERSION = "3.14.0-4"  # Debian bookworm's
POOL_URL = f"https://deb.debian.org/debian/pool/main/f/fuse3/libfuse3-3_{VERSION}_amd64.deb"
POOL_SHA256 = "bf535cec5e965823fd03199b4029f9e9f3952111eb12824b5d2b96c8cca1a918"
LIBRARY = "libfuse3.so.3"
SYSTEM_GLOBS = (f"/usr/lib/*/{LIBRARY}", f"/lib/*/{LIBRARY}")
SOURCE_PREFIX = "kreplica-lazy."
SOURCE_RE = re.compile(r"^kreplica-lazy\.(\d+)-([\d.]+)$")
FSTYPE = "fuse.kreplica-lazyfs"
MOUNT_TIMEOUT_S = 30.0
ANSWER_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


def _remedy() -> str:
    return (f"install Debian's fuse3 package (apt-get install fuse3) or put {LIBRARY} at "
            f"{cached_library()}")


def cached_library() -> Path:
    return cache_dir() / "libfuse3" / VERSION / LIBRARY


def ensure_library() -> Path:
    """libfuse 3: the system's, else the cache's (fetched once)."""
    system = sorted(p for g in SYSTEM_GLOBS for p in glob.glob(g))
    if system:
        return Path(system[0])
    path = cached_library()
    once.prepare(f"fetching Debian's libfuse3 {VERSION} (once, for the power-loss fault)",
                 path.parent.parent / f"{VERSION}.lock", path.exists,
                 lambda: debpkg.fetch(debpkg.DebFile(
                     package="libfuse3-3", pool_url=POOL_URL, pool_sha256=POOL_SHA256,
                     member_glob=f"*lib/*/{LIBRARY}", purpose="the power-loss fault",
                     remedy=_remedy()), path))
    return path


def check_environment() -> None:
    """Raise ``EnvironmentProblem`` unless this process can mount a FUSE filesystem."""
    if not os.path.exists("/dev/fuse"):
        raise EnvironmentProblem("the power-loss fault mounts a FUSE filesystem per node and "
                                 "needs /dev/fuse, which this machine lacks")
    if os.geteuid() != 0 and shutil.which("fusermount3") is None:
        raise EnvironmentProblem("the power-loss fault mounts a FUSE filesystem per node: "
                                 f"as uid {os.geteuid()} it needs fusermount3 (Debian: "
                                 "apt-get install fuse3), or run as root")


def mounts() -> dict[Path, tuple[str, str]]:
    """Mount point -> (source, filesystem type) of every FUSE mount."""
    return {point: (source, fstype) for point, (source, fstype, _)
            in smalldisk.mounts().items() if fstype.startswith("fuse")}


def _umount(point: Path, lazy: bool = False) -> subprocess.CompletedProcess:
    tool = "umount" if os.geteuid() == 0 else "fusermount3"
    args = [tool, *(["-l"] if lazy else []), str(point)] if tool == "umount" else \
        [tool, "-u", *(["-z"] if lazy else []), str(point)]
    return subprocess.run(args, capture_output=True, text=True, timeout=STOP_TIMEOUT_S,
                          stdin=subprocess.DEVNULL, check=False)


@dataclass
class LazyDisk:
    """One node's log dir (``mountpoint``) served from ``backing`` by a lazyfs daemon."""

    node_id: int
    backing: Path
    mountpoint: Path
    control: Path
    proc: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.control / "lazyfs.log"

    def mount(self, library: Path) -> None:
        for d in (self.backing, self.mountpoint, self.control):
            d.mkdir(parents=True, exist_ok=True)
        owner = process_identity()
        name = f"{SOURCE_PREFIX}{owner['pid']}-{owner['started']}"
        env = {**os.environ, **owner_env(str(self.control)), "FUSE_LIBRARY_PATH": str(library)}
        with open(self.log, "ab") as out:
            self.proc = Launcher.get().popen(
                [sys.executable, "-m", "pytest_kreplica.cluster.facilities.impl.lazyfs",
                 str(self.backing), str(self.mountpoint), str(self.control), name],
                env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + MOUNT_TIMEOUT_S
        while mounts().get(self.mountpoint, ("", ""))[1] != FSTYPE:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                said = self.log.read_text(errors="replace").strip().splitlines()
                raise ClusterError(
                    f"node {self.node_id}'s lazy filesystem did not mount at {self.mountpoint}"
                    f" within {MOUNT_TIMEOUT_S:.0f} s (daemon "
                    f"{'exited ' + str(self.proc.returncode) if self.proc.poll() is not None else 'running'}"  # noqa: E501
                    f"): {said[-1] if said else 'no output'}; log {self.log}")
            time.sleep(0.05)

    def ask(self, request: str, timeout: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
        """Send ``cut`` or ``sync`` to the daemon and return its answer (bounded)."""
        answer = self.control / f"{request}.json"
        answer.unlink(missing_ok=True)
        (self.control / f"{request}.request").write_text("")
        deadline = time.monotonic() + timeout
        while not answer.exists():
            if time.monotonic() > deadline or (self.proc and self.proc.poll() is not None):
                raise ClusterError(f"node {self.node_id}'s lazy filesystem did not answer "
                                   f"{request!r} within {timeout:.0f} s (expected "
                                   f"{answer}); log {self.log}")
            time.sleep(0.02)
        said = json.loads(answer.read_text())
        if "error" in said:
            raise ClusterError(f"node {self.node_id}'s lazy filesystem: {said['error']}; "
                               f"log {self.log}")
        return said

    def unmount(self) -> None:
        """Unmount (lazily when busy) and wait for the daemon; bounded."""
        if self.mountpoint in mounts() and _umount(self.mountpoint).returncode != 0:
            _umount(self.mountpoint, lazy=True)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        if self.mountpoint in mounts():
            raise ClusterError(f"node {self.node_id}'s lazy filesystem is still mounted at "
                               f"{self.mountpoint}; log {self.log}")


@dataclass
class LazyDisks(PerNode[LazyDisk]):
    """The lazy filesystems of one cluster's nodes (the process backend's ``disks``)."""

    def close(self) -> None:
        """Unmount every filesystem and stop its daemon (the nodes must have exited)."""
        self.each(LazyDisk.unmount, (ClusterError, OSError, subprocess.SubprocessError))

    def sync(self) -> None:
        """Everything written so far is durable (the format, long before any fault)."""
        for disk in self.disks.values():
            disk.ask("sync")

    def describe(self) -> dict[str, str]:
        return {str(n): f"{d.backing} served lazily at {d.mountpoint} (un-fsynced writes "
                        "are lost on a power cut)" for n, d in self.disks.items()}


def mount_all(log_dirs: dict[int, Path]) -> LazyDisks:
    """A lazy filesystem at each node's (empty) log dir, its files in ``<log dir>.backing``;
    mounts made are undone on any failure."""
    check_environment()
    library = ensure_library()
    sweep_stale()
    dirs = sorted((n, Path(d)) for n, d in log_dirs.items())
    return LazyDisks().add_each(
        ((n, LazyDisk(n, d.with_name(d.name + ".backing"), d, d.with_name(d.name + ".lazyfs")))
         for n, d in dirs), lambda disk: disk.mount(library))


def sweep_stale() -> list[Path]:
    """Unmount every lazy filesystem whose owner is dead (its daemon died with it and left
    the mount unanswered); returns the mount points freed."""
    freed = []
    for point, (source, _fstype) in mounts().items():
        match = SOURCE_RE.match(source)
        if match is None or identity_alive({"pid": int(match.group(1)),
                                            "started": float(match.group(2))}):
            continue
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            if _umount(point, lazy=True).returncode == 0:
                freed.append(point)
    return freed
