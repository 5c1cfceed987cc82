"""The remote store of a tiered cluster made unwritable for a while, and given back.

LocalTieredStorage writes each uploaded segment as new files in its partition's folder below
the store root (``cluster/facilities/impl/tiered.py``). The suite runs as root, which
``chmod`` does not stop; the immutable attribute (``chattr +i``) does: no entry can be created
in, removed from or renamed in an immutable directory, by root neither (only setting the
attribute needs ``CAP_LINUX_IMMUTABLE``). Frozen are the store root and every partition folder
in it, so an upload fails at its first file, for a partition the store has seen and for a new
one; the segments already uploaded stay readable (a read-only object store, not a missing
one).

A frozen store also cannot be deleted, so each freeze leaves a note in the cache naming the
store and the process that froze it: ``thaw`` removes it, and the facility's sweep (at every
cluster start) thaws the stores whose freezer died without thawing them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ....cache import cache_dir
from ....errors import ClusterError, EnvironmentProblem
from ...ports import identity_alive, process_identity

NOTES = "frozen-stores"  # below the cache: one note per frozen store
CHATTR_TIMEOUT_S = 30.0


def _folders(root: Path) -> list[Path]:
    return [root, *sorted(p for p in root.iterdir() if p.is_dir())]


def _note(root: Path) -> Path:
    return cache_dir() / NOTES / (str(root).strip("/").replace("/", "_") + ".json")


def _chattr(flag: str, paths: list[Path]) -> None:
    try:
        done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True,
                              text=True, timeout=CHATTR_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise EnvironmentProblem("the remote store fault needs chattr (e2fsprogs); it is "
                                 "not installed") from None
    if done.returncode != 0:
        raise ClusterError(f"chattr {flag} on the remote store {paths[0]} failed: "
                           f"{done.stderr.strip()[:300]} (it needs an ext2/3/4, XFS or btrfs "
                           "filesystem and CAP_LINUX_IMMUTABLE)")


def write_refused(root: Path) -> str | None:
    """The error a new file in the store root gets now (None: it was written)."""
    probe = root / "kreplica-probe"
    try:
        probe.write_bytes(b"probe")
    except OSError as exc:
        return exc.strerror or str(exc)
    probe.unlink(missing_ok=True)
    return None


def freeze(root: Path) -> int:
    """Make the store unwritable; the number of folders frozen. The note comes first, so
    that a freezer killed in between still has its store thawed by the sweep."""
    note = _note(root)
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(json.dumps({"root": str(root), "owner": process_identity()}))
    folders = _folders(root)
    _chattr("+i", folders)
    return len(folders)


def is_frozen(root: Path) -> bool:
    """Whether a freeze of the store was taken and not thawed yet."""
    return _note(root).exists()


def thaw(root: Path) -> None:
    """Give the store back (every folder below it: a freeze may have been taken in between
    a partition folder's creation and its listing); idempotent."""
    if root.is_dir():
        _chattr("-i", _folders(root))
    _note(root).unlink(missing_ok=True)


def sweep_stale() -> list[str]:
    """Thaw every store frozen by a process that is gone; the roots thawed."""
    thawed = []
    for note in sorted((cache_dir() / NOTES).glob("*.json")):
        try:
            info = json.loads(note.read_text())
        except (OSError, ValueError):
            continue
        if identity_alive(info.get("owner") or {}):
            continue
        try:
            thaw(Path(info["root"]))
        except (ClusterError, EnvironmentProblem, KeyError):
            continue
        thawed.append(info["root"])
    return thawed
