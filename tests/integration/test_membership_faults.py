"""Membership faults (issue 16, part 5) on a real 4-node process cluster, under an acks=all
producer: ``reassign`` moves the leader's replicas to the spare broker and
``preferred_election`` hands leadership to another in-sync replica. Each is verified to act
in metadata (the new assignment / leader, also named in what the strike returns), nothing
acknowledged is lost, and the replica snapshot after the move lists the new replicas only,
although the old replica's directory may still be on its node."""

from __future__ import annotations

import json
import re
import threading
import time

import psutil
import pytest

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.errors import InputError
from pytest_kreplica.faults import decommission, join, preferred, reassign
from pytest_kreplica.validation.replicas.snapshot import snapshot_replicas
from pytest_kreplica.waits import wait_for

START_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ProcessCluster(ClusterSpec(brokers=4), tmp_path_factory.mktemp("members"))
    c.start(timeout=START_TIMEOUT)
    yield c
    pids = {n.node_id: n.pid for n in c.nodes}  # a joined broker's too
    c.close()
    left = {n: p for n, p in pids.items() if p and psutil.pid_exists(p)
            and psutil.Process(p).status() != psutil.STATUS_ZOMBIE}
    assert not left, f"nodes outlived close(): {left}"


@pytest.fixture
def topic(cluster, request):
    name = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:100]
    cluster.create_topics([TopicSpec(name, partitions=1, replication_factor=3,
                                     config={"min.insync.replicas": "2"})])
    yield name
    cluster.delete_topics([name])


class Producer:
    """acks=all sends in a thread; ``acked`` holds (offset, value)."""

    def __init__(self, cluster, topic):
        self.cluster, self.topic = cluster, topic
        self.stop, self.acked, self.failed = threading.Event(), [], []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.cluster.bootstrap_servers,
                                 acks="all", request_timeout_ms=4000,
                                 delivery_timeout_ms=5000, retries=0, max_block_ms=5000)
        try:
            i = 0
            while not self.stop.is_set():
                value = f"m{i}".encode()
                try:
                    meta = producer.send(self.topic, value, partition=0).get(timeout=10)
                    self.acked.append((meta.offset, value))
                except Exception:
                    self.failed.append(value)
                i += 1
        finally:
            producer.close(5)

    def __enter__(self):
        self.thread.start()
        wait_for(lambda: None if len(self.acked) > 20 else f"{len(self.acked)} acked", 30,
                 "the producer under way")
        return self

    def __exit__(self, *exc):
        time.sleep(1)  # a little produce after the move too
        self.stop.set()
        self.thread.join(30)

    def lost(self):
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.cluster.bootstrap_servers,
                                 enable_auto_commit=False, consumer_timeout_ms=10000)
        tp = TopicPartition(self.topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        seen = {(r.offset, r.value) for r in consumer}
        consumer.close()
        return [a for a in self.acked if a not in seen]


def test_reassign_moves_the_leaders_replica_to_the_spare(cluster, topic, tmp_path):
    before = cluster.partition_state(topic, 0)
    victim = before.leader
    spare = ({n.node_id for n in cluster.nodes} - set(before.replicas)).pop()
    with Producer(cluster, topic) as producer:
        measured = reassign.strike(cluster, victim)
        restored = reassign.restore(cluster, victim, 90)
    after = cluster.partition_state(topic, 0)
    target = [r for r in before.replicas if r != victim] + [spare]
    print(f"strike: {measured}\nrestore: {restored}\nacked {len(producer.acked)}, "
          f"failed {len(producer.failed)}")
    assert f"{topic}-0 {list(before.replicas)} -> {target}" in measured, measured
    assert list(after.replicas) == target and after.isr_full, after
    assert after.leader != victim and after.leader in before.isr, after
    assert f"replicas {target}" in restored, restored
    assert producer.lost() == [], "acknowledged records missing after the reassignment"
    doc = snapshot_replicas(cluster, [TopicSpec(topic, 1)], tmp_path, timeout=30)
    assert doc["partitions"][0]["replicas"] == target, json.dumps(doc)
    assert str(victim) not in doc["nodes"] and not (tmp_path / "replicas" / str(victim)).exists()
    assert {int(n) for n in doc["nodes"]} == set(target)


def test_reassign_without_a_spare_broker_is_refused(cluster):
    name = "members-no-spare"
    cluster.create_topics([TopicSpec(name, partitions=1, replication_factor=4)])
    try:
        before = cluster.partition_state(name, 0)
        with pytest.raises(InputError, match="allowed: brokers > replication_factor"):
            reassign.strike(cluster, before.leader)
        assert cluster.partition_state(name, 0).replicas == before.replicas  # nothing moved
    finally:
        cluster.delete_topics([name])


def test_preferred_election_moves_leadership(cluster, topic):
    before = cluster.partition_state(topic, 0)
    victim = before.leader
    with Producer(cluster, topic) as producer:
        measured = preferred.strike(cluster, victim)
    after = cluster.partition_state(topic, 0)
    print(f"strike: {measured}\nacked {len(producer.acked)}, failed {len(producer.failed)}")
    assert after.leader != victim and after.leader in before.isr, after
    assert after.replicas[0] == after.leader, after  # the new preferred replica leads
    assert set(after.replicas) == set(before.replicas)  # no data moved
    assert f"leader {victim} -> {after.leader}" in measured, measured
    assert "away from it before the election: True" in measured, measured
    cluster.wait_healthy([topic], timeout=60)
    assert producer.lost() == [], "acknowledged records missing after the election"


def test_broker_decommission_moves_replicas_off_then_unregisters(cluster, topic, tmp_path):
    before = cluster.partition_state(topic, 0)
    victim = before.leader
    with Producer(cluster, topic) as producer:
        measured = decommission.strike(cluster, victim)
        during = cluster.partition_state(topic, 0)
        brokers_during = decommission.registered_brokers(cluster)
        restored = decommission.restore(cluster, victim, 90)
    print(f"strike: {measured}\nrestore: {restored}\nacked {len(producer.acked)}, "
          f"failed {len(producer.failed)}")
    assert victim not in during.replicas and during.isr_full, during
    assert victim not in brokers_during and len(brokers_during) == 3, brokers_during
    assert f"node {victim} stopped and unregistered" in measured, measured
    assert victim in decommission.registered_brokers(cluster)
    cluster.wait_healthy(timeout=60)
    after = cluster.partition_state(topic, 0)
    assert after.replicas == during.replicas  # the restarted broker stays empty
    assert producer.lost() == [], "acknowledged records missing after the decommission"
    doc = snapshot_replicas(cluster, [TopicSpec(topic, 1)], tmp_path, timeout=30)
    assert doc["partitions"][0]["replicas"] == list(during.replicas), json.dumps(doc)


def test_broker_join_starts_a_broker_and_moves_the_replicas_onto_it(cluster, topic, tmp_path):
    """Last in the module: the cluster keeps the joined broker until it is closed (the
    module fixture checks that close() stops it too)."""
    before = cluster.partition_state(topic, 0)
    victim = before.leader
    ids_before = {n.node_id for n in cluster.nodes}
    with Producer(cluster, topic) as producer:
        measured = join.strike(cluster, victim)
        restored = join.restore(cluster, victim, 90)
    (new,) = {n.node_id for n in cluster.nodes} - ids_before
    after = cluster.partition_state(topic, 0)
    target = [r for r in before.replicas if r != victim] + [new]
    print(f"strike: {measured}\nrestore: {restored}\nacked {len(producer.acked)}, "
          f"failed {len(producer.failed)}")
    assert f"node {new} joined" in measured and f"-> {target}" in measured, measured
    assert new in decommission.registered_brokers(cluster)
    assert list(after.replicas) == target and after.isr_full, after
    props = (cluster.workdir / f"node-{new}" / "server.properties").read_text()
    assert "process.roles=broker\n" in props  # broker-only: the voters are unchanged
    assert producer.lost() == [], "acknowledged records missing after the join"
    doc = snapshot_replicas(cluster, [TopicSpec(topic, 1)], tmp_path, timeout=30)
    assert doc["partitions"][0]["replicas"] == target and str(new) in doc["nodes"], doc
    assert any((tmp_path / "replicas" / str(new)).rglob("*.log"))
