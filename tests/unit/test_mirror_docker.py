"""Pure logic of MirrorMaker 2 on the docker backend (no engine): the factory picks the
container between two docker clusters and the local JVM otherwise, a container needs docker
clusters on both sides, and its configuration bootstraps on the in-network listeners."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kreplica.cluster import ClusterSpec
from pytest_kreplica.cluster.base import Node
from pytest_kreplica.cluster.docker.cluster import DockerCluster
from pytest_kreplica.cluster.mirrormaker import DockerMirrorMaker, MirrorMaker, create_mirror_maker
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.errors import InputError


def _docker(tmp_path: Path, role: str, brokers: int = 1) -> DockerCluster:
    cluster = DockerCluster(ClusterSpec(brokers=brokers, backend="docker", role=role),
                            tmp_path / role)
    cluster._nodes = [Node(i, "127.0.0.1", 40000 + i, 9093, tmp_path / f"d{i}",
                           tmp_path / f"l{i}") for i in range(1, brokers + 1)]
    return cluster


def test_factory_picks_the_container_only_between_docker_clusters(tmp_path):
    source, target = _docker(tmp_path, "source"), _docker(tmp_path, "target")
    process = ProcessCluster(ClusterSpec(brokers=1), tmp_path / "p")
    assert type(create_mirror_maker(source, target, ["t"], tmp_path / "a")) is DockerMirrorMaker
    assert type(create_mirror_maker(process, target, ["t"], tmp_path / "b")) is MirrorMaker
    assert type(create_mirror_maker(process, process, ["t"], tmp_path / "c")) is MirrorMaker


def test_container_needs_docker_clusters_on_both_sides(tmp_path):
    process = ProcessCluster(ClusterSpec(brokers=1), tmp_path / "p")
    with pytest.raises(InputError, match="target cluster is ProcessCluster.*backend docker"):
        DockerMirrorMaker(_docker(tmp_path, "source"), process, ["t"], tmp_path / "mm")


def test_configuration_bootstraps_in_network_and_keeps_the_process_settings(tmp_path):
    source, target = _docker(tmp_path, "source", 3), _docker(tmp_path, "target", 1)
    mm = DockerMirrorMaker(source, target, ["t1", "t2"], tmp_path / "mm", policy="identity")
    props = mm._properties()
    assert props["source.bootstrap.servers"] == ",".join(
        f"{source.name}-n{i}:9092" for i in (1, 2, 3))
    assert props["target.bootstrap.servers"] == f"{target.name}-n1:9092"
    assert props["source->target.topics"] == "t1|t2"
    assert props["offset-syncs.topic.replication.factor"] == "3"  # sized to each cluster
    assert props["replication.factor"] == "1"
    assert props["replication.policy.class"].endswith("IdentityReplicationPolicy")
    assert mm.mirrored == {"t1": "t1", "t2": "t2"}
    assert mm.container_name.startswith(mm.instance)
