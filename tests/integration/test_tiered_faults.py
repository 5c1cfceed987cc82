"""The faults aimed at tiering, on a real 3-node tiered cluster (Kafka's LocalTieredStorage):
a follower restarted with an empty disk rebuilds from the tier boundary, and a remote store
frozen for a while makes uploads fail, then catches up; each verified to act, and the
remote tier still passes its check afterwards."""

from __future__ import annotations

import json
import re
import threading
from types import SimpleNamespace

import pytest

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.facilities.impl import tiered, tieredfreeze
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.faults import empty_restart, remote_store
from pytest_kreplica.scenarios import tiered as tiered_step

MESSAGES = 1500
SEGMENT = {"segment.bytes": "2048", "min.insync.replicas": "2"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = ClusterSpec(brokers=3, facilities=frozenset({"tiered_storage"}))
    c = ProcessCluster(spec, tmp_path_factory.mktemp("tiered-faults"))
    try:
        c.start(timeout=120)
        yield c
    finally:
        c.close()


def _produce(cluster, topic, run_dir):
    """MESSAGES ids with acks=all; sends.jsonl of the acknowledged ones."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.live_bootstrap_servers(), acks="all",
                             linger_ms=5, batch_size=1024, request_timeout_ms=15000)
    try:
        assert producer.partitions_for(topic), f"no metadata for {topic} after its creation"
        futures = [(f"id-{i}", producer.send(topic, f"id-{i}".encode(), partition=0))
                   for i in range(MESSAGES)]
        producer.flush(timeout=60)
        rows = [{"process": 0, "topic": topic, "partition": 0, "id": rid,
                 "offset": f.get(timeout=30).offset, "status": "ok"} for rid, f in futures]
    finally:
        producer.close(timeout=10)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "sends.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _tiered_topic(cluster, topic, run_dir):
    cluster.create_topics([TopicSpec(topic, 1, 3, {**SEGMENT, **tiered.topic_config()})],
                          timeout=60)
    _produce(cluster, topic, run_dir)
    ctx = SimpleNamespace(case=SimpleNamespace(partitions=1), cluster=cluster, topics=[topic],
                          run_dir=run_dir, extra={})
    return ctx


def _checks(ctx):
    tiered_step.final_read_step(ctx)
    return {c["name"]: c for c in ctx.extra["checks"]}


def test_a_follower_restarted_empty_rebuilds_from_the_tier_boundary(cluster, tmp_path):
    topic = "tiered-empty-restart"
    ctx = _tiered_topic(cluster, topic, tmp_path)
    checks = _checks(ctx)  # waits until the leader's local log starts past 0
    assert checks["tiered read"]["ok"], checks
    state = cluster.partition_state(topic, 0)
    follower = next(n for n in state.isr if n != state.leader)
    folder = cluster.node(follower).log_dir / f"{topic}-0"
    assert folder.is_dir()

    struck = empty_restart.strike(cluster, follower)
    assert not folder.exists(), struck  # the partition's data really is gone
    assert (cluster.node(follower).log_dir / "meta.properties").is_file()
    assert re.search(r"[1-9]\d* of them had remote segments", struck), struck
    healed = empty_restart.restore(cluster, follower, 120)
    assert "rebuilt from the tier boundary" in healed, healed
    first = min(int(p.stem) for p in folder.glob("*.log"))
    assert first > 0, (healed, sorted(p.name for p in folder.iterdir()))
    assert follower in cluster.partition_state(topic, 0).isr

    again = _checks(SimpleNamespace(**{**vars(ctx), "extra": {}}))
    assert again["tiered read"]["ok"] and again["remote tier"]["ok"], again


def _keep_producing(cluster, topic, stop):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.live_bootstrap_servers(), acks="all",
                             linger_ms=5, batch_size=1024)
    try:
        i = 0
        while not stop.is_set():
            producer.send(topic, f"bg-{i}".encode(), partition=0)
            i += 1
            if i % 50 == 0:
                producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)


def test_a_frozen_remote_store_fails_uploads_then_catches_up(cluster, tmp_path):
    topic = "tiered-frozen-store"
    ctx = _tiered_topic(cluster, topic, tmp_path)
    store = tiered.store_dir(cluster.workdir)
    leader = cluster.partition_state(topic, 0).leader
    stop = threading.Event()
    worker = threading.Thread(target=_keep_producing, args=(cluster, topic, stop), daemon=True)
    worker.start()
    try:
        struck = remote_store.FAILURE.strike(cluster, leader)
        assert tieredfreeze.is_frozen(store)
        assert tieredfreeze.write_refused(store) is not None, struck
        assert "copy errors logged" in struck, struck
        healed = remote_store.FAILURE.restore(cluster, leader, 60)
        assert re.match(r"[1-9]\d* copy errors logged while the store was frozen", healed), \
            healed
        assert not tieredfreeze.is_frozen(store)
        assert tieredfreeze.write_refused(store) is None, healed
    finally:
        stop.set()
        worker.join(timeout=60)
        tieredfreeze.thaw(store)
    assert not worker.is_alive(), "the background producer did not stop within 60 s"
    checks = _checks(ctx)
    assert checks["remote tier"]["ok"], checks
    assert checks["tiered read"]["ok"], checks
