"""link_proxy: every node's inter-broker and controller links pass a fault proxy (Toxiproxy,
``cluster/facilities/impl/linkproxy.py``), so a fault can slow, drop or cut them while
clients keep their direct listener. On the docker backend the proxy runs on the host and
listens on the cluster network's gateway (``cluster/docker/links.py``).

Prepared once: Toxiproxy built with ``go install``. Adds to a node: the proxied voters and
a ``REPLICATION`` listener advertised at its proxy port; on docker, that listener and the
controller's published on loopback. Swept: Toxiproxy servers whose owner died.
"""

from __future__ import annotations

from ..kafka.config import NodeAddress
from .facility import Attachment, ContainerParts, Facility, Site


class ProxiedLinks(Attachment):
    """The process backend's: the proxy forwards to each node's own ports on loopback."""

    def __init__(self, site: Site):
        from .impl import linkproxy  # pulls in psutil: the plugin's import stays light

        addresses = [NodeAddress(n.node_id, n.host, n.port, n.controller_port)
                     for n in site.nodes]
        self.handle = linkproxy.start_for(site.workdir, site.host, addresses)

    def voters(self, voters: str) -> str:
        return self.handle.voters()

    def node_properties(self, node_id: int, props: dict[str, str]) -> dict[str, str]:
        return self.handle.node_properties(node_id, props)

    def describe(self) -> object:
        return self.handle.describe()

    def close(self) -> None:
        self.handle.close()


class GatewayLinks(ProxiedLinks):
    """The docker backend's: the routes listen on the network's gateway, the nodes'
    listeners are published on the host's loopback."""

    def __init__(self, site: Site):
        from ..docker.links import DockerLinks  # pulls in psutil

        self.routes = DockerLinks(site.workdir, site.network, [n.node_id for n in site.nodes])
        self.controller_ports = {n.node_id: n.controller_port for n in site.nodes}
        self.handle = self.routes.proxy
        self.handle.start()

    def node_properties(self, node_id: int, props: dict[str, str]) -> dict[str, str]:
        return self.routes.node_properties(node_id, props)

    def container(self, node_id: int, home: str) -> ContainerParts:
        return ContainerParts(ports=self.routes.container_ports(
            node_id, self.controller_ports[node_id]))


def attach(site: Site) -> Attachment:
    return GatewayLinks(site) if site.backend == "docker" else ProxiedLinks(site)


def prepare() -> object:
    from .impl import linkproxy  # pulls in psutil

    return linkproxy.ensure_toxiproxy()


def sweep() -> object:
    from .impl import linkproxy  # pulls in psutil

    return linkproxy.reap_orphan_proxies()


FACILITY = Facility(name="link_proxy", doc="every inter-node link through a fault proxy",
                    key="links", backends=("process", "docker"), attach=attach,
                    describe_as="links", prepare=prepare, sweep=sweep)
