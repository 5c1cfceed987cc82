"""A FUSE filesystem that forgets what was not fsynced when asked to (the power-loss fault).

Kafka acknowledges records that sit in the page cache only; Jepsen's lazyfs showed what a
power cut then does to such systems. This is the same idea for the files Kafka writes, run
as its own process
(``python -m pytest_kreplica.cluster.facilities.impl.lazyfs BACKING MOUNT CONTROL NAME``)
through mfusepy and libfuse 3:

* every operation passes through to the backing directory at once (reads see every write,
  as from a page cache);
* for each file written since its last ``fsync`` it remembers the length that was durable
  then (0 for a file created since); ``fsync`` makes the file durable again;
* a **cut** (a request file in ``CONTROL``) truncates every such file to its durable length,
  which is what a power loss does to the appends a log makes, and answers with what it
  dropped (files, bytes, examples) in ``cut.json``; a **sync** request marks everything
  durable (after the cluster's format, as long before any fault).

What it does not model: overwrites inside the durable length are kept (Kafka's segments are
append-only; its indexes are rebuilt on recovery), and the creation, rename or removal of a
file is durable at once (Kafka fsyncs its directories on those anyway).

The pure bookkeeping is :class:`Durability`; the FUSE side is three groups of pass-through
operations (metadata, names, contents) that ``_ops_class`` joins with mfusepy's base class.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

CONTROL_POLL_S = 0.05
CUT, SYNC = "cut", "sync"
MAX_EXAMPLES = 12


class Durability:
    """What a power cut would take: per file, the length that was durable at its last fsync."""

    def __init__(self) -> None:
        self.durable: dict[str, int] = {}  # files written since their last fsync
        self.writes = 0  # write and truncate operations seen since the mount
        self.lock = threading.Lock()

    def before_change(self, path: str, size_now: int) -> None:
        """A write or truncate is about to change ``path``, now ``size_now`` bytes long."""
        with self.lock:
            self.writes += 1
            self.durable.setdefault(path, size_now)

    def truncated(self, path: str, length: int) -> None:
        """A truncation below the durable length cannot be undone by the cut."""
        with self.lock:
            if path in self.durable:
                self.durable[path] = min(self.durable[path], length)

    def created(self, path: str) -> None:
        with self.lock:
            self.writes += 1
            self.durable[path] = 0

    def synced(self, path: str) -> None:
        with self.lock:
            self.durable.pop(path, None)

    def removed(self, path: str) -> None:
        with self.lock:
            for key in [k for k in self.durable if k == path or k.startswith(path + "/")]:
                del self.durable[key]

    def renamed(self, old: str, new: str) -> None:
        """Move the entries of ``old`` (a file, or a directory's files) to ``new``."""
        with self.lock:
            for key in [k for k in self.durable if k == new or k.startswith(new + "/")]:
                del self.durable[key]
            for key in [k for k in self.durable if k == old or k.startswith(old + "/")]:
                self.durable[new + key[len(old):]] = self.durable.pop(key)

    def cut(self, root: str) -> dict[str, Any]:
        """Truncate every file to its durable length; what was dropped, then all durable."""
        dropped: list[tuple[str, int, int]] = []
        with self.lock:
            for path, keep in sorted(self.durable.items()):
                full = os.path.join(root, path.lstrip("/"))
                try:
                    size = os.stat(full).st_size
                    if size > keep:
                        os.truncate(full, keep)
                        dropped.append((path, size, keep))
                except FileNotFoundError:
                    continue
            tracked, writes = len(self.durable), self.writes
            self.durable.clear()
        dropped.sort(key=lambda d: (not d[0].endswith(".log"), d[0]))  # segments first
        return {"files": len(dropped), "bytes": sum(s - k for _, s, k in dropped),
                "log_bytes": sum(s - k for p, s, k in dropped if p.endswith(".log")),
                "tracked": tracked, "writes": writes,
                # the directories (Kafka: topic-partition) whose segment files lost bytes
                "logs": sorted({p.strip("/").split("/")[0] for p, _, _ in dropped
                                if p.endswith(".log") and p.strip("/").count("/") == 1}),
                "examples": [{"file": p.lstrip("/"), "size": s, "kept": k}
                             for p, s, k in dropped[:MAX_EXAMPLES]]}

    def sync_all(self) -> dict[str, Any]:
        with self.lock:
            tracked = len(self.durable)
            self.durable.clear()
        return {"tracked": tracked, "writes": self.writes}


class _Backing:
    """The backing directory and the bookkeeping every group of operations below shares
    (plain classes, so that mfusepy is imported only by ``_ops_class``)."""

    denied: type[OSError] = PermissionError  # mfusepy's FuseOSError, set by _ops_class

    def __init__(self, root: str, durability: Durability):
        self.root, self.d = root, durability

    def _p(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))


class _Metadata(_Backing):
    """Attributes, permissions and listings, passed through to the backing files."""

    def getattr(self, path, fh=None):
        st = os.fstat(fh) if fh is not None else os.lstat(self._p(path))
        keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_ino", "st_dev",
                "st_blocks", "st_blksize")
        out = {k: getattr(st, k) for k in keys}
        out.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns,
                   st_ctime=st.st_ctime_ns)
        return out

    def access(self, path, amode):
        if not os.access(self._p(path), amode):
            raise self.denied(errno.EACCES)
        return 0

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self._p(path))]

    def readlink(self, path):
        return os.readlink(self._p(path))

    def statfs(self, path):
        st = os.statvfs(self._p(path))
        return {k: getattr(st, k) for k in (
            "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
            "f_flag", "f_frsize", "f_namemax")}

    def chmod(self, path, mode):
        os.chmod(self._p(path), mode)
        return 0

    def chown(self, path, uid, gid):
        os.chown(self._p(path), uid, gid)
        return 0

    def utimens(self, path, times=None):
        os.utime(self._p(path), ns=times) if times else os.utime(self._p(path))
        return 0


class _Names(_Backing):
    """Creating, linking, renaming and removing names: durable at once (Kafka fsyncs its
    directories on those anyway), so only the bookkeeping of removed and renamed files
    follows."""

    def mkdir(self, path, mode):
        os.mkdir(self._p(path), mode)
        return 0

    def rmdir(self, path):
        os.rmdir(self._p(path))
        self.d.removed(path)
        return 0

    def unlink(self, path):
        os.unlink(self._p(path))
        self.d.removed(path)
        return 0

    def symlink(self, target, source):
        os.symlink(source, self._p(target))
        return 0

    def link(self, target, source):
        os.link(self._p(source), self._p(target))
        return 0

    def rename(self, old, new):
        os.rename(self._p(old), self._p(new))
        self.d.renamed(old, new)
        return 0


class _Contents(_Backing):
    """Opening, reading, writing, truncating and syncing file contents: every change is
    told to :class:`Durability` first."""

    def create(self, path, mode, fi=None):
        fd = os.open(self._p(path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)
        self.d.created(path)
        return fd

    def open(self, path, flags):
        full = self._p(path)
        if flags & os.O_TRUNC:
            self.d.before_change(path, os.stat(full).st_size)
            self.d.truncated(path, 0)
        return os.open(full, flags & ~os.O_APPEND)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        self.d.before_change(path, os.fstat(fh).st_size)
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        full = self._p(path)
        self.d.before_change(path, os.fstat(fh).st_size if fh else os.stat(full).st_size)
        os.ftruncate(fh, length) if fh else os.truncate(full, length)
        self.d.truncated(path, length)
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        os.close(fh)
        return 0

    def fsync(self, path, datasync, fh):
        os.fdatasync(fh) if datasync else os.fsync(fh)
        self.d.synced(path)
        return 0

    def fsyncdir(self, path, datasync, fh):
        return 0


def _ops_class() -> type:
    """The FUSE operations, built when mfusepy (which loads libfuse) can be imported."""
    import mfusepy as fuse

    class LazyOps(_Metadata, _Names, _Contents, fuse.Operations):
        """Pass-through to ``root``, telling :class:`Durability` about every change."""

        use_ns = True
        denied = fuse.FuseOSError

    return LazyOps


def serve_control(control: Path, root: str, durability: Durability) -> None:
    """Answer ``cut`` and ``sync`` requests (``<name>.request`` files) with ``<name>.json``;
    polled, as libfuse's loop holds the main thread (a Python signal handler would wait)."""
    while True:
        for name in (CUT, SYNC):
            request = control / f"{name}.request"
            if not request.exists():
                continue
            try:
                answer = durability.cut(root) if name == CUT else durability.sync_all()
                if name == SYNC:
                    os.sync()
            except OSError as exc:  # answered, so the waiting side says what went wrong
                answer = {"error": f"{name} failed: {exc}"}
            tmp = control / f".{name}.json.tmp"
            tmp.write_text(json.dumps({**answer, "at": time.time()}))
            tmp.replace(control / f"{name}.json")
            request.unlink(missing_ok=True)
        time.sleep(CONTROL_POLL_S)


def main(argv: list[str]) -> int:
    backing, mount, control, name = argv
    import mfusepy as fuse

    root = os.path.abspath(backing)  # libfuse changes the working directory
    durability = Durability()
    threading.Thread(target=serve_control, args=(Path(control), root, durability),
                     name="lazyfs-control", daemon=True).start()
    (Path(control) / "serving").write_text(str(os.getpid()))
    fuse.FUSE(_ops_class()(root, durability), mount, foreground=True, fsname=name,
              subtype="kreplica-lazyfs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
