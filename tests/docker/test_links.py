"""Link faults on the docker backend: a 3-container cluster whose replication and controller
links pass the host's Toxiproxy at the cluster network's gateway
(``ClusterSpec(facilities={"link_proxy"}, backend="docker")``). Each fault is struck,
measured on the degraded route, restored and measured again; a one-way partition of a
leader shrinks its ISR while nothing reaches it and regrows it after the heal, with nothing
acknowledged lost; no proxy outlives the cluster."""

from __future__ import annotations

import re

import psutil
import pytest

from pytest_kreplica.cluster import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.docker.links import REPLICATION_PORT
from pytest_kreplica.faults import links
from tests.acked import produce_until
from tests.one_way import one_way_cycle


@pytest.fixture(scope="module")
def links_cluster(docker_client, tmp_path_factory):
    from pytest_kreplica.cluster.docker.cluster import DockerCluster

    c = DockerCluster(ClusterSpec(brokers=3, backend="docker",
                                  facilities=frozenset({"link_proxy"})),
                      tmp_path_factory.mktemp("docker-links"))
    c.start(timeout=180)
    pid = c.facility("link_proxy").pid
    yield c
    c.close()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, \
        f"Toxiproxy (pid {pid}) outlived close()"
    assert c.facility("link_proxy") is None


def test_the_nodes_talk_through_the_proxy_on_the_gateway(links_cluster):
    """Every node advertises its route on the gateway for replication and the voters name
    the routes; the proxy carries traffic (its routes saw connections) and clients keep the
    published EXTERNAL ports."""
    proxy = links_cluster.facility("link_proxy")
    gateway = proxy.listen_at
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", gateway) and gateway != "127.0.0.1"
    props = (links_cluster.workdir / "node-1" / "server.properties").read_text()
    route = proxy.routes["n1-replication"]
    assert f"REPLICATION://0.0.0.0:{REPLICATION_PORT}" in props
    assert f"REPLICATION://{gateway}:{route.listen}" in props
    assert "inter.broker.listener.name=REPLICATION" in props
    for node in links_cluster.nodes:
        assert f"{node.node_id}@{gateway}:{proxy.routes[f'n{node.node_id}-controller'].listen}" \
            in props
    assert links_cluster.describe()["links"]["routes"]["n1-replication"] == \
        f"{gateway}:{route.listen} -> 127.0.0.1:{route.upstream}"
    name = "links-carried"
    links_cluster.create_topics([TopicSpec(name, partitions=1, replication_factor=3)],
                                timeout=60)
    links_cluster.wait_healthy([name], timeout=60)
    # the followers fetch through the proxy: Toxiproxy lists connections per route only in
    # its stats, so look for the node-side sockets instead: the proxy's process holds
    # established connections on its gateway routes
    conns = [c for c in psutil.Process(proxy.pid).net_connections("tcp")
             if c.status == psutil.CONN_ESTABLISHED and c.laddr and c.laddr.ip == gateway]
    assert conns, "no node connected to the proxy's routes on the gateway"


@pytest.mark.parametrize("failure", sorted(links.LINK_FAULTS))
def test_fault_acts_in_the_containers_links_and_heals(links_cluster, failure):
    name = f"dlinks-{failure}".replace("_", "-")
    links_cluster.create_topics([TopicSpec(name, partitions=1, replication_factor=3)],
                                timeout=60)
    node = links_cluster.partition_state(name, 0).leader
    try:
        measured = links.strike(links_cluster, node, failure)
        assert len(links_cluster.facility("link_proxy").toxics(f"n{node}-replication")) == \
            len(links.LINK_FAULTS[failure].toxics)
    finally:
        healed = links.restore(links_cluster, node, failure)
    assert links_cluster.facility("link_proxy").toxics(f"n{node}-replication") == []
    if failure == "slow_link":
        rtt = float(re.search(r"round trip (\d+) ms", measured).group(1))
        assert rtt >= links.LATENCY_MS, measured
    elif failure == "one_way_partition":
        assert "toward the node no answer" in measured, measured
    else:
        assert int(re.search(r"(\d+) of \d+ connections reset", measured).group(1)) > 0
    assert float(re.search(r"round trip (\d+) ms", healed).group(1)) < 1000, healed
    links_cluster.wait_healthy([name], timeout=90)


def test_one_way_partition_of_a_leader_shrinks_and_regrows_its_isr(links_cluster):
    """Nothing reaches the leader's container over its links: its followers leave the ISR;
    after the heal it is full again and every record acknowledged with acks=all is there.
    The leader is not the active controller (cutting the quorum leader is another fault)."""
    print("docker:", one_way_cycle(links_cluster, "dlinks-one-way-isr", produce_until))
