"""One broker added to a running process cluster (the ``broker_join`` fault).

The new node is broker-only (``process.roles=broker``): the quorum's voters stay as they
are (changing them is a different fault), and it joins the way an operator adds capacity,
with the cluster's id, the same ``controller.quorum.voters`` and its own port. Its storage
is formatted the way the fast path formats every node (``meta.properties`` with the cluster
id, its node id and a directory id; a broker reads no bootstrap checkpoint). It is launched
like the others (same launcher, owner marker and parent-death signal), so ``close()`` stops
it and the reaper finds it. The cluster keeps it until it is closed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import InputError
from ...waits import wait_until
from ..admin import probe
from ..base import Node
from ..kafka import config as kconfig

if TYPE_CHECKING:
    from .cluster import ProcessCluster


def _voters(cluster: ProcessCluster) -> str:
    """The running nodes' ``controller.quorum.voters``, as node 1 was given it."""
    first = cluster.nodes[0]
    for line in (first.log_file.parent / "server.properties").read_text().splitlines():
        if line.startswith("controller.quorum.voters="):
            return line.split("=", 1)[1]
    raise InputError(f"{first.log_file.parent / 'server.properties'}: no "
                     "controller.quorum.voters line; cannot join a broker to this cluster")


def add_broker(cluster: ProcessCluster, timeout: float = 60.0) -> int:
    """Start one more broker-only node in ``cluster`` and wait until it is registered
    unfenced and answers on its listener; returns its node id. Registered is not enough:
    metadata lists an unfenced broker at once, and a KRaft cluster names any live broker as
    the controller admin requests go to, while the new broker's listener may not accept
    connections yet (a CI run's AlterPartitionReassignments, sent to the joining broker, was
    refused: ECONNREFUSED)."""
    if cluster.facility("link_proxy") is not None:
        raise InputError("broker_join: a cluster whose links pass a fault proxy cannot take a "
                         "new broker (its links would bypass the proxy); allowed: a cluster "
                         "without links")
    if cluster.cluster_id is None:
        raise InputError("broker_join: the cluster has not been started")
    host = cluster.nodes[0].host
    node_id, port = cluster.reserve_node()
    home = cluster.workdir / f"node-{node_id}"
    data = home / "data"
    data.mkdir(parents=True, exist_ok=True)
    props = kconfig.server_properties(
        kconfig.NodeAddress(node_id, host, port, 0), _voters(cluster), str(data),
        cluster.spec.brokers, cluster.spec.broker_config, tuned=cluster.tuned)
    props.update({"process.roles": "broker", "listeners": f"PLAINTEXT://{host}:{port}"})
    (home / "server.properties").write_text(kconfig.render_properties(props))
    (data / "meta.properties").write_text(
        f"version=1\ncluster.id={cluster.cluster_id}\nnode.id={node_id}\n"
        f"directory.id={kconfig.new_cluster_id()}\n")
    node = Node(node_id, host, port, 0, log_dir=data, log_file=home / "server.log")
    cluster.add_node(node, timeout)
    wait_until(lambda: probe.answers(host, port), timeout,
               f"joined broker {node_id} answering ApiVersions on {host}:{port}",
               lambda: "no complete reply yet", f"its log: {node.log_file}")
    return node_id
