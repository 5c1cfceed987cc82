"""Find and kill broker JVMs whose owning session died (the last line of defence after
the parent-death signal): every JVM we start carries ``-Dkreplica.owner=<pid>:<start>``;
a broker that is not a JVM (Tansu, started detached through its own script so that a
fault can restart it) carries the same token in its environment, ``KREPLICA_OWNER``.

JVMs whose owner is alive are never touched: other sessions run clusters concurrently.
Detached clusters (``kreplica cluster up --detach``) carry ``-Dkreplica.owner=detached``
and are stopped only by ``kreplica cluster down``.
"""

from __future__ import annotations

import contextlib
import os
import signal

import psutil

from .owner import (
    DETACHED,
    OWNER_ENV,
    OWNER_PROPERTY,
    WORKDIR_ENV,
    WORKDIR_PROPERTY,
    owner_alive,
    owner_env,
    owner_flags,
    owner_token,
)

#: the owner markers (``owner.py``) are read from here too, beside the reaper that acts on them
__all__ = ["DETACHED", "OWNER_ENV", "OWNER_PROPERTY", "WORKDIR_ENV", "WORKDIR_PROPERTY",
           "kill_process_tree", "marked_processes", "owner_alive", "owner_env", "owner_flags",
           "owner_token", "reap_orphans"]


def _marks(info: dict) -> tuple[str | None, str | None]:
    """(owner token, cluster directory) of a process, from its JVM flags or environment."""
    cmdline = info.get("cmdline") or []
    owner = _property(cmdline, OWNER_PROPERTY)
    if owner is not None:
        return owner, _property(cmdline, WORKDIR_PROPERTY)
    env = info.get("environ") or {}
    return env.get(OWNER_ENV), env.get(WORKDIR_ENV)


def _property(cmdline: list[str], name: str) -> str | None:
    prefix = f"-D{name}="
    for arg in cmdline:
        if arg.startswith(prefix):
            return arg[len(prefix):]
    return None


def marked_processes(workdir: str | None = None) -> list[psutil.Process]:
    """Every live process carrying our owner marker (optionally: of one cluster dir)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status", "environ"]):
        if proc.info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        owner, where = _marks(proc.info)
        if owner is None or (workdir is not None and where != str(workdir)):
            continue
        found.append(proc)
    return found


def kill_process_tree(proc: psutil.Process) -> None:
    """SIGKILL a node: its whole process group when it leads one, else the process."""
    with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()


def reap_orphans(timeout: float = 10.0) -> list[int]:
    """Kill marked processes whose owner process is dead; return the JVMs' pids.

    The plugin calls this at session start; every cluster start calls it too, each beside
    ``facilities.sweep_leftovers`` (the mounts, proxies and clock files such an owner left).
    """
    orphans = []
    for proc in marked_processes():
        token = _marks(proc.info)[0] or DETACHED
        if not owner_alive(token):
            orphans.append(proc)
    for proc in orphans:
        kill_process_tree(proc)
    psutil.wait_procs(orphans, timeout=timeout)
    return [p.pid for p in orphans]
