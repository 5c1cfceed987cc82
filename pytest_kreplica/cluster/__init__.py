"""Cluster backends behind one API (see ``base``); heavy modules load lazily."""

from __future__ import annotations

from .backends import BACKENDS, backend_class, backend_names, backends, create_cluster
from .base import Cluster, ClusterSpec, Node, NodeState, PartitionState, TopicSpec
from .facilities import sweep_leftovers

__all__ = ["Cluster", "ClusterSpec", "Node", "NodeState", "PartitionState", "TopicSpec",
           "BACKENDS", "backend_class", "backend_names", "backends", "create_cluster",
           "reap_orphans"]


def reap_orphans() -> list[int]:
    """Kill broker JVMs left by dead sessions and sweep what their node facilities left
    (mounts, proxies); the plugin calls this at session start."""
    from .reaper import reap_orphans as reap  # lazy: psutil stays out of the plugin's import

    pids = reap()
    sweep_leftovers()
    return pids
