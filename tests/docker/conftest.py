"""Fixtures for the docker backend's tests: real containers on a real engine.

Without an engine these tests skip with one line saying how to get one; in CI
(``CI=true``) a missing engine fails them instead.
"""

from __future__ import annotations

import os
import uuid

import pytest

from pytest_kreplica.cluster import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.admin.probe import answers
from pytest_kreplica.errors import EnvironmentProblem


@pytest.fixture(scope="session")
def docker_client():
    from pytest_kreplica.cluster.docker.image import engine, ensure_image

    try:
        client = engine()
    except EnvironmentProblem as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI needs a Docker engine: {exc}")
        pytest.skip(f"no Docker engine; run scripts/ensure-docker as root to get one ({exc})")
    ensure_image(None, client)  # built once, before any test's clock starts
    yield client
    client.close()


@pytest.fixture(scope="module")
def cluster(docker_client, tmp_path_factory):
    from pytest_kreplica.cluster.docker.cluster import DockerCluster

    c = DockerCluster(ClusterSpec(brokers=3, backend="docker"),
                      tmp_path_factory.mktemp("docker-cluster"))
    c.start(timeout=180)
    yield c
    c.close()


@pytest.fixture
def healthy(cluster):
    """The module's cluster with every node running and linked, before and after a test."""
    restore(cluster)
    yield cluster
    restore(cluster)


def restore(cluster) -> None:
    """Links back, paused nodes resumed, stopped ones started, every ISR full."""
    cluster.heal(timeout=120)


@pytest.fixture
def topic(healthy) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    healthy.create_topics([TopicSpec(name, partitions=1, replication_factor=3)], timeout=60)
    return name


def kafka_answers(host: str, port: int, timeout: float = 3.0) -> bool:
    """True when a Kafka broker answers an ApiVersions (v0) request at host:port."""
    return answers(host, port, timeout)


def peer_connects(cluster, from_node: int, to_node: int) -> bool:
    """True when ``from_node``'s container opens a TCP connection to ``to_node``'s
    inter-broker port within 3 s (checked inside the cluster network)."""
    container = cluster._container(from_node)
    target = cluster.container_name(to_node)
    code, _ = container.exec_run(
        ["timeout", "3", "bash", "-c", f"exec 3<>/dev/tcp/{target}/9092"])
    return code == 0
