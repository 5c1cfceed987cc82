"""Network partitions on real containers: the links really go, the broker keeps running,
and after heal the node is back in the ISR; a cut or a heal that did not act is a harness
error (the backend reads both back from a peer)."""

from __future__ import annotations

import re

import pytest
from kafka import KafkaProducer
from kafka.errors import KafkaError
from tenacity import retry, stop_after_delay, wait_fixed

from pytest_kreplica.cluster import NodeState
from pytest_kreplica.cluster.docker import partition as docker_partition
from pytest_kreplica.errors import ClusterError

from .conftest import kafka_answers, peer_connects


def producer_to(node, acks="all") -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=node.address, acks=acks, retries=0,
                         request_timeout_ms=6000, max_block_ms=10000, linger_ms=0,
                         reconnect_backoff_max_ms=500)


@pytest.mark.parametrize("from_clients", [False, True], ids=["peers", "peers-and-clients"])
def test_partitioned_leader_cannot_commit_and_rejoins(healthy, topic, from_clients):
    cluster = healthy
    leader = cluster.leader(topic, 0)
    peers = [n.node_id for n in cluster.nodes if n.node_id != leader]
    producer = producer_to(cluster.node(leader))
    try:
        producer.send(topic, b"before").get(timeout=30)  # metadata says: leader is `leader`

        seen = cluster.partition(leader, from_clients=from_clients)

        assert seen.endswith(f"to node {leader}: 9092 timed out, 9093 timed out"), seen

        assert cluster.partitioned() == {leader: from_clients}
        assert cluster.node_state(leader) is NodeState.RUNNING  # the broker keeps running
        for peer in peers:
            assert not peer_connects(cluster, peer, leader)
            assert not peer_connects(cluster, leader, peer)
        assert peer_connects(cluster, peers[0], peers[1])
        assert kafka_answers("127.0.0.1", cluster.node(leader).port) is not from_clients
        with pytest.raises(KafkaError):
            producer.send(topic, b"during").get(timeout=30)
        new = cluster.wait_for_leader(topic, 0, not_in={leader}, timeout=45)
        assert new.leader in peers
    finally:
        producer.close(timeout=5)

    seen = cluster.heal(leader)

    assert seen.endswith(f"to node {leader}: 9092 open, 9093 open"), seen
    assert cluster.partitioned() == {}
    assert peer_connects(cluster, peers[0], leader)
    assert kafka_answers("127.0.0.1", cluster.node(leader).port)
    cluster.wait_healthy([topic], timeout=120)
    assert set(cluster.isr(topic, 0)) == {leader, *peers}


def test_partitioned_follower_leaves_isr_and_majority_commits(healthy, topic):
    cluster = healthy
    state = cluster.partition_state(topic, 0)
    follower = next(r for r in state.replicas if r != state.leader)

    cluster.partition(follower)

    @retry(stop=stop_after_delay(45), wait=wait_fixed(0.5), reraise=True)
    def shrunk() -> tuple[int, ...]:
        isr = cluster.isr(topic, 0)
        assert follower not in isr, f"expected node {follower} out of the ISR; ISR {isr}"
        return isr

    assert len(shrunk()) == 2
    producer = producer_to(cluster.node(cluster.leader(topic, 0)))
    try:
        meta = producer.send(topic, b"majority").get(timeout=30)  # acks=all: 2 of 3 suffice
        assert meta.offset >= 0
    finally:
        producer.close(timeout=5)

    cluster.heal(follower)
    cluster.wait_healthy([topic], timeout=120)

    # metadata reaches each broker on its own schedule: wait_healthy saw a full ISR through
    # one broker; the broker the next question goes to may still answer with the old one
    @retry(stop=stop_after_delay(30), wait=wait_fixed(0.5), reraise=True)
    def rejoined() -> None:
        isr = cluster.isr(topic, 0)
        assert follower in isr, f"expected node {follower} back in the ISR after heal; ISR {isr}"

    rejoined()


def test_a_cut_or_a_heal_that_did_not_act_is_a_cluster_error(healthy, monkeypatch):
    """Planted: the iptables scripts never run (everything else, the probes from a peer
    included, is the product's)."""
    cluster, node = healthy, healthy.nodes[-1].node_id
    monkeypatch.setattr(docker_partition, "VERIFY_S", 3.0)
    run_iptables = cluster._exec_root
    monkeypatch.setattr(cluster, "_exec_root", lambda node_id, script: None)
    expected = (rf"the {{}} of node {node} did not act: expected every TCP connect from node "
                rf"\d to node {node}'s ports \[9092, 9093\] {{}} within 3 s; last seen: from "
                rf"node \d to [\d.]+: 9092 {{}}, 9093 {{}}")
    with pytest.raises(ClusterError, match=expected.format("partition", "timed out", "open",
                                                           "open")):
        cluster.partition(node)
    assert cluster.partitioned() == {node: False}  # left for a heal to undo

    monkeypatch.setattr(cluster, "_exec_root", run_iptables)
    cluster.heal(node)
    assert "timed out" in cluster.partition(node)  # a real cut, read back
    monkeypatch.setattr(cluster, "_exec_root", lambda node_id, script: None)
    with pytest.raises(ClusterError, match=expected.format("heal", "open", "timed out",
                                                           "timed out")):
        cluster.heal(node)
    assert cluster.partitioned() == {node: False}  # still cut: the next heal flushes it

    monkeypatch.setattr(cluster, "_exec_root", run_iptables)
    assert re.search(r"9092 open, 9093 open$", cluster.heal(node))
    assert cluster.partitioned() == {}
