"""Prepare something once per machine under its own machine-wide lock, visibly.

Every one-time preparation (a Kafka version's jars, the broker class-data archive, the format
template, a Docker image, Spark's class-data archive) goes through ``prepare`` or ``held``:

* each preparation has its own lock file; taking a lock this process already holds (in the
  same thread) raises ``Reentered`` at once: flock is not re-entrant across descriptors, so
  a nested take would wait on itself until its timeout;
* a wait on another process's lock is reported within ``FIRST_NOTICE_S`` and then every
  ``NOTICE_EVERY_S``: what is awaited, which pid holds it and for how long;
* a holder that died releases its flock with its descriptors (the kernel does it); the next
  taker sees the dead pid in the owner file, says it takes over and starts from scratch;
* an optional preparation (an optimisation) that fails leaves a ``.failed`` marker holding
  the error, so later runs skip it for ``retry_after_s`` instead of failing again.

Progress goes through ``say`` (stderr by default; the pytest plugin points it at the
terminal), one line per step with its duration.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from .errors import EnvironmentProblem

FIRST_NOTICE_S = 2.0
NOTICE_EVERY_S = 10.0
DEFAULT_TIMEOUT_S = 1800.0
DEFAULT_RETRY_AFTER_S = 24 * 3600.0

Say = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


_say: Say = _stderr
_held: dict[str, set[int]] = {}  # lock path -> threads of this process holding it
_held_guard = threading.Lock()


class Reentered(RuntimeError):
    """A code path asked for a machine-wide lock its own thread already holds."""


def set_say(say: Say | None) -> Say:
    """Send progress lines to ``say`` (None: back to stderr); returns the previous one."""
    global _say
    previous, _say = _say, say or _stderr
    return previous


def say(line: str) -> None:
    _say(line)


def _owner_path(lock_path: Path) -> Path:
    return lock_path.with_name(lock_path.name + ".owner")


def read_owner(lock_path: Path) -> dict | None:
    """Who took ``lock_path`` last: pid, host, what, since (None if unknown)."""
    try:
        return json.loads(_owner_path(lock_path).read_text())
    except (OSError, ValueError):
        return None


def _alive(owner: dict) -> bool:
    if owner.get("host") != socket.gethostname():
        return True  # another host's pid cannot be checked; assume it lives
    try:
        import psutil  # lazy: the plugin imports this module at every pytest start

        proc = psutil.Process(int(owner["pid"]))
        return abs(proc.create_time() - float(owner.get("started", 0))) < 2.0
    except (psutil.Error, KeyError, ValueError, TypeError):
        return False


def _describe(owner: dict | None) -> str:
    if not owner:
        return "held by an unknown process"
    age = time.time() - float(owner.get("since", time.time()))
    return f"held by pid {owner.get('pid')} ({owner.get('what', '?')}) for {age:.0f} s"


@contextlib.contextmanager
def held(lock_path: Path | str, what: str, *, timeout: float = DEFAULT_TIMEOUT_S,
         blocking: bool = True) -> Iterator[bool]:
    """Hold the machine-wide lock ``lock_path`` while ``what`` is prepared.

    Yields True once held; with ``blocking=False`` yields False at once when another
    process holds it. Raises ``Reentered`` if this thread holds it already and
    ``EnvironmentProblem`` (naming the holder) after ``timeout`` seconds of waiting."""
    path = Path(lock_path).absolute()
    key = str(path)
    me = threading.get_ident()
    with _held_guard:
        if me in _held.get(key, set()):
            raise Reentered(f"{what}: this thread already holds {path} (an outer step of the "
                            "same preparation took it); a nested wait would deadlock on itself")
        _held.setdefault(key, set()).add(me)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(key, thread_local=False)
        if not _acquire(lock, path, what, timeout, blocking):
            yield False
            return
        try:
            previous = read_owner(path)
            if previous and not previous.get("released") and not _alive(previous):
                say(f"kreplica: taking over {path.name} from pid {previous.get('pid')}, which "
                    f"died while {previous.get('what', 'preparing')}; starting it again")
            _write_owner(path, what)
            yield True
        finally:
            _write_owner(path, what, released=True)
            lock.release()
    finally:
        with _held_guard:
            _held[key].discard(me)


def _acquire(lock: FileLock, path: Path, what: str, timeout: float, blocking: bool) -> bool:
    try:
        lock.acquire(timeout=0 if not blocking else min(FIRST_NOTICE_S, timeout))
        return True
    except Timeout:
        if not blocking:
            return False
    started = time.monotonic()
    while True:
        waited = time.monotonic() - started + FIRST_NOTICE_S
        owner = read_owner(path)
        if waited >= timeout:
            raise EnvironmentProblem(
                f"waited {waited:.0f} s for {what} ({path}), {_describe(owner)}; expected it "
                "within that time: stop that process or, if none runs, delete the lock file")
        say(f"kreplica: waiting for {what}, {_describe(owner)} ({waited:.0f} s so far)")
        try:
            lock.acquire(timeout=min(NOTICE_EVERY_S, timeout - waited))
            return True
        except Timeout:
            continue


def _write_owner(path: Path, what: str, released: bool = False) -> None:
    import psutil  # lazy: see above

    me = psutil.Process()
    doc = {"pid": os.getpid(), "host": socket.gethostname(), "what": what,
           "since": time.time(), "started": me.create_time(), "released": released}
    owner = _owner_path(path)
    tmp = owner.with_name(f"{owner.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps(doc))
        tmp.replace(owner)


def prepare(what: str, lock_path: Path | str, is_done: Callable[[], bool],
            build: Callable[[], object], *, failed_marker: Path | None = None,
            retry_after_s: float = DEFAULT_RETRY_AFTER_S, timeout: float = DEFAULT_TIMEOUT_S,
            detail: Callable[[], str] | None = None) -> bool:
    """Run ``build`` once per machine unless ``is_done()``; True when done afterwards.

    Prints ``kreplica: <what>… <seconds> s`` around the build (``detail()`` is added to the
    line when given). Without ``failed_marker`` a failing build raises; with one, the error is
    written there, reported in one line, and False returned (a skipped optimisation) until
    the marker is ``retry_after_s`` old."""
    if failed_marker is not None and failed_marker.exists() \
            and time.time() - failed_marker.stat().st_mtime > retry_after_s:
        failed_marker.unlink(missing_ok=True)
    if is_done():
        return True
    if failed_marker is not None and failed_marker.exists():
        return False
    with held(lock_path, what, timeout=timeout):
        if is_done():
            return True
        if failed_marker is not None and failed_marker.exists():
            return False
        say(f"kreplica: {what}…")
        started = time.monotonic()
        try:
            build()
        except Exception as exc:
            took = time.monotonic() - started
            if failed_marker is None:
                say(f"kreplica: {what} failed after {took:.0f} s")
                raise
            failed_marker.parent.mkdir(parents=True, exist_ok=True)
            failed_marker.write_text(f"{type(exc).__name__}: {exc}\n")
            say(f"kreplica: {what} failed after {took:.0f} s ({exc}); going on without it, "
                f"retried after {retry_after_s / 3600:.0f} h or when {failed_marker} is deleted")
            return False
        took = time.monotonic() - started
        extra = f" ({detail()})" if detail is not None else ""
        say(f"kreplica: {what}… {took:.0f} s{extra}")
        return is_done()
