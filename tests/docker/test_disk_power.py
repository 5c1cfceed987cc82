"""Disk and power faults on the docker backend: each node's log dir is a small filesystem
(or a lazy FUSE one) mounted on the host, which the container's bind mount of its node
directory takes along. Each fault acts inside the container (the broker's own log says so,
leadership moves), heals, loses nothing an acks=all producer had acknowledged, and no mount
outlives the cluster."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from pytest_kreplica.cluster import ClusterSpec, TopicSpec
from pytest_kreplica.faults import disk, power
from tests.acked import produce_until, read_partition


def _mounted_under(path: Path) -> list[str]:
    return [line for line in Path("/proc/self/mounts").read_text().splitlines()
            if str(path) in line]


@pytest.fixture(scope="module")
def disk_cluster(docker_client, tmp_path_factory, request):
    from pytest_kreplica.cluster.docker.cluster import DockerCluster

    workdir = tmp_path_factory.mktemp("docker-disks")
    c = DockerCluster(ClusterSpec(brokers=3, backend="docker", **request.param), workdir)
    c.start(timeout=180)
    yield c
    c.close()
    assert not _mounted_under(workdir), "a node's filesystem outlived close()"


def _under_load(cluster, topic, strike, restore):
    cluster.create_topics([TopicSpec(topic, 1, 3, {"min.insync.replicas": "2"})], timeout=60)
    victim = cluster.partition_state(topic, 0).leader
    stop, acked, failed = threading.Event(), [], []
    thread = threading.Thread(target=produce_until, args=(cluster, topic, stop, acked, failed),
                              daemon=True)
    thread.start()
    try:
        time.sleep(2)
        measured = strike(cluster, victim)
        # a power loss kills at once: a new leader follows within the session timeout
        moved_to = cluster.wait_for_leader(topic, 0, not_in={victim}, timeout=45).leader
        restored = restore(cluster, victim, 90)
        time.sleep(1)
    finally:
        stop.set()
        thread.join(30)
    print(f"strike: {measured}\nrestore: {restored}\nacked {len(acked)}, failed {len(failed)}")
    assert moved_to != victim, f"leadership stayed on node {victim}"
    assert acked and not set(acked) - read_partition(cluster, topic)
    return measured, restored


@pytest.mark.parametrize("disk_cluster", [{"facilities": frozenset({"small_disk"})}], indirect=True)
def test_disk_full_and_readonly_act_inside_the_container(disk_cluster):
    measured, restored = _under_load(disk_cluster, "docker-full", disk.strike_full,
                                     disk.restore_full)
    # the node names the failed write (LogDirFailureChannel), or, when the KRaft metadata
    # log's write failed first, the raft IO thread's fatal fault that halts it
    assert "-> 0 bytes" in measured, measured
    assert "LogDirFailureChannel" in measured or "raft IO thread" in measured, measured
    assert "filler removed" in restored, restored
    measured, restored = _under_load(disk_cluster, "docker-readonly", disk.strike_readonly,
                                     disk.restore_readonly)
    assert "emergency_ro" in measured or ",ro" in measured, measured
    assert "remounted" in restored and "after e2fsck" in restored, restored


@pytest.mark.parametrize("disk_cluster", [{"facilities": frozenset({"lazy_fs"})}], indirect=True)
def test_power_loss_drops_the_containers_unsynced_writes(disk_cluster):
    measured, restored = _under_load(disk_cluster, "docker-power", power.strike_one,
                                     power.restore_one)
    assert "un-fsynced segment bytes dropped" in measured, measured
    assert power.segments_cut(measured), measured  # the case's partition was cut
    assert "restarted after the power loss" in restored, restored
