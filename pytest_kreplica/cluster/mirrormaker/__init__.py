"""MirrorMaker 2 as a component of a two-cluster run: its configuration (``config``), the
local JVM (``process.MirrorMaker``) and the container between two docker clusters
(``docker.DockerMirrorMaker``), one interface; ``create_mirror_maker`` picks by backend."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..docker.cluster import DockerCluster
from .config import NODE_NAME, POLICIES, ROLE, mirrored_name, mm2_properties, render_properties
from .docker import DockerMirrorMaker
from .process import KILL_WAIT_S, START_TIMEOUT_S, STOP_TIMEOUT_S, MirrorMaker

if TYPE_CHECKING:
    from ..base import Cluster

__all__ = ["KILL_WAIT_S", "NODE_NAME", "POLICIES", "ROLE", "START_TIMEOUT_S", "STOP_TIMEOUT_S",
           "DockerMirrorMaker", "MirrorMaker", "create_mirror_maker", "mirrored_name",
           "mm2_properties", "render_properties"]


def create_mirror_maker(source: Cluster, target: Cluster, topics: list[str],
                        workdir: Path | str, **kwargs: Any) -> MirrorMaker:
    """The MirrorMaker 2 for the clusters' backend: a container joined to both networks when
    both clusters are docker clusters, else a local JVM (which reaches any cluster through
    its host listeners). Same interface either way."""
    if isinstance(source, DockerCluster) and isinstance(target, DockerCluster):
        return DockerMirrorMaker(source, target, topics, workdir, **kwargs)
    return MirrorMaker(source, target, topics, workdir, **kwargs)
