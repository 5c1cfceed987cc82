"""Power loss on a real 3-node process cluster whose log dirs are lazy FUSE filesystems
(``ClusterSpec(facilities={"lazy_fs"})``, cluster/facilities/impl/lazyfs.py; root mounts
without fusermount3).

One cluster is shared by the module; each test leaves it healthy. The leader's power loss
drops what it had not fsynced and loses nothing acknowledged with acks=all (the followers
hold it); every node's at once loses acknowledged records with Kafka's default flush
settings and none with ``flush.messages=1``. A session killed with SIGKILL leaves its mounts
unanswered; the next cluster start unmounts them.
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
from pytest_kreplica.cluster.facilities.impl import lazymount
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.faults import moves, power
from pytest_kreplica.waits import wait_for
from tests.acked import produce_until, read_partition
from tests.acked import producer as acked_producer

START_TIMEOUT = 120.0
BYTES = re.compile(r"node (\d+): (\d+) un-fsynced segment bytes dropped")

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="FUSE mounts: Linux only (the suite's machines are)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("lazy")
    c = ProcessCluster(ClusterSpec(brokers=3, facilities=frozenset({"lazy_fs"})), workdir)
    c.start(timeout=START_TIMEOUT)
    points = [n.log_dir for n in c.nodes]
    disks = c.facility("lazy_fs")  # a closed cluster has no facilities any more
    yield c
    c.close()
    left = [p for p in points if p in lazymount.mounts()]
    assert left == [], f"mounts outlived close(): {left}"
    daemons = [d.proc.pid for d in disks.disks.values() if d.proc.poll() is None]
    assert daemons == [], f"lazyfs daemons outlived close(): {daemons}"


def _topic(cluster, name, **config):
    cluster.create_topics([TopicSpec(name, partitions=1, replication_factor=3,
                                     config={"min.insync.replicas": "2", **config})])
    cluster.wait_healthy([name], timeout=60)








def test_each_log_dir_is_a_lazy_fuse_filesystem(cluster):
    table = lazymount.mounts()
    for node in cluster.nodes:
        source, fstype = table[node.log_dir]
        assert fstype == lazymount.FSTYPE and lazymount.SOURCE_RE.match(source), source
        disk = cluster.facility("lazy_fs")[node.node_id]
        assert (node.log_dir / "meta.properties").read_bytes() == \
            (disk.backing / "meta.properties").read_bytes()
    assert set(cluster.describe()["disks"]) == {"1", "2", "3"}


def test_the_leaders_power_loss_drops_its_tail_and_loses_nothing_acknowledged(cluster):
    topic = "power-leader"
    _topic(cluster, topic)
    leader = cluster.partition_state(topic, 0).leader
    stop, acked, failed = threading.Event(), [], []
    producer = threading.Thread(target=produce_until, args=(cluster, topic, stop, acked, failed))
    producer.start()
    try:
        wait_for(lambda: None if len(acked) > 50 else f"{len(acked)} acked", 30,
                 "the producer under way")
        try:
            measured = power.strike_one(cluster, leader)
            at_strike = len(acked)
            wait_for(lambda: None if len(acked) > at_strike + 20 else
                     f"{len(acked)} acked, {len(failed)} failed, "
                     f"{cluster.partition_state(topic, 0)}",
                     60, "acknowledgements again from the new leader")
        finally:
            healed = power.restore_one(cluster, leader, 90)
        cluster.wait_healthy([topic], timeout=90)
    finally:
        stop.set()
        producer.join(30)
    print(f"power_loss: {measured}; {healed}; acked {len(acked)}, failed {len(failed)}")
    (node, dropped), = BYTES.findall(measured)
    assert int(node) == leader and int(dropped) > 0, measured  # the fault acted
    assert "restarted" in healed
    seen = read_partition(cluster, topic)
    lost = [(o, v) for o, v in acked if (o, v) not in seen]
    assert lost == [], f"acknowledged records missing from the log: {lost[:5]}"


@pytest.mark.parametrize(("flush", "expect_loss"), [(None, True), ("1", False)],
                         ids=["default-flush", "flush-messages-1"])
def test_every_nodes_power_loss_loses_what_no_replica_fsynced(cluster, flush, expect_loss):
    topic = f"power-all-{'default' if flush is None else 'flush' + flush}"
    _topic(cluster, topic, **({"flush.messages": flush} if flush else {}))
    producer = acked_producer(cluster)
    acked = [(producer.send(topic, f"m{i}".encode()).get(timeout=15).offset, f"m{i}".encode())
             for i in range(200)]
    producer.close(5)
    leader = cluster.partition_state(topic, 0).leader
    try:
        measured = power.strike_all(cluster, leader)
    finally:
        healed = power.restore_all(cluster, leader, 120)
    cluster.wait_healthy([topic], timeout=120)
    print(f"power_loss_all ({flush=}): {measured}; {healed}")
    assert sorted(int(n) for n, _ in BYTES.findall(measured)) == [1, 2, 3], measured
    seen = read_partition(cluster, topic)
    lost = [(o, v) for o, v in acked if (o, v) not in seen]
    print(f"acknowledged {len(acked)}, lost {len(lost)}")
    if expect_loss:
        assert lost, f"expected acknowledged records lost with default flush; {measured}"
    else:
        assert lost == [], f"flush.messages=1 lost {len(lost)}: {lost[:5]}; {measured}"


def test_a_replica_sets_power_loss_spares_the_other_nodes(cluster):
    """rf 2 on 3 nodes: both replicas cut (default flush: what they acknowledged is gone),
    the third node runs on throughout; the segments cut on both replicas are the loss
    evidence."""
    topic = "power-replicas"
    # the fault cuts the replicas of every partition the victim holds: on a cluster the
    # suite owns those are the case's; here the earlier tests' topics go first
    earlier = sorted({t for t, _ in moves.topic_states(cluster)})
    if earlier:
        cluster.delete_topics(earlier)
    cluster.create_topics([TopicSpec(topic, partitions=1, replication_factor=2,
                                     config={"min.insync.replicas": "1"})])
    producer = acked_producer(cluster)
    acked = [(producer.send(topic, f"m{i}".encode()).get(timeout=15).offset, f"m{i}".encode())
             for i in range(100)]
    producer.close(5)
    state = cluster.partition_state(topic, 0)
    (spared,) = {n.node_id for n in cluster.nodes} - set(state.replicas)
    try:
        measured = power.strike_replicas(cluster, state.leader)
        spared_state = cluster.node_state(spared).value
    finally:
        healed = power.restore_all(cluster, state.leader, 120)
    cluster.wait_healthy([topic], timeout=120)
    print(f"power_loss_replicas: {measured}; {healed}")
    assert sorted(int(n) for n, _ in BYTES.findall(measured)) == sorted(state.replicas)
    assert f"spared (running on) [{spared}]" in measured and spared_state == "running"
    assert power.segments_cut(measured)[f"{topic}-0"] == set(state.replicas), measured
    seen = read_partition(cluster, topic)
    lost = [a for a in acked if a not in seen]
    assert lost, f"expected acknowledged records lost with default flush; {measured}"
    cluster.delete_topics([topic])


def test_a_killed_session_leaves_mounts_the_next_start_removes(tmp_path, cluster):
    """A real SIGKILL of a session that started a cluster on lazy filesystems: its JVM and its
    lazyfs daemons go (parent-death signal), the mounts stay unanswered; the sweep every
    cluster start runs unmounts them and leaves the live module cluster's alone."""
    script = textwrap.dedent(f"""
        import json, time
        from pytest_kreplica.cluster.base import ClusterSpec
        from pytest_kreplica.cluster.process.cluster import ProcessCluster
        c = ProcessCluster(ClusterSpec(brokers=1, facilities=frozenset({{"lazy_fs"}})),
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
    assert all(p in lazymount.mounts() for p in points), "the mount was gone before the sweep"
    sweep_leftovers()  # what every cluster start runs
    table = lazymount.mounts()
    assert [p for p in points if p in table] == [], "a dead session's mount survived the sweep"
    assert all(n.log_dir in table for n in cluster.nodes), "the sweep took a live mount"
