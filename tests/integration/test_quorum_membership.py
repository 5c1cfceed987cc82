"""controller_membership (issue 16, part 5) on a real 3-node cluster formatted as a dynamic
KRaft quorum, under an acks=all producer: the active controller's voter is removed (it runs
on as an observer and the other two elect a leader), then added back. Each step is verified
in DescribeQuorum, what the strike and restore return names the voter sets, and nothing
acknowledged is lost."""

from __future__ import annotations

import threading

import psutil
import pytest

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.errors import ClusterError
from pytest_kreplica.faults import quorum
from tests.acked import produce_until, read_partition

START_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ProcessCluster(ClusterSpec(brokers=3, facilities=frozenset({"dynamic_quorum"})),
                       tmp_path_factory.mktemp("quorum"))
    c.start(timeout=START_TIMEOUT)
    yield c
    pids = [n.pid for n in c.nodes]
    c.close()
    assert not [p for p in pids if p and psutil.pid_exists(p)
                and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_a_dynamic_quorum_names_its_voters_at_format_time(cluster):
    props = (cluster.workdir / "node-1" / "server.properties").read_text()
    assert "controller.quorum.bootstrap.servers=" in props
    assert "controller.quorum.voters" not in props
    voters, observers, leader = quorum.membership(cluster)
    assert voters == [1, 2, 3] and observers == [] and leader in voters


def test_the_active_controller_removed_and_added_back_under_load(cluster):
    topic = "quorum-under-load"
    cluster.create_topics([TopicSpec(topic, partitions=1, replication_factor=3,
                                     config={"min.insync.replicas": "2"})])
    victim = cluster.active_controller()
    stop, acked, failed = threading.Event(), [], []
    thread = threading.Thread(target=produce_until, args=(cluster, topic, stop, acked, failed),
                              daemon=True)
    thread.start()
    try:
        measured = quorum.strike(cluster, victim)
        during, observers, leader_during = quorum.membership(cluster)
        acked_while_removed = len(acked)
        new_leader = cluster.active_controller()
        restored = quorum.restore(cluster, victim, 60)
        after, observers_after, _ = quorum.membership(cluster)
    finally:
        stop.set()
        thread.join(30)
    print(f"strike: {measured}\nrestore: {restored}\nacked {len(acked)}, failed {len(failed)}")
    others = sorted({1, 2, 3} - {victim})
    assert during == others and victim in observers, (during, observers)
    assert new_leader in others and leader_during in others  # the quorum moved on without it
    assert f"voters [1, 2, 3] (quorum leader {victim}) -> {others}" in measured, measured
    assert after == [1, 2, 3] and victim not in observers_after, (after, observers_after)
    assert f"node {victim} a voter again: voters [1, 2, 3]" in restored, restored
    assert acked_while_removed > 0 and len(acked) > acked_while_removed
    missing = set(acked) - read_partition(cluster, topic)
    assert not missing, f"acknowledged records missing after the voter change: {missing}"


def test_removing_a_node_that_is_no_voter_is_refused(cluster):
    victim = cluster.active_controller()
    quorum.strike(cluster, victim)
    try:
        with pytest.raises(ClusterError, match="is not a voter of the KRaft quorum"):
            quorum.strike(cluster, victim)
    finally:
        quorum.restore(cluster, victim, 60)
    assert quorum.membership(cluster)[0] == [1, 2, 3]
