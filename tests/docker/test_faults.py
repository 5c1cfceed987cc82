"""Each fault type and each role, on real containers: the fault shows in the container's
state and in the cluster's own view of roles, and the cluster heals afterwards.

Each fault runs once and each role is struck once (not the 3 x 3 product): a strike is the
same container call whatever role the node has, and what a role's failure does to the
cluster is Kafka's own behaviour, which the process backend's leader, follower and
controller matrices cover case by case."""

from __future__ import annotations

import pytest
from tenacity import retry, stop_after_delay, wait_fixed

from pytest_kreplica.cluster import NodeState


def target_of(cluster, topic: str, role: str) -> int:
    state = cluster.partition_state(topic, 0)
    if role == "leader":
        return state.leader
    if role == "follower":
        return next(r for r in state.replicas if r != state.leader)
    return cluster.active_controller()


def wait_role_moved(cluster, topic: str, role: str, node: int) -> None:
    """The cluster itself notices the failed node: leadership, ISR or quorum leader moves."""
    if role == "leader":
        cluster.wait_for_leader(topic, 0, not_in={node}, timeout=45)
        return

    @retry(stop=stop_after_delay(45), wait=wait_fixed(0.5), reraise=True)
    def moved() -> None:
        if role == "follower":
            isr = cluster.isr(topic, 0)
            assert node not in isr, f"expected node {node} out of the ISR; ISR is {isr}"
        else:
            active = cluster.active_controller()
            assert active != node, f"expected a new quorum leader; still node {node}"

    moved()


@pytest.mark.parametrize(("fault", "role"), [("kill", "leader"), ("pause", "follower"),
                                             ("terminate", "controller")])
def test_fault_then_recovery(healthy, topic, fault, role):
    cluster = healthy
    node = target_of(cluster, topic, role)
    getattr(cluster, fault)(node)

    container = cluster._container(node)
    container.reload()
    if fault == "pause":
        assert cluster.node_state(node) is NodeState.PAUSED
        assert container.attrs["State"]["Paused"] is True
    else:
        assert cluster.node_state(node) is NodeState.STOPPED
        # the broker was the container's PID 1: its exit status names the signal
        expected = 143 if fault == "terminate" else 137
        assert container.attrs["State"]["ExitCode"] == expected, container.attrs["State"]
    wait_role_moved(cluster, topic, role, node)

    if fault == "pause":
        cluster.resume(node)
    else:
        cluster.start_node(node, timeout=120)
    assert cluster.node_state(node) is NodeState.RUNNING
    cluster.wait_healthy([topic], timeout=120)

    # registered and unfenced again in the answering broker's view (bounded: a CI run under
    # load once saw a broker replay the metadata log after wait_healthy had returned)
    cluster.wait_registered(node, 30)


def test_restart_of_the_leader(healthy, topic):
    cluster = healthy
    node = target_of(cluster, topic, "leader")
    container = cluster._container(node)
    container.reload()
    started = container.attrs["State"]["StartedAt"]

    cluster.restart(node, timeout=120)

    container.reload()
    assert container.attrs["State"]["StartedAt"] != started
    assert cluster.node_state(node) is NodeState.RUNNING
    cluster.wait_healthy([topic], timeout=120)
