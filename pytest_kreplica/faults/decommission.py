"""broker_decommission: a broker removed from the running cluster while the producer runs,
the way an operator does it: every replica it holds (the case's topics
and the internal ones) reassigned to the other brokers and waited for, then the broker
stopped (SIGTERM, controlled shutdown) and unregistered from the KRaft controller
(``kafka-cluster.sh unregister``: ClusterTool from the version's kafka-tools jars).

Verified to act: the strike returns once the moves are complete in metadata and
DescribeCluster (fenced brokers included) no longer lists the node; the event carries the
old and new assignment and the brokers seen. The restore starts the node again on its old
directory: it registers as a new, empty broker (it holds none of the moved replicas), so a
pooled cluster is whole for the next case while the final snapshot shows the new assignment.
Process backend only: the tool runs beside local JVMs (a docker cluster would need it run in
a container on the cluster network; not offered there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cluster.kafka import distribution
from ..waits import wait_for
from . import moves, reassign
from .failure import GONE_AT_RECOVERY, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster

CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"
TOOL_TIMEOUT_S = 60.0
MOVE_TIMEOUT_S = 60.0  # the replicas must have left the node before it is stopped


def unregister(cluster: Cluster, node: int) -> str:
    """``kafka-cluster.sh unregister --id node`` against the running nodes; its output."""
    version = getattr(cluster, "kafka_version", None) or cluster.spec.kafka_version
    out = distribution.run_tool(version, CLUSTER_TOOL, "unregister", "--bootstrap-server",
                                cluster.live_bootstrap_servers(), "--id", str(node),
                                what=f"unregister of node {node}", timeout=TOOL_TIMEOUT_S)
    said = [line for line in out.splitlines() if line and not line.startswith(("[", " "))]
    return said[-1] if said else ""  # "Broker N is no longer registered." (log lines left out)


def registered_brokers(cluster: Cluster) -> list[int]:
    """Every broker DescribeCluster lists, fenced ones included."""
    with moves.admin_client(cluster) as admin:
        return sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"])


def await_listed(cluster: Cluster, node: int, listed: bool) -> list[int]:
    """Wait (bounded) until DescribeCluster lists ``node`` (or no longer does) and return
    the brokers it lists; a client error while a node stops or opens its listener is one
    more look."""
    seen: list[list[int]] = [[]]

    def settled() -> str | None:
        seen[0] = registered_brokers(cluster)
        return None if (node in seen[0]) == listed else f"brokers {seen[0]}"

    wait_for(settled, moves.ACT_TIMEOUT_S,
             f"node {node} {'in' if listed else 'gone from'} DescribeCluster")
    return seen[0]


def strike(cluster: Cluster, node: int) -> str:
    """Move every replica off ``node``, stop it, unregister it; returns what was moved and
    the brokers DescribeCluster lists afterwards."""
    before = moves.topic_states(cluster, internal=True)
    brokers = [b for b in moves.running_brokers(cluster) if b != node]
    planned = reassign.plan_moves(before, node, brokers)
    reassign.submit(cluster, before, planned)
    _, moved_s = reassign.wait_complete(cluster, planned, MOVE_TIMEOUT_S)
    cluster.terminate(node)
    said = unregister(cluster, node)
    brokers_now = await_listed(cluster, node, listed=False)
    case_moves = {p: r for p, r in planned.items() if not p[0].startswith("__")}
    return (f"moved {reassign.assignment(before, case_moves)} (and "
            f"{len(planned) - len(case_moves)} internal partitions) in {moved_s:.2f} s; "
            f"node {node} stopped and unregistered ({said or 'no output'}); brokers now "
            f"{brokers_now}")


def restore(cluster: Cluster, node: int, timeout: float) -> str:
    """Start the node again: it registers as an empty broker."""
    cluster.start_node(node, timeout=timeout)
    return (f"node {node} registered again as an empty broker: brokers "
            f"{await_listed(cluster, node, listed=True)}")


FAILURE = Failure(
    name="broker_decommission", doc="its replicas reassigned to the other brokers, then "
    "stopped and unregistered; started again empty (needs brokers > replication_factor)",
    event="decommission", restore_event="recommission", colour="#ad494a",
    label="broker decommissioned", backends=("process",), moves_leadership=True,
    leader_gone=GONE_AT_RECOVERY, random=False, strike=strike, restore=restore,
    struck_state="stopped")
