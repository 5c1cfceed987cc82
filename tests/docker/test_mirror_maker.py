"""MirrorMaker 2 as a container between two real 1-broker docker clusters: it joins both
networks with no published ports, mirrors, really stops / is killed / pauses (the engine
says so and nothing is mirrored meanwhile) and mirrors again after the restore; the mirror
nemesis records its events; closing leaves no container behind."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_kreplica.cluster.base import ClusterSpec, NodeState, TopicSpec
from pytest_kreplica.history import RunWriter
from pytest_kreplica.mirror import (
    START_TIMEOUT_S,
    ClusterWriter,
    create_mirror_maker,
    mirror_component,
    probe,
)
from pytest_kreplica.nemesis import FaultPlan, Nemesis

TOPIC = "mm-docker"
DOWN_WINDOW_S = 4.0  # how long we watch the target not move while MirrorMaker is down


@pytest.fixture(scope="module")
def pair(docker_client, tmp_path_factory):
    from pytest_kreplica.cluster.docker import DockerCluster

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
    from pytest_kreplica.mirror_docker import DockerMirrorMaker

    source, target = pair
    mm = create_mirror_maker(source, target, [TOPIC], tmp_path_factory.mktemp("mm-docker"))
    assert isinstance(mm, DockerMirrorMaker)
    writer = RunWriter(tmp_path_factory.mktemp("mm-docker-run"))
    try:
        mm.start()
        probe([TOPIC], source.bootstrap_servers, ClusterWriter(writer, "source"))
        mm.wait_ready()
        yield mm, writer
    finally:
        mm.close()
        writer.close()


def _send(bootstrap: str, n: int, tag: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i in range(n):
            producer.send(TOPIC, f"{tag}-{i}".encode(), partition=i % 2).get(timeout=60)
    finally:
        producer.close(timeout=10)


def test_container_joins_both_networks_and_mirrors(pair, mirror, docker_client):
    source, target = pair
    mm, _ = mirror
    attrs = docker_client.containers.get(mm.container_name).attrs
    assert set(attrs["NetworkSettings"]["Networks"]) == {source.name, target.name}
    assert not attrs["HostConfig"].get("PortBindings"), attrs["HostConfig"]["PortBindings"]
    from pytest_kreplica.cluster import reaper
    from pytest_kreplica.cluster.docker import LABEL_OWNER

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
    time.sleep(1.0)  # requests MirrorMaker sent before the strike may still land
    before = mm.target_total()
    _send(source.bootstrap_servers, 20, f"{failure}-down")
    deadline = time.monotonic() + DOWN_WINDOW_S
    while time.monotonic() < deadline:
        assert mm.target_total() == before, f"mirrored while {failure}-failed"
        time.sleep(0.5)
    (mm.resume if failure == "soft" else mm.start)()
    assert mm.state is NodeState.RUNNING
    assert (mm.pid == pid) == (failure == "soft")
    mm.wait_mirroring(before + 19)  # all 20 records of the downtime arrive
    assert mm.target_total() >= before + 20


def test_mirror_nemesis_records_pause_resume_and_recovery(pair, mirror):
    source, _target = pair
    mm, writer = mirror
    plan = FaultPlan(seed=7, failure="soft", target="mirror-maker", failures=1,
                     downtime_s=2.0, delay_s=(0.1, 0.2))
    stop = threading.Event()

    def keep_sending() -> None:  # the nemesis judges recovery by new records arriving
        for i in range(100):
            if stop.is_set():
                return
            _send(source.bootstrap_servers, 4, f"n{i}")
            time.sleep(0.2)

    sender = threading.Thread(target=keep_sending)
    sender.start()
    try:
        nemesis = Nemesis(source, writer, plan, [(TOPIC, 0), (TOPIC, 1)],
                          components={"mirror-maker": mirror_component(mm)},
                          recovery_timeout=START_TIMEOUT_S)
        records = nemesis.run()
    finally:
        stop.set()
        sender.join(120)
    assert len(records) == 1 and records[0].error is None, records
    assert records[0].state_after_strike == "paused" and records[0].node == "mirror-maker"
    assert records[0].recovery_s is not None and records[0].recovery_s >= 0
    events = [json.loads(line) for line in
              (writer.run_dir / "events.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in events if e["role"] == "mirror-maker"]
    assert kinds == ["pause", "resume", "recovered"], kinds


def test_close_leaves_no_container(mirror, docker_client):
    import docker

    from pytest_kreplica.mirror_docker import containers_of_this_session

    mm, _ = mirror
    mm.close()
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(mm.container_name)
    assert containers_of_this_session(docker_client) == []
    assert mm.state is NodeState.STOPPED and mm.log_file.stat().st_size > 0
    mm.close()  # idempotent
