"""Debian's libfaketime preloaded into the node JVMs of a cluster whose cases skew clocks.

Each node starts with ``LD_PRELOAD`` naming the library and an offset file of its own holding
``+0``; the clock faults (``faults/clock.py``) write another offset there while the node
runs. What libfaketime's README prescribes for a JVM and a file changed at run time:

* ``FAKETIME_DONT_FAKE_MONOTONIC=1``: without it ``java`` "usually hangs"; with it only the
  wall clock (``System.currentTimeMillis``) moves, ``System.nanoTime`` stays true;
* ``FAKETIME_FORCE_MONOTONIC_FIX=0``: the "monotonic fix" libfaketime turns on for the
  glibc versions it distrusts (bookworm's 2.36 included) takes a lock on every clock call;
  measured on the loaded 2-core machine (a JVM loop of 1 M calls each): ``nanoTime`` 50-400
  ns plain, 540-1450 ns preloaded with the fix, 120-140 ns without it; ``currentTimeMillis``
  70-130 / 1150-3150 / 240-300 ns. With the fix a 3-node cluster did not get ready in 114 s;
  without it the monotonic clock (not faked) needs no fix, and ``Thread.sleep`` still wakes;
* ``FAKETIME_TIMESTAMP_FILE`` with ``FAKETIME_CACHE_DURATION=1``: the file is read again at
  most a second after it changed. ``FAKETIME_NO_CACHE=1`` would read it on every clock call
  (a loop of 2 M ``currentTimeMillis`` + ``nanoTime`` pairs did not finish in 60 s).

libfaketime makes a semaphore and a shared-memory object per process (``/dev/shm``, named
after the pid) and removes them only at a clean exit; a SIGKILLed JVM leaves them behind,
and a later process with the same pid would fail on them. ``sweep`` removes those of dead
processes (what the README asks for "occasionally"): at every clock cluster's start and
close, so a killed session's are gone when the next one starts.

The library is obtained once per machine without root: the system's copy when the
``faketime`` package is installed, else ``apt-get download libfaketime`` (Debian's signed
package lists) or, without usable lists, the pinned package from Debian's pool checked
against its sha256; ``dpkg-deb -x`` unpacks it into the kreplica cache (``once``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .... import once
from ....cache import cache_dir
from . import debpkg

VERSION = "0.9.10-2.1"  # Debian bookworm's
POOL_URL = ("https://deb.debian.org/debian/pool/main/f/faketime/"
            f"libfaketime_{VERSION}_amd64.deb")
POOL_SHA256 = "b09481e7690680966005330c3f907bba4b5eefc35e1faaea4783cc55655d1150"
LIBRARY = "libfaketime.so.1"
SYSTEM_GLOB = f"/usr/lib/*/faketime/{LIBRARY}"  # Debian's faketime package, any arch
SHM_DIR = Path("/dev/shm")
SHM_NAME = re.compile(r"^(?:faketime_shm_|sem\.faketime_sem_)(\d+)$")  # libfaketime's, by pid
OFFSET_FILE = "faketime.rc"  # in the node's home: "+<seconds>" or "-<seconds>"


def cached_library() -> Path:
    return cache_dir() / "libfaketime" / VERSION / LIBRARY


def ensure_library() -> Path:
    """The libfaketime shared object: the system's, else the cache's (made once)."""
    system = sorted(glob.glob(SYSTEM_GLOB))
    if system:
        return Path(system[0])
    path = cached_library()
    once.prepare(f"fetching Debian's libfaketime {VERSION} (once, for the clock faults)",
                 path.parent.parent / f"{VERSION}.lock", path.exists,
                 lambda: _fetch_and_unpack(path))
    return path


def _remedy() -> str:
    return ("install Debian's faketime package (apt-get install faketime) or put "
            f"{LIBRARY} at {cached_library()}")


def _fetch_and_unpack(target: Path) -> None:
    debpkg.fetch(debpkg.DebFile(
        package="libfaketime", pool_url=POOL_URL, pool_sha256=POOL_SHA256,
        member_glob=f"usr/lib/*/faketime/{LIBRARY}", purpose="the clock faults",
        remedy=_remedy()), target)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not: its libfaketime is gone)."""
    import psutil  # lazy: the plugin imports the cluster package at start

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # cannot tell: keep its objects
        return True


def sweep() -> list[Path]:
    """Remove libfaketime's per-process objects whose process is gone; returns them."""
    gone = []
    for path in SHM_DIR.glob("*faketime_*"):
        match = SHM_NAME.match(path.name)
        if match and not _running(int(match.group(1))):
            with contextlib.suppress(OSError):
                path.unlink()
                gone.append(path)
    return gone


@dataclass(frozen=True)
class Clocks:
    """The preload of one cluster: the library and each node's offset file."""

    library: Path
    homes: dict[int, Path]  # node id -> its home directory (holds the offset file)

    @classmethod
    def plan(cls, homes: dict[int, Path]) -> Clocks:
        clocks = cls(ensure_library(), dict(homes))
        sweep()  # a killed session's leftovers
        for node in clocks.homes:
            clocks.set_offset(node, 0.0)
        return clocks

    def offset_file(self, node: int) -> Path:
        return self.homes[node] / OFFSET_FILE

    def set_offset(self, node: int, seconds: float) -> None:
        """What the node's clock reads from now on (within the one-second cache): the
        true time plus ``seconds``. Written atomically so a read never sees half a line."""
        path = self.offset_file(node)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(f"{seconds:+.3f}\n")
        tmp.replace(path)

    def offset(self, node: int) -> float:
        return float(self.offset_file(node).read_text().strip())

    def preload(self, node: int) -> dict[str, str]:
        """What the node JVM's environment adds to this process's: the preload (after any
        ``LD_PRELOAD`` of this process's) and libfaketime's settings."""
        preload = " ".join(p for p in (str(self.library), os.environ.get("LD_PRELOAD")) if p)
        return preload_env(preload, str(self.offset_file(node)))

    def env(self, node: int) -> dict[str, str]:
        """The node JVM's environment: this process's plus the preload."""
        return {**os.environ, **self.preload(node)}

    def container_env(self, library_dir: str, home: str) -> dict[str, str]:
        """The preload of a node in a container that has the library's directory at
        ``library_dir`` and its home (the offset file's directory) at ``home``."""
        return preload_env(f"{library_dir}/{self.library.name}", f"{home}/{OFFSET_FILE}")

    def loaded(self, pid: int) -> bool:
        """Whether the process ``pid`` has the library mapped (the preload took)."""
        try:
            return self.library.name in Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            return False

    def close(self) -> None:
        """After the nodes stopped: their libfaketime objects (a SIGKILLed one keeps its)."""
        sweep()

    def describe(self) -> dict[str, object]:
        """For run.json: the library and each node's offset now."""
        return {"library": str(self.library),
                "offsets_s": {str(n): self.offset(n) for n in sorted(self.homes)}}


def preload_env(preload: str, offset_file: str) -> dict[str, str]:
    """libfaketime's settings for a JVM (module docstring)."""
    return {"LD_PRELOAD": preload, "FAKETIME_TIMESTAMP_FILE": offset_file,
            "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_FORCE_MONOTONIC_FIX": "0"}
