"""The owner marker every process we start carries, so the reaper (``reaper.py``) can tell a
dead session's processes from a live one's: ``-Dkreplica.owner=<pid>:<start time>`` on a
JVM, ``KREPLICA_OWNER`` in the environment of a process that is not one.

Below the reaper and every module that starts a marked process (the lazy filesystem's
daemon among them), so the reaper can import those modules to sweep what they leave.
"""

from __future__ import annotations

from .ports import identity_alive, process_identity

OWNER_PROPERTY = "kreplica.owner"
WORKDIR_PROPERTY = "kreplica.workdir"
DETACHED = "detached"
OWNER_ENV = "KREPLICA_OWNER"  # the markers of a process that is not a JVM
WORKDIR_ENV = "KREPLICA_WORKDIR"


def owner_token(pid: int | None = None) -> str:
    ident = process_identity(pid)
    return f"{ident['pid']}:{ident['started']}"


def owner_flags(workdir: str, detached: bool = False) -> list[str]:
    """JVM flags that mark a process as ours (owner and cluster directory)."""
    owner = DETACHED if detached else owner_token()
    return [f"-D{OWNER_PROPERTY}={owner}", f"-D{WORKDIR_PROPERTY}={workdir}"]


def owner_env(workdir: str) -> dict[str, str]:
    """Environment that marks a non-JVM process as ours (owner and cluster directory)."""
    return {OWNER_ENV: owner_token(), WORKDIR_ENV: str(workdir)}


def owner_alive(token: str) -> bool:
    if token == DETACHED:
        return True
    pid, _, started = token.partition(":")
    try:
        return identity_alive({"pid": int(pid), "started": float(started)})
    except ValueError:
        return True  # not a token we wrote: leave it alone
