"""Degraded links between the nodes, through the cluster's Toxiproxy.

A link fault degrades every connection *into* the victim, on both its proxied listeners:
replication (followers fetching from it, its ISR) and the KRaft quorum (voters fetching from
it when it leads the quorum). The victim's own connections to its peers go through *their*
proxies and stay healthy, which is what makes ``one_way_partition`` one-way. Clients talk to
the nodes directly, so produce latency rises only through what the degraded replication costs
(acks=all waits for the followers).

Each strike is verified to act before it counts: the degraded route is measured with real
Kafka requests (``linkprobe``) against the node's own port as the baseline, and the figures
go into the fault's event; a fault whose effect cannot be measured raises instead of being
recorded as struck. The restore is measured too (the route answers like the node again).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ClusterError, InputError
from . import linkprobe
from .failure import SUITE_OWNED, Failure, degrading

if TYPE_CHECKING:
    from ..cluster.facilities.impl.linkproxy import LinkProxy, Route

# slow_link: added latency with jitter in each direction, and a bandwidth cap
LATENCY_MS = 300
JITTER_MS = 100
RATE_KIB_S = 64
# lossy_link: every connection into the victim is reset this long after its first answer
LOSSY_RESET_MS = 1000
# flaky_link: this share of new connections into the victim is reset at once
FLAKY_SHARE = 0.5
PROBE_TIMEOUT_S = 2.0
NEEDS = frozenset({"link_proxy"})  # the node facility of every link fault
HEAL_RTT_S = 1.0  # a healed route answers within this (the node's own port: milliseconds)


@dataclass(frozen=True)
class Toxic:
    kind: str  # Toxiproxy toxic type
    stream: str  # "upstream" (toward the victim) | "downstream" (from it)
    attributes: tuple[tuple[str, int], ...]
    toxicity: float = 1.0


@dataclass(frozen=True)
class LinkFault:
    """One link failure: the toxics put on the victim's routes and how their effect is
    measured (a text for the event; raises ``ClusterError`` when there is no effect)."""

    name: str
    doc: str
    toxics: tuple[Toxic, ...]
    measure: Callable[[LinkProxy, Route, Route | None], str]
    drop_connections: bool = False  # at the heal: bytes were dropped mid-stream


def _ms(seconds: float | None) -> str:
    return "no answer" if seconds is None else f"{seconds * 1000:.0f} ms"


def _measure_slow(proxy: LinkProxy, route: Route, _peer: Route | None) -> str:
    base = linkprobe.median_round_trip(proxy.host, route.upstream, samples=3)
    slow = linkprobe.median_round_trip(proxy.listen_at, route.listen, samples=5,
                                       timeout=PROBE_TIMEOUT_S + 2 * LATENCY_MS / 1000)
    rate = linkprobe.throughput(proxy.listen_at, route.listen)
    expected_added = LATENCY_MS / 1000  # at least one direction's latency
    if slow is None or base is None or slow - base < expected_added:
        raise ClusterError(f"slow_link did not act on {route.name}: round trip {_ms(slow)} "
                           f"through the proxy vs {_ms(base)} direct (expected at least "
                           f"{LATENCY_MS} ms more)")
    if rate > 1.5 * RATE_KIB_S * 1024:
        raise ClusterError(f"slow_link did not cap {route.name}: {rate / 1024:.0f} KiB/s "
                           f"through the proxy (expected <= {RATE_KIB_S} KiB/s)")
    return (f"{route.name}: round trip {_ms(slow)} (direct {_ms(base)}, added "
            f"{LATENCY_MS}±{JITTER_MS} ms each way), {rate / 1024:.1f} KiB/s "
            f"(cap {RATE_KIB_S} KiB/s)")


def _measure_resets(name: str, hold_s: float, connections: int, least: int,
                    most: int) -> Callable[[LinkProxy, Route, Route | None], str]:
    def measure(proxy: LinkProxy, route: Route, _peer: Route | None) -> str:
        count = linkprobe.count_resets(proxy.listen_at, route.listen, connections, hold_s=hold_s,
                                       timeout=PROBE_TIMEOUT_S)
        if not least <= count.reset <= most:
            raise ClusterError(f"{name} did not act on {route.name}: {count.describe()} "
                               f"(expected {least}..{most} reset)")
        return f"{route.name}: {count.describe()}"
    return measure


def _measure_one_way(proxy: LinkProxy, route: Route, peer: Route | None) -> str:
    toward = linkprobe.round_trip(proxy.listen_at, route.listen, timeout=PROBE_TIMEOUT_S)
    direct = linkprobe.round_trip(proxy.host, route.upstream, timeout=PROBE_TIMEOUT_S)
    back = (linkprobe.round_trip(proxy.listen_at, peer.listen, timeout=PROBE_TIMEOUT_S)
            if peer is not None else None)
    if toward is not None or direct is None or (peer is not None and back is None):
        raise ClusterError(
            f"one_way_partition did not act as one-way on {route.name}: toward the node "
            f"{_ms(toward)} (expected no answer), its own port {_ms(direct)}, from it to "
            f"{peer.name if peer else 'a peer'} {_ms(back)} (expected answers)")
    return (f"{route.name}: toward the node no answer in {PROBE_TIMEOUT_S:.0f} s (its own "
            f"port {_ms(direct)}); from it to {peer.name if peer else 'no peer'} "
            f"{_ms(back)}")


_SLOW = LinkFault(
    "slow_link", f"+{LATENCY_MS}±{JITTER_MS} ms each way and a {RATE_KIB_S} KiB/s cap on "
    "every link into the node",
    tuple(Toxic(kind, stream, attrs) for stream in ("upstream", "downstream")
          for kind, attrs in (("latency", (("latency", LATENCY_MS), ("jitter", JITTER_MS))),
                              ("bandwidth", (("rate", RATE_KIB_S),)))),
    _measure_slow)
_LOSSY = LinkFault(
    "lossy_link", f"every connection into the node reset {LOSSY_RESET_MS} ms after its first "
    "answer (dropped connections)",
    (Toxic("reset_peer", "downstream", (("timeout", LOSSY_RESET_MS),)),),
    _measure_resets("lossy_link", hold_s=2 * LOSSY_RESET_MS / 1000, connections=3,
                    least=3, most=3))
_FLAKY = LinkFault(
    "flaky_link", f"{FLAKY_SHARE:.0%} of the connections into the node reset at once",
    (Toxic("reset_peer", "downstream", (("timeout", 0),), toxicity=FLAKY_SHARE),),
    _measure_resets("flaky_link", hold_s=0.0, connections=20, least=3, most=17))
_ONE_WAY = LinkFault(
    "one_way_partition", "nothing reaches the node over its links (bytes dropped, connections "
    "held); its own connections to its peers pass",
    (Toxic("timeout", "upstream", (("timeout", 0),)),), _measure_one_way,
    drop_connections=True)

LINK_FAULTS: dict[str, LinkFault] = {f.name: f for f in (_SLOW, _LOSSY, _FLAKY, _ONE_WAY)}


def proxy_of(cluster: Any, failure: str) -> LinkProxy:
    """The cluster's link proxy; a cluster started without one cannot take link faults."""
    proxy = cluster.facility("link_proxy")
    if proxy is None:
        raise InputError(f"failure {failure} needs a cluster whose links pass a fault proxy "
                         "(facility link_proxy, a cluster the suite starts); this one has none")
    return proxy


def _peer_route(proxy: LinkProxy, node: int) -> Route | None:
    peers = sorted(r.node_id for r in proxy.routes.values() if r.node_id != node)
    return proxy.routes[f"n{peers[0]}-replication"] if peers else None


def strike(cluster: Any, node: int, failure: str) -> str:
    """Put ``failure``'s toxics on every route into ``node`` and measure the effect on its
    replication route; returns the measurement (for the fault's event)."""
    fault = LINK_FAULTS[failure]
    proxy = proxy_of(cluster, failure)
    routes = proxy.node_routes(node)
    for route in routes:
        for i, toxic in enumerate(fault.toxics):
            proxy.add_toxic(route.name, f"{failure}-{i}", toxic.kind, toxic.stream,
                            toxic.toxicity, **dict(toxic.attributes))
    return fault.measure(proxy, proxy.routes[f"n{node}-replication"],
                         _peer_route(proxy, node))


def restore(cluster: Any, node: int, failure: str, timeout: float = 0.0) -> str:
    """Remove the toxics from ``node``'s routes and measure that its replication route
    answers like the node again; returns the measurement (``timeout``: the registry's
    restore signature; the heal itself is immediate)."""
    fault = LINK_FAULTS[failure]
    proxy = proxy_of(cluster, failure)
    for route in proxy.node_routes(node):
        proxy.clear(route.name, drop_connections=fault.drop_connections)
    route = proxy.routes[f"n{node}-replication"]
    healed = linkprobe.median_round_trip(proxy.listen_at, route.listen, samples=3,
                                         timeout=PROBE_TIMEOUT_S)
    if healed is None or healed > HEAL_RTT_S:
        raise ClusterError(f"{failure} on {route.name} did not heal: round trip "
                           f"{_ms(healed)} through the proxy (expected <= "
                           f"{HEAL_RTT_S * 1000:.0f} ms); log: {proxy.log_file}")
    return f"{route.name}: round trip {_ms(healed)} after the heal"


def _failure(fault: LinkFault, colour: str, label: str) -> Failure:
    """The registry's entry: a degrading fault (``failure.degrading``)."""
    return degrading(fault.name, fault.doc, "heal", colour, label, strike, restore,
                     backends=SUITE_OWNED, facilities=NEEDS)


# the FAILURES registry's entries (faults/registry.py, one line each)
SLOW_LINK = _failure(LINK_FAULTS["slow_link"], "#bcbd22", "slow link (latency + cap)")
LOSSY_LINK = _failure(LINK_FAULTS["lossy_link"], "#17becf", "lossy link (connections reset)")
FLAKY_LINK = _failure(LINK_FAULTS["flaky_link"], "#7f7f7f", "flaky link (half reset)")
ONE_WAY_PARTITION = _failure(LINK_FAULTS["one_way_partition"], "#e377c2",
                             "one-way partition (inbound cut)")
