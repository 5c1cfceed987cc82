"""The link fault proxy of a docker cluster: the process backend's Toxiproxy, reached from the
containers at their network's gateway.

On the docker backend the nodes talk over the cluster's own bridge network. To put the proxy
between them, each node's replication and controller listeners are published on the host's
loopback only, Toxiproxy runs on the host (as for the process backend, dying with the
session) with its routes listening on the gateway address of the cluster's network (an
address of that network, made by the suite), and the nodes advertise those routes: the
``REPLICATION`` listener for replication and the controller voters for the KRaft quorum.
A container's traffic to a peer then goes container -> gateway route -> loopback published
port -> peer container, and a toxic on the route degrades it. Clients keep the ``EXTERNAL``
listener, directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import ClusterError
from .. import ports as kports
from ..facilities.impl.linkproxy import LinkProxy

REPLICATION_PORT = 9094  # the REPLICATION listener inside each container
LOOPBACK = "127.0.0.1"


def gateway(network: Any) -> str:
    """The host's address on ``network`` (a docker SDK network), where containers reach it."""
    network.reload()
    configs = (network.attrs.get("IPAM") or {}).get("Config") or []
    found = [c["Gateway"] for c in configs if c.get("Gateway") and ":" not in c["Gateway"]]
    if not found:
        raise ClusterError(f"docker network {network.name} has no IPv4 gateway (IPAM config "
                           f"{configs}); the link faults need one to reach their proxy")
    return found[0]


class DockerLinks:
    """The proxy of one docker cluster plus the loopback ports its nodes' listeners are
    published on (``published[node] = (replication, controller)``)."""

    def __init__(self, workdir: Path, network: Any, node_ids: list[int]):
        controller = kports.claim_ports(len(node_ids), LOOPBACK)
        try:
            self.proxy = LinkProxy.plan(workdir, LOOPBACK, dict(zip(node_ids, controller,
                                                                     strict=True)),
                                        listen_host=gateway(network))
        except BaseException:
            kports.release_ports(controller)
            raise
        self.proxy.ports += controller  # released with the proxy's own
        self.published = {n: (self.proxy.replication_ports[n], controller[i])
                          for i, n in enumerate(node_ids)}

    def voters(self) -> str:
        return self.proxy.voters()

    def node_properties(self, node_id: int, props: dict[str, str]) -> dict[str, str]:
        """``props`` with the node's REPLICATION listener in its container, advertised at
        its route on the gateway."""
        return self.proxy.node_properties(node_id, props, bind=f"0.0.0.0:{REPLICATION_PORT}")

    def container_ports(self, node_id: int, controller_port: int) -> dict[str, tuple]:
        """The docker SDK ``ports`` entries publishing the node's two listeners."""
        replication, controller = self.published[node_id]
        return {f"{REPLICATION_PORT}/tcp": (LOOPBACK, replication),
                f"{controller_port}/tcp": (LOOPBACK, controller)}
