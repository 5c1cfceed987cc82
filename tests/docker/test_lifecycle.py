"""Cluster up and down on real containers: what runs where, start-up failures, and that
teardown and the sweep after a SIGKILLed session leave no container, network or JVM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import psutil
import pytest

from pytest_kreplica.cluster import ClusterSpec, NodeState, reaper
from pytest_kreplica.cluster.docker import watch as docker_watch
from pytest_kreplica.cluster.docker.cluster import LABEL_CLUSTER, LABEL_OWNER, DockerCluster, sweep
from pytest_kreplica.cluster.owner import owner_token
from pytest_kreplica.errors import ClusterError
from pytest_kreplica.waits import wait_for


def leftovers(client, cluster_name: str) -> list[str]:
    label = {"label": f"{LABEL_CLUSTER}={cluster_name}"}
    return ([c.name for c in client.containers.list(all=True, filters=label, ignore_removed=True)]
            + [n.name for n in client.networks.list(filters=label)])


def test_cluster_up(cluster, docker_client):
    ids = {n.node_id for n in cluster.nodes}
    assert ids == {1, 2, 3}
    assert cluster._registration() == "ok"  # every node registered unfenced, a quorum leader
    assert cluster.active_controller() in ids
    containers = docker_client.containers.list(filters={"label": f"{LABEL_CLUSTER}={cluster.name}"})
    assert sorted(c.name for c in containers) == [cluster.container_name(i) for i in (1, 2, 3)]
    for container in containers:
        assert container.labels[LABEL_OWNER] == reaper.owner_token()
        bindings = container.attrs["HostConfig"]["PortBindings"]
        assert [b["HostIp"] for v in bindings.values() for b in v] == ["127.0.0.1"]
        assert set(container.attrs["NetworkSettings"]["Networks"]) == {cluster.name}
    for node in cluster.nodes:
        assert cluster.node_state(node.node_id) is NodeState.RUNNING
        assert (node.log_dir / "meta.properties").is_file()  # the bind mount works both ways
        assert "Kafka Server started" in node.log_file.read_text(errors="replace") or \
            "Transition from STARTING to STARTED" in node.log_file.read_text(errors="replace")
    described = cluster.describe()
    assert described["backend"] == "docker" and described["image"] == cluster.image


def test_close_leaves_nothing(docker_client, tmp_path):
    c = DockerCluster(ClusterSpec(brokers=1, backend="docker"), tmp_path)
    c.start(timeout=180)
    assert len(leftovers(docker_client, c.name)) == 2  # one container, one network
    c.close()
    assert leftovers(docker_client, c.name) == []
    c.close()  # idempotent


def test_start_failure_shows_log_tail_and_cleans_up(docker_client, tmp_path):
    spec = ClusterSpec(brokers=1, backend="docker").with_config(num_io_threads="many")
    c = DockerCluster(spec, tmp_path)
    with pytest.raises(ClusterError) as info:
        c.start(timeout=180)
    message = str(info.value)
    assert "exited with status" in message and "num.io.threads" in message, message
    assert str(c.node(1).log_file) in message
    assert leftovers(docker_client, c.name) == []


CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from pytest_kreplica.cluster import ClusterSpec
    from pytest_kreplica.cluster.docker.cluster import DockerCluster
    c = DockerCluster(ClusterSpec(brokers=1, backend="docker"), Path(sys.argv[1]))
    c.start(timeout=180)
    print(c.name, flush=True)
    time.sleep(600)
""")


def start_child(tmp_path) -> tuple[subprocess.Popen, str]:
    """A session of its own that starts a one-node docker cluster and sleeps."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=env)
    seen = []
    for line in child.stdout:  # ends when the child does (its start is bounded: 180 s)
        if line.startswith("kreplica-"):
            return child, line.strip()
        seen.append(line.rstrip())
    child.kill()
    pytest.fail(f"child did not start a cluster (exit {child.wait()}); it printed: {seen[-10:]}")


def sigkill(child: subprocess.Popen) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()


def watcher_of(pid: int) -> psutil.Process:
    token = owner_token(pid)
    found = [p for p in psutil.process_iter(["cmdline"])
             if (p.info["cmdline"] or [])[-2:] == [docker_watch.__name__, token]]
    assert len(found) == 1, f"expected one watcher of {token}, found {found}"
    return found[0]


def test_a_killed_sessions_containers_are_removed_at_once(docker_client, tmp_path):
    child, name = start_child(tmp_path)
    try:
        assert len(leftovers(docker_client, name)) == 2
        watcher = watcher_of(child.pid)
    finally:
        sigkill(child)
    wait_for(lambda: (f"left: {left}" if (left := leftovers(docker_client, name)) else None),
             timeout=30, what=f"the watcher to remove {name}'s container and network")
    watcher.wait(timeout=30)  # and it exits once it has (psutil raises on a timeout)
    assert not watcher.is_running()
    assert reaper.marked_processes(str(tmp_path)) == []  # its JVM went with its container


def test_sweep_after_killed_session(cluster, docker_client, tmp_path):
    """What a session leaves when its watcher died too (SIGKILLed with it, an engine that did
    not answer) is swept by the next start."""
    child, name = start_child(tmp_path)
    try:
        assert len(leftovers(docker_client, name)) == 2
        watcher_of(child.pid).kill()
    finally:
        sigkill(child)
    assert len(leftovers(docker_client, name)) == 2

    removed = sweep(docker_client)

    assert leftovers(docker_client, name) == []
    assert f"{name}-n1" in removed and name in removed
    assert reaper.marked_processes(str(tmp_path)) == []  # its JVM went with its container
    for node in cluster.nodes:  # a live owner's cluster is never swept
        assert cluster.node_state(node.node_id) is NodeState.RUNNING
