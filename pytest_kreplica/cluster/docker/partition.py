"""The docker backend's network partition (failure ``partition``): iptables DROP rules in a
chain of the node's own network namespace (the container has NET_ADMIN), so the broker keeps
running and only its links go. A mixin of ``DockerCluster``, which holds the containers.

iptables' exit code says the rules were added, not that they cut anything: after a cut a
running peer's TCP connects to the node's listener ports (``listener_ports``) must fail
within ``PROBE_S``, and after the heal succeed again, each within a bounded wait, else a
``ClusterError`` names what was expected and what the peer saw. The probes stay inside the
cluster's own network. With no peer running, the node's rules are read back instead."""

from __future__ import annotations

import shlex

from ...errors import ClusterError, InputError
from ...waits import wait_for
from ..base import NodeState

CHAIN = "KREPLICA"  # iptables chain holding a node's partition rules
PROBE_S = 2  # one TCP connect from a peer: a dropped SYN times out in this bound
VERIFY_S = 12.0  # how long a cut (or a heal) may take to show from the peer
# one connect per port, at once, in the peer: "<port> open" or "<port> closed <exit code>"
PROBE = ('probe() {{ if timeout {s} bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; '
         'then echo "$2 open"; else echo "$2 closed $?"; fi; }}; {calls} wait')
TIMED_OUT = "timed out"
HOW = {"124": TIMED_OUT, "1": "refused"}  # timeout's and bash's exit codes


class IptablesPartitions:
    """``partition`` / ``heal`` / ``partitioned`` of a docker cluster."""

    listener_ports: tuple[int, ...] = ()  # the node's ports on the network (broker, controller)

    def partition(self, node_id: int, from_clients: bool = False) -> str:
        """Cut ``node_id`` off from every other node (and from clients when asked) with
        DROP rules inside its network namespace; the broker keeps running. Returns how the
        cut was seen (a peer's connects failing)."""
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
        self._partitioned[node_id] = from_clients  # healed by the restore, even unverified
        self._invalidate_admin()
        return self._verify_links(node_id, cut=True)

    def heal(self, node_id: int | None = None, timeout: float = 60.0) -> str | None:
        """With ``node_id``: remove that node's partition rules (a no-op when it has none)
        and return how the heal was seen (a peer connecting again). Without: every fault
        undone, links included, then the health gate."""
        if node_id is None:
            for cut in list(self._partitioned):
                self.heal(cut)
            super().heal(None, timeout)
            return None
        if node_id not in self._partitioned:
            return None
        # no chain: the cut never ran (it failed, or did not act), so there is nothing to flush
        self._exec_root(node_id, f"iptables -n -L {CHAIN} >/dev/null 2>&1 || exit 0; "
                                 f"iptables -F {CHAIN}")
        self._invalidate_admin()
        seen = self._verify_links(node_id, cut=False)
        self._partitioned.pop(node_id, None)  # still cut when unverified: healed again later
        return seen

    def _verify_links(self, node_id: int, cut: bool) -> str:
        """Read the cut (or the heal) back from a running peer, within ``VERIFY_S``: cut,
        every connect times out (its SYN dropped; a refusal means packets pass); healed,
        every connect opens."""
        peer = next((o for o in sorted(self._containers) if o != node_id
                     and self.node_state(o) is NodeState.RUNNING), None)
        if peer is None:
            return self._verify_rules(node_id, cut)
        ip, seen = self._ip(node_id), [""]
        wanted = TIMED_OUT if cut else "open"

        def check() -> str | None:
            found = self._probe(peer, ip)
            seen[0] = ", ".join(f"{port} {how}" for port, how in found.items())
            done = all(how == wanted for how in found.values())
            return None if done else f"from node {peer} to {ip}: {seen[0]}"

        act = "partition" if cut else "heal"
        try:
            wait_for(check, VERIFY_S, f"every TCP connect from node {peer} to node {node_id}'s "
                     f"ports {list(self.listener_ports)} {wanted}", poll=0.5)
        except ClusterError as exc:
            raise ClusterError(f"the {act} of node {node_id} did not act: {exc}") from None
        return f"node {peer}'s TCP connects to node {node_id}: {seen[0]}"

    def _probe(self, peer: int, ip: str) -> dict[int, str]:
        """One TCP connect per listener port from ``peer``'s container to ``ip``, at once:
        port -> "open", "timed out", "refused" or "failed (exit N)"."""
        calls = "".join(f"probe {ip} {port} & " for port in self.listener_ports)
        container = self._container(peer)
        code, raw = container.exec_run(["sh", "-c", PROBE.format(s=PROBE_S, calls=calls)])
        output = raw.decode(errors="replace")
        found = {int(words[0]): words[1:] for words in map(str.split, output.splitlines())
                 if words and words[0].isdigit()}
        missing = any(rest[1:] in (["126"], ["127"]) for rest in found.values())
        if code != 0 or set(found) != set(self.listener_ports) or missing:
            raise ClusterError(f"the TCP connect probe in container {container.name} gave "
                               f"no answer (exit {code}): {output.strip()!r}; the image "
                               f"needs bash and timeout (the kreplica image has them)")
        return {port: "open" if rest == ["open"] else
                HOW.get(rest[-1], f"failed (exit {rest[-1]})")
                for port, rest in sorted(found.items())}

    def _verify_rules(self, node_id: int, cut: bool) -> str:
        """No peer runs to connect from: the node's own DROP rules, read back."""
        code, output = self._container(node_id).exec_run(
            ["sh", "-c", f"iptables -S {CHAIN}"], user="0:0")
        drops = [line for line in output.decode(errors="replace").splitlines()
                 if line.startswith(f"-A {CHAIN}") and "DROP" in line]
        if code != 0 or bool(drops) is not cut:
            act = "partition" if cut else "heal"
            raise ClusterError(f"the {act} of node {node_id} did not act: expected "
                               f"{'DROP rules' if cut else 'no DROP rule'} in its chain "
                               f"{CHAIN} (no peer runs to connect from), seen exit {code}: "
                               f"{shlex.quote(output.decode(errors='replace').strip())}")
        return f"{len(drops)} DROP rules in node {node_id}'s chain (no peer runs)"

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

