"""MirrorMaker 2 as a container between two real 1-broker docker clusters: it joins both
networks with no published ports, mirrors, really stops / is killed / pauses (the engine
says so and nothing is mirrored meanwhile) and mirrors again after the restore; the mirror
nemesis records its events; closing leaves no container behind."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_kreplica.cluster.base import ClusterSpec, NodeState, TopicSpec
from pytest_kreplica.cluster.mirrormaker import create_mirror_maker
from pytest_kreplica.history import RunWriter
from tests.mirror_checks import assert_down_then_mirrors_again, mirroring, run_one_fault

TOPIC = "mm-docker"


@pytest.fixture(scope="module")
def pair(docker_client, tmp_path_factory):
    from pytest_kreplica.cluster.docker.cluster import DockerCluster

    root = tmp_path_factory.mktemp("mm-docker-pair")
    clusters = [DockerCluster(ClusterSpec(brokers=1, backend="docker", role=role), root / role)
                for role in ("source", "target")]
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda c: c.start(timeout=180), clusters))
        clusters[0].create_topics([TopicSpec(TOPIC, 2, 1)], timeout=60)
        yield tuple(clusters)
    finally:
        for cluster in clusters:
            cluster.close()


@pytest.fixture(scope="module")
def mirror(pair, tmp_path_factory):
    from pytest_kreplica.cluster.mirrormaker import DockerMirrorMaker

    source, target = pair
    mm = create_mirror_maker(source, target, [TOPIC], tmp_path_factory.mktemp("mm-docker"))
    assert isinstance(mm, DockerMirrorMaker)
    writer = RunWriter(tmp_path_factory.mktemp("mm-docker-run"))
    with mirroring(mm, source, TOPIC, writer) as running:
        yield running


def test_container_joins_both_networks_and_mirrors(pair, mirror, docker_client):
    source, target = pair
    mm, _ = mirror
    attrs = docker_client.containers.get(mm.container_name).attrs
    assert set(attrs["NetworkSettings"]["Networks"]) == {source.name, target.name}
    assert not attrs["HostConfig"].get("PortBindings"), attrs["HostConfig"]["PortBindings"]
    from pytest_kreplica.cluster import reaper
    from pytest_kreplica.cluster.docker.cluster import LABEL_OWNER

    assert attrs["Config"]["Labels"][LABEL_OWNER] == reaper.owner_token()
    mounts = {m["Destination"]: m["Source"] for m in attrs["Mounts"]}
    assert mounts == {"/kreplica": str(mm.workdir)}
    # in-network bootstrap: the brokers' container names, never the host's published ports
    config = mm.config_file.read_text()
    assert f"source.bootstrap.servers = {source.container_name(1)}:9092" in config
    assert f"target.bootstrap.servers = {target.container_name(1)}:9092" in config
    assert "127.0.0.1" not in config
    log_text = mm.log_file.read_text()
    assert "starting MirrorMaker 2" in log_text and "MirrorMaker" in log_text.split("===")[-1]
    # the image holds the connect-mirror jars of the clusters' version
    code, out = docker_client.containers.get(mm.container_name).exec_run(
        ["sh", "-c", "ls /opt/kafka/mirror-libs"])
    assert code == 0 and f"connect-mirror-{mm.dist.version}.jar" in out.decode().split()
    assert mm.target_total() >= 1  # the probe record crossed over
    assert mm.describe()["container"] == mm.container_name and mm.pid


@pytest.mark.parametrize("failure", ["soft", "hard", "clean"])
def test_mirror_maker_really_stops_and_mirrors_again(pair, mirror, docker_client, failure):
    source, _target = pair
    mm, _writer = mirror
    pid = mm.pid
    {"clean": mm.terminate, "hard": mm.kill, "soft": mm.pause}[failure]()
    state = docker_client.containers.get(mm.container_name).attrs["State"]
    if failure == "soft":
        assert mm.state is NodeState.PAUSED and state["Paused"] is True, state
    else:
        assert mm.state is NodeState.STOPPED and state["Running"] is False, state
        # the JVM is PID 1: its exit status names the signal (SIGKILL 137; after SIGTERM
        # the JVM exits by itself with 143)
        assert state["ExitCode"] == (137 if failure == "hard" else 143), state
    assert_down_then_mirrors_again(mm, source.bootstrap_servers, TOPIC, failure, pid)
    assert mm.state is NodeState.RUNNING


def test_mirror_nemesis_records_pause_resume_and_recovery(pair, mirror):
    source, _target = pair
    mm, writer = mirror
    record, kinds = run_one_fault(source, mm, writer, TOPIC, "soft", batch=4, pause_s=0.2)
    assert record.state_after_strike == "paused" and record.node == "mirror-maker"
    assert record.recovery_s is not None and record.recovery_s >= 0
    assert kinds == ["pause", "resume", "recovered"], kinds


def test_close_leaves_no_container(mirror, docker_client):
    import docker

    from pytest_kreplica.cluster.mirrormaker.docker import containers_of_this_session

    mm, _ = mirror
    mm.close()
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(mm.container_name)
    assert containers_of_this_session(docker_client) == []
    assert mm.state is NodeState.STOPPED and mm.log_file.stat().st_size > 0
    mm.close()  # idempotent
