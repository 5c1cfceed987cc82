"""controller_membership: a KRaft controller voter removed from the quorum and added back
while the producer runs (KIP-853 dynamic quorums, Kafka 3.9+), the way an
operator does it: ``kafka-metadata-quorum remove-controller`` with the voter's id and
metadata directory id, later ``add-controller`` with the node's own configuration.

The cluster is formatted as a dynamic quorum (facility ``dynamic_quorum``: every
node a voter named at format time, ``controller.quorum.bootstrap.servers``). The victim runs
on throughout, as a broker and, while removed, as an observer of the metadata log. With
``target: controller`` the active controller removes itself: it resigns and the remaining
voters elect a leader (the nemesis measures that failover).

Verified to act: the strike returns once DescribeQuorum lists the node among the observers
and not the voters, the restore once it is a voter again; both events carry the voter sets
and quorum leaders before and after. Process backend only (the tool runs beside local JVMs
and reads the node's own server.properties).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cluster.kafka import distribution
from ..errors import ClusterError
from ..waits import wait_for
from .failure import GONE_AT_RECOVERY, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster

QUORUM_TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"
TOOL_TIMEOUT_S = 60.0
ACT_TIMEOUT_S = 30.0  # the voter change must show in DescribeQuorum within this
LOOK_TIMEOUT_S = 5.0  # one DescribeQuorum look while waiting for that change


def _tool(cluster: Cluster, *args: str, what: str) -> str:
    """``kafka-metadata-quorum --bootstrap-controller <every controller>``; what it said
    (its configuration dump and log lines left out)."""
    version = getattr(cluster, "kafka_version", None) or cluster.spec.kafka_version
    controllers = ",".join(f"{n.host}:{n.controller_port}" for n in cluster.nodes)
    out = distribution.run_tool(version, QUORUM_TOOL, "--bootstrap-controller", controllers,
                                *args, what=what, timeout=TOOL_TIMEOUT_S)
    said = [line for line in out.splitlines()
            if line and not line.startswith(("[", " ", "\t"))]
    return said[-1] if said else "no output"


def membership(cluster: Cluster, timeout: float = ACT_TIMEOUT_S
               ) -> tuple[list[int], list[int], int | None]:
    """The quorum's voters, observers and leader (DescribeQuorum, asked again within
    ``timeout`` s while the client errs)."""
    q = cluster.quorum(timeout=timeout)
    voters = sorted(v["replica_id"] for v in q.get("current_voters") or [])
    observers = sorted(o["replica_id"] for o in q.get("observers") or [])
    return voters, observers, q.get("leader_id")


def directory_id(cluster: Cluster, node: int) -> str:
    """The node's metadata directory id (its ``meta.properties``; combined nodes keep the
    metadata log in their one log dir)."""
    meta = cluster.node(node).log_dir / "meta.properties"
    for line in meta.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "directory.id":
            return value.strip()
    raise ClusterError(f"{meta}: no directory.id (expected a formatted KRaft log dir)")


def _wait_membership(cluster: Cluster, node: int, voter: bool) -> tuple[list[int], int | None]:
    seen: list = [[], [], None]

    def check() -> str | None:
        seen[:] = membership(cluster, timeout=LOOK_TIMEOUT_S)  # one look of the wait below
        if (node in seen[0]) == voter and (voter or node in seen[1]):
            return None
        return f"voters {seen[0]}, observers {seen[1]}"

    state = "a voter" if voter else "an observer, no longer a voter"
    wait_for(check, ACT_TIMEOUT_S, f"node {node} {state} of the KRaft quorum (DescribeQuorum)")
    return seen[0], seen[2]


def strike(cluster: Cluster, node: int) -> str:
    """Remove the node's voter; returns the voter sets before and after."""
    before, _, leader = membership(cluster)
    if node not in before:
        raise ClusterError(f"node {node} is not a voter of the KRaft quorum (voters {before}): "
                         "expected a cluster formatted as a dynamic quorum")
    said = _tool(cluster, "remove-controller", "--controller-id", str(node),
                 "--controller-directory-id", directory_id(cluster, node),
                 what=f"remove-controller of node {node}")
    after, new_leader = _wait_membership(cluster, node, voter=False)
    return (f"voters {before} (quorum leader {leader}) -> {after} (quorum leader "
            f"{new_leader}); node {node} runs on as an observer ({said})")


def restore(cluster: Cluster, node: int, timeout: float) -> str:
    """Add the node back as a voter, from its own configuration."""
    config = cluster.node(node).log_file.with_name("server.properties")
    said = _tool(cluster, "--command-config", str(config), "add-controller",
                 what=f"add-controller of node {node}")
    after, leader = _wait_membership(cluster, node, voter=True)
    return f"node {node} a voter again: voters {after} (quorum leader {leader}; {said})"


FAILURE = Failure(
    name="controller_membership", doc="its KRaft controller voter removed from the quorum "
    "(it runs on as a broker and observer), then added back (dynamic quorum, process backend)",
    event="remove_voter", restore_event="add_voter", colour="#7b4173",
    label="controller voter removed", backends=("process",), moves_leadership=False,
    leader_gone=GONE_AT_RECOVERY, random=False, strike=strike, restore=restore,
    facilities=frozenset({"dynamic_quorum"}))
