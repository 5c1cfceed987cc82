"""The drain on a real 3-node cluster: it ends once the consumer stands at every
partition's readable end (an acknowledged id missing there is gone), and not before: not
while records exist that it has not read, not while the leader holds records above the
high watermark, not while a partition has no leader. An id that was never written stands
for one lost from every replica."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.history import RunWriter
from pytest_kreplica.workloads.plain import Consumer

GHOST = "never-written-1"  # an acknowledged id that no replica holds


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # a paused follower stays in the ISR for 30 s (5 s by default here), so the records
    # only the leader holds stay above the high watermark while a test needs them there
    c = ProcessCluster(ClusterSpec(brokers=3, broker_config=(
        ("replica.lag.time.max.ms", "30000"),)), tmp_path_factory.mktemp("drain"))
    try:
        c.start(timeout=120)
        yield c
    finally:
        c.close()


def open_producer(cluster, topic, acks="all"):
    """A producer that already holds the topic's metadata. Opened before a follower is
    paused: a metadata refresh sent to the paused node would hang until its 60 s limit."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.live_bootstrap_servers(), acks=acks,
                             linger_ms=5, request_timeout_ms=15000)
    if not producer.partitions_for(topic):
        producer.close(timeout=10)
        raise AssertionError(f"no partitions known for topic {topic!r} after its creation")
    return producer


def send_all(producer, topic, ids, partitions):
    """Send every id and wait until each one is acknowledged; closes the producer."""
    try:
        futures = [producer.send(topic, i.encode(), partition=n % partitions)
                   for n, i in enumerate(ids)]
        producer.flush(timeout=30)
        for f in futures:
            f.get(timeout=30)
    finally:
        producer.close(timeout=10)


def produce(cluster, topic, ids, partitions, acks="all"):
    send_all(open_producer(cluster, topic, acks), topic, ids, partitions)


def drain(cluster, topic, partitions, acked, timeout, tmp_path):
    """(missing ids, seconds the drain took, its drain-end event detail)."""
    parts = [(topic, p) for p in range(partitions)]
    with RunWriter(tmp_path) as writer:
        consumer = Consumer([topic], partitions, cluster.live_bootstrap_servers,
                            writer).start()
        t0 = time.monotonic()
        missing = consumer.drain(acked, timeout, lambda: cluster.readable_ends(parts))
        took = time.monotonic() - t0
    events = (tmp_path / "events.jsonl").read_text()
    return missing, took, events


def test_a_lost_id_ends_the_drain_once_everything_readable_was_read(cluster, tmp_path):
    """The consumer starts only now, so 6000 records exist that it has not read: the drain
    reads them all, then ends long before its deadline with just the lost id missing."""
    cluster.create_topics([TopicSpec("lossy", 3, 3)])
    ids = [str(i) for i in range(6000)]
    produce(cluster, "lossy", ids, 3)
    missing, took, events = drain(cluster, "lossy", 3, set(ids) | {GHOST}, 60, tmp_path)
    assert missing == {GHOST}
    assert took < 20, f"drain took {took:.1f} s, expected an early end"
    assert "read up to every partition's readable end" in events


def test_ids_lost_with_their_leader_end_the_drain_early(cluster, tmp_path):
    """A real loss: both followers paused, 300 ids acknowledged with acks=1 by the leader
    alone, the leader killed, the followers resumed: a follower leads without those ids.
    The drain waits while the partition has no leader, then ends as soon as the consumer
    stands at the new leader's high watermark, not at its 60 s deadline."""
    cluster.create_topics([TopicSpec("lost", 1, 3)])
    kept = [f"k{i}" for i in range(100)]
    produce(cluster, "lost", kept, 1)
    state = cluster.partition_state("lost", 0)
    followers = [n for n in state.replicas if n != state.leader]
    producer = open_producer(cluster, "lost", acks=1)
    for n in followers:
        cluster.pause(n)
    # a follower's fetch already waiting at the leader would still carry the new records
    # into the paused follower's socket: let those waits (500 ms at most) run out first
    time.sleep(1.5)
    try:
        lost = [f"x{i}" for i in range(300)]
        send_all(producer, "lost", lost, 1)
        cluster.kill(state.leader)
    finally:
        for n in followers:
            cluster.resume(n)
    try:
        missing, took, events = drain(cluster, "lost", 1, set(kept) | set(lost), 60, tmp_path)
        assert cluster.partition_state("lost", 0).leader in followers
    finally:
        cluster.start_node(state.leader, timeout=90)
        cluster.wait_healthy(timeout=60)
    assert missing == set(lost), (len(missing), sorted(missing)[:5])
    assert took < 40, f"drain took {took:.1f} s, expected an end well before 60 s"
    assert "read up to every partition's readable end" in events


def test_a_clean_run_still_sees_every_id(cluster, tmp_path):
    cluster.create_topics([TopicSpec("clean", 2, 3)])
    ids = [f"c{i}" for i in range(3000)]
    produce(cluster, "clean", ids, 2)
    missing, took, events = drain(cluster, "clean", 2, set(ids), 60, tmp_path)
    assert missing == set()
    assert "every acknowledged id seen" in events


@pytest.fixture
def patient_cluster(tmp_path_factory):
    """A cluster whose paused follower is neither dropped from the ISR (lag allowed 30 s) nor
    fenced (session 60 s; KRaft drops a fenced broker from every ISR, after 3 s with this
    suite's tuned settings): the records only the leader holds stay above the high
    watermark even when producing them takes seconds on a loaded machine."""
    c = ProcessCluster(ClusterSpec(brokers=3, broker_config=(
        ("replica.lag.time.max.ms", "30000"), ("broker.session.timeout.ms", "60000"))),
        tmp_path_factory.mktemp("drain-patient"))
    try:
        c.start(timeout=120)
        yield c
    finally:
        c.close()


def test_records_above_the_high_watermark_are_waited_for(patient_cluster, tmp_path):
    """A paused follower keeps the high watermark below what the leader acknowledged with
    acks=1; the drain waits until the follower is back and the records are readable."""
    patient_cluster.create_topics([TopicSpec("behind", 1, 3)])
    state = patient_cluster.partition_state("behind", 0)
    follower = next(n for n in state.replicas if n != state.leader)
    producer = open_producer(patient_cluster, "behind", acks=1)
    patient_cluster.pause(follower)
    try:
        ids = [f"b{i}" for i in range(200)]
        send_all(producer, "behind", ids, 1)
        ends = patient_cluster.readable_ends  # the leader holds records the consumer cannot read
        with pytest.raises(Exception, match="above the high watermark"):
            ends([("behind", 0)])
        resume = threading.Timer(2.0, patient_cluster.resume, (follower,))
        resume.start()
        missing, took, _ = drain(patient_cluster, "behind", 1, set(ids) | {GHOST}, 60, tmp_path)
        resume.join()
    finally:
        patient_cluster.resume(follower)
    assert missing == {GHOST}, sorted(missing)[:10]
    assert took >= 1.5, f"drain ended after {took:.1f} s, before the records were readable"


def test_no_early_end_while_a_partition_has_no_leader(cluster, tmp_path):
    cluster.create_topics([TopicSpec("leaderless", 1, 1)])
    produce(cluster, "leaderless", ["l0", "l1"], 1)
    node = cluster.partition_state("leaderless", 0).leader
    cluster.kill(node)
    try:
        missing, took, events = drain(cluster, "leaderless", 1, {"l0", "l1", GHOST}, 6,
                                      tmp_path)
    finally:
        cluster.start_node(node, timeout=90)
    assert GHOST in missing
    assert took >= 5.5, f"drain ended after {took:.1f} s with a leaderless partition"
    assert "deadline passed" in events and "no running leader" in events
