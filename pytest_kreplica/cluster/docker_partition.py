"""The docker backend's network partition (failure ``partition``): iptables DROP rules in a
chain of the node's own network namespace (the container has NET_ADMIN), so the broker keeps
running and only its links go. A mixin of ``DockerCluster``, which holds the containers."""

from __future__ import annotations

from ..errors import ClusterError, InputError
from .base import NodeState

CHAIN = "KREPLICA"  # iptables chain holding a node's partition rules


class IptablesPartitions:
    """``partition`` / ``heal`` / ``partitioned`` of a docker cluster."""

    def partition(self, node_id: int, from_clients: bool = False) -> None:
        """Cut ``node_id`` off from every other node (and from clients when asked) with
        DROP rules inside its network namespace; the broker keeps running."""
        peers = [self._ip(other) for other in self._containers if other != node_id]
        rules = [f"iptables -A {CHAIN} -s {ip} -j DROP && iptables -A {CHAIN} -d {ip} -j DROP"
                 for ip in peers]
        if from_clients:  # everything but loopback: the host's clients come via the gateway
            rules = [f"iptables -A {CHAIN} ! -i lo -j DROP", f"iptables -A {CHAIN} ! -o lo -j DROP"]
        script = (f"iptables -N {CHAIN} 2>/dev/null; iptables -F {CHAIN} && "
                  f"(iptables -C INPUT -j {CHAIN} 2>/dev/null || iptables -I INPUT -j {CHAIN}) && "
                  f"(iptables -C OUTPUT -j {CHAIN} 2>/dev/null || iptables -I OUTPUT -j {CHAIN})"
                  + "".join(f" && {rule}" for rule in rules))
        self._exec_root(node_id, script)
        self._partitioned[node_id] = from_clients
        self._invalidate_admin()

    def heal(self, node_id: int | None = None, timeout: float = 60.0) -> None:
        """With ``node_id``: remove that node's partition rules (a no-op when it has none).
        Without: every fault undone, links included, then the health gate."""
        if node_id is None:
            for cut in list(self._partitioned):
                self.heal(cut)
            super().heal(None, timeout)
            return
        if node_id in self._partitioned:
            self._exec_root(node_id, f"iptables -F {CHAIN}")
            self._partitioned.pop(node_id, None)
            self._invalidate_admin()

    def partitioned(self) -> dict[int, bool]:
        """Nodes cut off now (node id -> also cut from clients)."""
        return dict(self._partitioned)

    def _ip(self, node_id: int) -> str:
        container = self._container(node_id)
        container.reload()
        return container.attrs["NetworkSettings"]["Networks"][self.name]["IPAddress"]

    def _exec_root(self, node_id: int, script: str) -> None:
        container = self._container(node_id)
        if self.node_state(node_id) is not NodeState.RUNNING:
            raise InputError(f"cannot change the network of node {node_id}: it is "
                             f"{self.node_state(node_id).value}, not running")
        code, output = container.exec_run(["sh", "-c", script], user="0:0")
        if code != 0:
            text = output.decode(errors="replace").strip()
            hint = ("; the image needs iptables (the kreplica image has it: unset "
                    "KREPLICA_DOCKER_IMAGE)" if "not found" in text else "")
            raise ClusterError(f"iptables in container {container.name} failed "
                               f"(exit {code}): {text}{hint}")
