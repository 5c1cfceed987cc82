"""Clock faults on the docker backend: a 3-container cluster whose JVMs run under the host's
libfaketime, mounted into each container
(``ClusterSpec(facilities={"fake_clock"}, backend="docker")``).
Each fault is read back from the skewed node's own ``LogAppendTime`` and reset; the other
nodes' clocks do not move, and writes keep being acknowledged through it."""

from __future__ import annotations

import re

import psutil
import pytest

from pytest_kreplica.cluster import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.docker.cluster import MOUNT
from pytest_kreplica.cluster.facilities.fake_clock import MOUNT as FAKETIME_MOUNT
from pytest_kreplica.faults import clock
from pytest_kreplica.faults.clockprobe import ClockProbe


@pytest.fixture(scope="module")
def clock_cluster(docker_client, tmp_path_factory):
    from pytest_kreplica.cluster.docker.cluster import DockerCluster

    c = DockerCluster(ClusterSpec(brokers=3, backend="docker",
                                  facilities=frozenset({"fake_clock"})),
                      tmp_path_factory.mktemp("docker-clock"))
    c.start(timeout=180)
    yield c
    c.close()


def _skew(text: str) -> float:
    return float(re.search(r"skew ([+-][\d.]+) s", text).group(1))


def test_every_container_jvm_is_preloaded_at_offset_zero(clock_cluster):
    probe = ClockProbe(clock_cluster)
    try:
        for node in clock_cluster.nodes:
            assert node.pid and clock_cluster.facility("fake_clock").loaded(node.pid), \
                f"node {node.node_id} (pid {node.pid}): no libfaketime mapped"
            probe.wait_skew(node.node_id, 0.0, clock.TOLERANCE_S, 15, "a fresh node")
    finally:
        probe.close()
    env = psutil.Process(clock_cluster.nodes[0].pid).environ()
    assert env["LD_PRELOAD"].startswith(FAKETIME_MOUNT + "/")
    assert env["FAKETIME_TIMESTAMP_FILE"] == f"{MOUNT}/faketime.rc"


@pytest.mark.parametrize("failure", ["clock_skew", "clock_skew_back"])
def test_a_bump_acts_on_the_struck_container_only_and_resets(clock_cluster, failure):
    name = f"clock-{failure}".replace("_", "-")
    clock_cluster.create_topics([TopicSpec(name, partitions=1, replication_factor=3)],
                                timeout=60)
    victim = clock_cluster.partition_state(name, 0).leader
    bystander = next(n.node_id for n in clock_cluster.nodes if n.node_id != victim)
    # the probe (its topic made through whichever broker the admin client picks) before the
    # skew: a broker whose clock went back 60 s sat on a CreateTopics past its 30 s timeout
    probe = ClockProbe(clock_cluster)
    try:
        measured = clock.strike(clock_cluster, victim, failure)
        other = probe.wait_skew(bystander, 0.0, clock.TOLERANCE_S, 15, "a bystander")
    finally:
        probe.close()
        restored = clock.restore(clock_cluster, victim, failure)
    print(f"{failure}: {measured}; bystander {other:+.1f} s; {restored}")
    expected = clock.CLOCK_FAULTS[failure].offset_s
    assert abs(_skew(measured) - expected) <= clock.TOLERANCE_S, measured
    assert abs(_skew(restored)) <= clock.TOLERANCE_S, restored
    assert abs(other) <= clock.TOLERANCE_S
