"""Disk faults on a real 3-node process cluster whose log dirs are small loop-mounted ext4
filesystems (``ClusterSpec(facilities={"small_disk"})``, run as root).

One cluster is shared by the module; each test leaves it healthy. Each fault is struck on
the leader while an acks=all producer runs, verified in what the strike measured (the disk
full or read-only, the node's log line, leadership moved), healed, and nothing acknowledged
is missing from the log. A session killed with SIGKILL leaves its mounts behind; the next
cluster start unmounts them and deletes their images.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.facilities import sweep_leftovers
from pytest_kreplica.cluster.facilities.impl import smalldisk
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.faults import disk
from pytest_kreplica.waits import wait_for
from tests.acked import produce_until, read_partition

START_TIMEOUT = 120.0

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="loop mounts: Linux only (the suite's machines are)")


def _images(workdir: Path) -> list[Path]:
    return sorted(workdir.glob(f"node-*/{smalldisk.IMAGE_PREFIX}*.img"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("disks")
    c = ProcessCluster(ClusterSpec(brokers=3, facilities=frozenset({"small_disk"})), workdir)
    c.start(timeout=START_TIMEOUT)
    points = [n.log_dir for n in c.nodes]
    yield c
    c.close()
    left = [p for p in points if p in smalldisk.mounts()]
    assert left == [], f"mounts outlived close(): {left}"
    assert _images(c.workdir) == [], f"images outlived close(): {_images(c.workdir)}"


def test_each_log_dir_is_its_own_small_filesystem(cluster):
    table = smalldisk.mounts()
    for node in cluster.nodes:
        source, fstype, options = table[node.log_dir]
        assert fstype == "ext4" and source.startswith("/dev/loop"), table[node.log_dir]
        assert "errors=remount-ro" in options
        disks = cluster.facility("small_disk")
        assert smalldisk.backing_file(source) == disks[node.node_id].image
        assert disks[node.node_id].free_bytes() < smalldisk.SIZE_MIB * 1024 * 1024
        assert (node.log_dir / "meta.properties").exists()
    described = cluster.describe()["disks"]
    assert set(described) == {"1", "2", "3"}






@pytest.mark.parametrize("failure", ["disk_full", "disk_readonly"])
def test_fault_acts_and_heals_without_acknowledged_loss(cluster, failure):
    topic = f"disk-{failure.replace('_', '-')}"
    cluster.create_topics([TopicSpec(topic, partitions=1, replication_factor=3,
                                     config={"min.insync.replicas": "2"})])
    cluster.wait_healthy([topic], timeout=60)
    leader = cluster.partition_state(topic, 0).leader
    strike, restore = {"disk_full": (disk.strike_full, disk.restore_full),
                       "disk_readonly": (disk.strike_readonly, disk.restore_readonly)}[failure]
    stop, acked, failed = threading.Event(), [], []
    producer = threading.Thread(target=produce_until, args=(cluster, topic, stop, acked, failed))
    producer.start()
    try:
        wait_for(lambda: None if len(acked) > 20 else f"{len(acked)} acked", 30,
                 "the producer under way")
        try:
            measured = strike(cluster, leader)
            moved_to = cluster.partition_state(topic, 0).leader
            at_strike = len(acked)
            wait_for(lambda: None if len(acked) > at_strike + 20 else
                     f"{len(acked)} acked, {len(failed)} failed, "
                     f"{cluster.partition_state(topic, 0)}",
                     60, "acknowledgements again from the new leader")
        finally:
            healed = restore(cluster, leader, 90)
        cluster.wait_healthy([topic], timeout=90)
    finally:
        stop.set()
        producer.join(30)
    print(f"{failure}: measured {measured}; healed {healed}; acked {len(acked)}, "
          f"failed {len(failed)}")
    # the dir taken offline, or (the metadata log's write failed first) the raft thread's halt
    assert re.search(rf"node {leader} log: .*(Stopping serving replicas in dir|Encountered "
                     "fatal fault)", measured), measured
    assert moved_to not in (leader, None, -1), f"leader {leader} -> {moved_to} at the strike"
    # the module's earlier topics may have had the same leader: at least the watched one moved
    assert re.search(rf"leadership of [1-9]\d* partition\(s\) moved off node {leader}",
                     measured), measured
    if failure == "disk_full":
        before, after = re.search(r"free ([\d.]+ \w+) -> ([\d.]+ \w+)", measured).groups()
        assert after.endswith("bytes") and int(after.split()[0]) <= disk.FULL_SLACK_BYTES
        filler = cluster.facility("small_disk")[leader].filler
        assert "filler removed" in healed and not filler.exists()
    else:
        assert re.search(r"-> '[^']*\bro\b|emergency_ro", measured), measured
        assert "refused with EROFS" in measured
        assert "ro" not in cluster.facility("small_disk")[leader].options().split(",")
    assert "restarted" in healed
    seen = read_partition(cluster, topic)
    lost = [(o, v) for o, v in acked if (o, v) not in seen]
    assert lost == [], f"acknowledged records missing from the log: {lost[:5]}"


def test_fill_leaves_nothing_free(tmp_path):
    """``fill`` on a fresh 64 MiB disk: to the brim (within the slack), and the heal frees it."""
    d = smalldisk.SmallDisk(9, tmp_path / smalldisk.image_name(), tmp_path / "mnt")
    d.create()
    try:
        before = d.free_bytes()
        held = disk.fill(d.filler)
        assert d.free_bytes() <= disk.FULL_SLACK_BYTES < before, (before, d.free_bytes())
        assert held >= before - disk.FULL_SLACK_BYTES
        d.filler.unlink()
        assert d.free_bytes() > before // 2
    finally:
        d.remove()
    assert not d.mounted() and not d.image.exists()


def test_a_killed_session_leaves_mounts_the_next_start_removes(tmp_path, cluster):
    """A real SIGKILL of a session that started a cluster with small disks: its JVM goes
    (parent-death signal), its mount and image stay; the sweep every cluster start runs
    removes them, and leaves the live module cluster's mounts alone."""
    script = textwrap.dedent(f"""
        import json, time
        from pytest_kreplica.cluster.base import ClusterSpec
        from pytest_kreplica.cluster.process.cluster import ProcessCluster
        c = ProcessCluster(ClusterSpec(brokers=1, facilities=frozenset({{"small_disk"}})),
                           {str(tmp_path / 'c')!r})
        c.start(timeout=120)
        print(json.dumps([str(n.log_dir) for n in c.nodes]), flush=True)
        time.sleep(600)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        points = [Path(p) for p in json.loads(child.stdout.readline())]
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        child.kill()
    assert all(p in smalldisk.mounts() for p in points), "the mount was gone before the sweep"
    assert _images(tmp_path / "c"), "the image was gone before the sweep"
    sweep_leftovers()  # what every cluster start runs
    table = smalldisk.mounts()
    assert [p for p in points if p in table] == [], "a dead session's mount survived the sweep"
    assert _images(tmp_path / "c") == []
    assert all(n.log_dir in table for n in cluster.nodes), "the sweep took a live mount"
