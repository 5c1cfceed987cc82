"""A watcher that removes a session's containers and networks as soon as the session is gone.

Containers are not children of the session, so the parent-death signal that ends the process
backend's JVMs does not reach them, and a SIGKILLed session's containers would run on until
the next start's sweep. The first docker cluster of a session starts one watcher (a process
of its own session, so a signal to the test run's process group does not end it): it polls
the owner, and once the owner is dead it removes what carries the owner's label and exits.

Run as ``python -m pytest_kreplica.cluster.docker.watch OWNER``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from ..owner import owner_alive
from .owner import remove_owned

POLL_S = 0.5
_watched: set[str] = set()


def ensure_watcher(owner: str) -> None:
    """Start the watcher of ``owner`` once per process."""
    if owner in _watched:
        return
    subprocess.Popen([sys.executable, "-m", __name__, owner], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, env=dict(os.environ), close_fds=True)
    _watched.add(owner)


def watch(owner: str, poll_s: float = POLL_S) -> list[str]:
    """Wait (unbounded: as long as the owner lives) for the owner to die, then remove what
    it left; returns the names removed."""
    import docker

    while owner_alive(owner):
        time.sleep(poll_s)
    try:
        client = docker.from_env()
    except docker.errors.DockerException:
        return []  # no engine: nothing of ours can run on it
    try:
        return remove_owned(client, owner)
    finally:
        client.close()


if __name__ == "__main__":  # pragma: no cover - a process of its own
    watch(sys.argv[1])
