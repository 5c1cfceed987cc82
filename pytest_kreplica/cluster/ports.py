"""Free TCP ports that no other worker or session on this machine can pick at the same time.

A port is ours once we exclusively create its sentinel file in one machine-wide directory
(``$KREPLICA_PORT_DIR`` or ``<tmp>/kreplica-ports``); ``port-for`` proposes candidates that
nothing listens on. A sentinel records its owner (pid and start time); one whose owner is
dead is reclaimed, so a SIGKILLed session does not leak ports forever.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import tempfile
from pathlib import Path

import port_for
import psutil

from ..errors import ClusterError

MAX_ATTEMPTS = 200


def port_dir() -> Path:
    env = os.environ.get("KREPLICA_PORT_DIR")
    path = Path(env) if env else Path(tempfile.gettempdir()) / "kreplica-ports"
    path.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        path.chmod(0o1777)  # shared by every user's sessions, like /tmp
    return path


def process_identity(pid: int | None = None) -> dict[str, float | int]:
    """pid plus start time: a pid alone may be reused by an unrelated process."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "started": round(psutil.Process(pid).create_time(), 2)}


def identity_alive(identity: dict) -> bool:
    try:
        proc = psutil.Process(int(identity["pid"]))
        return abs(proc.create_time() - float(identity["started"])) < 0.05 and \
            proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, KeyError, ValueError, TypeError):
        return False
    except psutil.AccessDenied:
        return True


@functools.lru_cache(maxsize=1)
def _candidates() -> frozenset[int]:
    """port-for's unassigned, non-ephemeral ports (computed once: it takes ~0.1-0.3 s)."""
    return frozenset(port_for.available_good_ports())


def _can_bind(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _sentinel(port: int) -> Path:
    return port_dir() / str(port)


def _try_claim(port: int, owner: dict) -> bool:
    path = _sentinel(port)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        if _reclaim_if_stale(path):
            return _try_claim(port, owner)
        return False
    with os.fdopen(fd, "w") as fh:
        json.dump(owner, fh)
    return True


def _reclaim_if_stale(path: Path) -> bool:
    """Remove a sentinel whose owner is dead; only one of several racing reclaimers wins
    (the atomic rename), and a sentinel still being written is left alone."""
    try:
        owner = json.loads(path.read_text())
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    if identity_alive(owner):
        return False
    grave = path.with_name(f".{path.name}.{os.getpid()}.stale")
    try:
        path.rename(grave)
    except FileNotFoundError:
        return True
    grave.unlink(missing_ok=True)
    return True


def claim_ports(count: int, host: str = "127.0.0.1", owner: dict | None = None) -> list[int]:
    """Claim ``count`` distinct free ports; raise ``ClusterError`` listing what was tried."""
    owner = owner or process_identity()
    claimed: list[int] = []
    tried: list[int] = []
    while len(claimed) < count:
        if len(tried) >= MAX_ATTEMPTS:
            release_ports(claimed)
            raise ClusterError(f"could not claim {count} free ports on {host} after trying "
                               f"{len(tried)} ({tried[:20]}...); sentinels in {port_dir()}")
        try:
            port = port_for.select_random(set(_candidates()),
                                          exclude_ports=set(claimed) | set(tried))
        except port_for.PortForException:
            continue
        tried.append(port)
        if _try_claim(port, owner):
            if _can_bind(port, host):
                claimed.append(port)
            else:  # something listens there without a sentinel: leave it
                _sentinel(port).unlink(missing_ok=True)
    return claimed


def reassign_ports(ports: list[int], owner: dict) -> None:
    """Hand claimed ports to another owner (a detached cluster's JVM outlives us)."""
    for port in ports:
        path = _sentinel(port)
        tmp = path.with_name(f".{port}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(owner))
        tmp.replace(path)


def release_ports(ports: list[int]) -> None:
    for port in ports:
        _sentinel(port).unlink(missing_ok=True)
