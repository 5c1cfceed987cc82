"""Tiered storage on a real 3-node cluster (Kafka's LocalTieredStorage): closed segments
reach the remote store and leave the local logs, the final read from offset 0 crosses the
tier boundary, the copied remote tier passes its check, a remote segment deleted by hand is
found, and a topic that never tiers fails the tiered checks instead of passing unnoticed."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.facilities.impl import tiered
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.scenarios import tiered as tiered_step
from pytest_kreplica.validation.replicas.remote import REMOTE_DIR, check_remote

MESSAGES = 1500
SEGMENT = {"segment.bytes": "2048", "min.insync.replicas": "2"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    spec = ClusterSpec(brokers=3, facilities=frozenset({"tiered_storage"}))
    c = ProcessCluster(spec, tmp_path_factory.mktemp("tiered"))
    try:
        c.start(timeout=120)
        yield c
    finally:
        c.close()


def _produce(cluster, topic, run_dir):
    """Send MESSAGES ids with acks=all (batches below the 2 KiB segments); sends.jsonl of
    the acknowledged ones."""
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


def _context(cluster, topic, run_dir):
    """What the step reads of a CaseContext."""
    return SimpleNamespace(case=SimpleNamespace(partitions=1), cluster=cluster, topics=[topic],
                           run_dir=run_dir, extra={})


def _checks(ctx):
    return {c["name"]: c for c in ctx.extra["checks"]}


def test_the_final_read_crosses_the_tier_boundary_and_the_remote_tier_holds_every_ack(
        cluster, tmp_path):
    topic = "tiered-read"
    cluster.create_topics([TopicSpec(topic, 1, 3, {**SEGMENT, **tiered.topic_config()})],
                          timeout=60)
    _produce(cluster, topic, tmp_path)
    ctx = _context(cluster, topic, tmp_path)
    tiered_step.final_read_step(ctx)
    checks = _checks(ctx)
    assert checks["tiered read"]["ok"], checks
    assert checks["remote tier"]["ok"], checks
    remote_reads = ctx.extra["extra_counts"]["remote_reads"]
    local_start = ctx.extra["tiered"]["local_starts"][f"{topic}-0"]
    assert remote_reads == local_start > 0  # every offset below the local start, read once
    assert ctx.extra["tiered"]["read"]["records"] == MESSAGES
    # the remote tier as Kafka left it: more than one segment, and a local log that starts
    # where the remote one ends or before
    part = ctx.extra["tiered"]["remote"]["partitions"][0]
    assert part["segments"] >= 2 and part["remote_end"] + 1 >= local_start

    # a planted violation: the first remote segment (below the local log start, so in no
    # tier now) deleted by hand is found
    copies = sorted((tmp_path / REMOTE_DIR / f"{topic}-0").glob("*.log"))
    copies[0].unlink()
    acked = tiered_step.acked_offsets(tmp_path)
    verdict = check_remote(tmp_path, {(topic, 0): local_start}, acked)
    assert not verdict["valid"]
    assert verdict["counts"]["gaps"] > 0 and verdict["counts"]["missing_acked"] > 0


def test_a_topic_that_never_tiers_fails_the_tiered_checks(cluster, tmp_path, monkeypatch):
    """The same records on a topic without remote.storage.enable: the remote store stays
    empty and the local log keeps offset 0, so the tiered read must not pass."""
    topic = "never-tiered"
    cluster.create_topics([TopicSpec(topic, 1, 3, SEGMENT)], timeout=60)
    _produce(cluster, topic, tmp_path)
    monkeypatch.setattr(tiered_step, "TIER_WAIT_S", 8.0)
    ctx = _context(cluster, topic, tmp_path)
    tiered_step.final_read_step(ctx)
    check = _checks(ctx)["tiered read"]
    assert not check["ok"]
    assert "a remote segment of every partition" in check["detail"]
    assert "0 remote segments, local start 0" in check["detail"]
