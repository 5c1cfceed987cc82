"""Who owns a docker container or network: labels naming the owning session (pid and start
time), and the sweep that removes what dead owners left, never what a live owner runs."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import reaper

if TYPE_CHECKING:
    import docker

LABEL_OWNER = "org.kreplica.owner"  # reaper.owner_token(): "<pid>:<start time>"
LABEL_CLUSTER = "org.kreplica.cluster"
LABEL_NODE = "org.kreplica.node"


def sweep(client: docker.DockerClient) -> list[str]:
    """Remove our containers and networks whose owner is dead; return their names."""
    return _remove(client, lambda owner: not reaper.owner_alive(owner))


def remove_owned(client: docker.DockerClient, owner: str) -> list[str]:
    """Remove the containers and networks of one owner (``reaper.owner_token()``)."""
    return _remove(client, lambda label: label == owner)


def _remove(client: docker.DockerClient, doomed: Callable[[str], bool]) -> list[str]:
    import docker

    removed: list[str] = []
    # ignore_removed: another session (or this owner's watcher) may remove a container
    # between the list and the inspect the SDK does per container
    for container in client.containers.list(all=True, filters={"label": LABEL_OWNER},
                                            ignore_removed=True):
        if doomed(container.labels.get(LABEL_OWNER, "")):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)
                removed.append(container.name)
    for network in client.networks.list(filters={"label": LABEL_OWNER}):
        labels = network.attrs.get("Labels") or {}
        if doomed(labels.get(LABEL_OWNER, "")):
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                network.remove()
                removed.append(network.name)
    return removed
