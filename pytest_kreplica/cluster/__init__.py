"""Cluster backends behind one API (see ``base``); heavy modules load lazily."""

from __future__ import annotations

from pathlib import Path

from .base import Cluster, ClusterSpec, Node, NodeState, PartitionState, TopicSpec

__all__ = ["Cluster", "ClusterSpec", "Node", "NodeState", "PartitionState", "TopicSpec",
           "BACKENDS", "create_cluster", "reap_orphans"]

BACKENDS = ("process", "docker")


def create_cluster(spec: ClusterSpec, workdir: Path) -> Cluster:
    """Build (not start) a cluster of ``spec.backend`` whose files live under ``workdir``."""
    if spec.backend == "process":
        from .process import ProcessCluster

        return ProcessCluster(spec, workdir)
    if spec.backend == "docker":
        from .docker import DockerCluster

        return DockerCluster(spec, workdir)
    from ..errors import InputError

    raise InputError(f"backend {spec.backend!r} is unknown; allowed: {', '.join(BACKENDS)}")


def reap_orphans() -> list[int]:
    """Kill broker JVMs left by dead sessions (the plugin calls this at session start)."""
    from .reaper import reap_orphans as reap

    return reap()
