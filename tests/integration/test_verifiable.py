"""C.7c: Kafka's Java VerifiableProducer (3.9.2 tools) and VerifiableConsumer (newest tools)
beside a kafka-python consumer against one real broker of the newest version; their event
lines become one history the checker judges valid."""

from __future__ import annotations

import pytest

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec
from pytest_kreplica.history import RunWriter, write_run_json

MESSAGES = 200


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from pytest_kreplica.cluster.process.cluster import ProcessCluster

    c = ProcessCluster(ClusterSpec(brokers=1), tmp_path_factory.mktemp("verifiable"))
    try:
        c.start(timeout=180)
        yield c
    finally:
        c.close()


def test_java_clients_of_two_versions_write_a_valid_history(cluster, tmp_path):
    from pytest_kreplica.validation.checker import check
    from pytest_kreplica.workloads.plain import Consumer
    from pytest_kreplica.workloads.verifiable import java_consume, java_produce

    cluster.create_topics([TopicSpec("vt", 2, 1)])
    write_run_json(tmp_path, {"semantics": "at-least-once"})
    with RunWriter(tmp_path) as writer:
        python_consumer = Consumer(["vt"], 2, cluster.live_bootstrap_servers, writer).start()
        acked = java_produce("3.9.2", cluster.bootstrap_servers, "vt", MESSAGES, writer,
                             tmp_path)
        assert len(acked) == MESSAGES
        assert not java_consume(None, cluster.bootstrap_servers, "vt", acked, writer, tmp_path)
        assert not python_consumer.drain(acked, 120)
    verdict = check(tmp_path)
    assert verdict.valid, verdict.summary()
    assert verdict.counts["acked"] == MESSAGES
    assert verdict.counts["polled"] >= 2 * MESSAGES  # both consumers read everything
