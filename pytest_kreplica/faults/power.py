"""Power loss: a node dies at once and what it had not fsynced is gone.

Kafka acknowledges a record once it is in the page cache of the replicas that count
(``acks``); it fsyncs a segment only when it rolls, at a clean shutdown, or as often as
``flush.messages`` / ``flush.ms`` ask (by default never in between). A SIGKILL keeps the
page cache, so a killed node loses nothing it wrote; a power cut does not. The node's log
dir is a lazy FUSE filesystem (cluster/facilities/impl/lazyfs.py) that remembers each file's
length at its last fsync: the strike SIGKILLs the JVM, then the filesystem truncates every
file to that length.

* ``power_loss``: the struck node only. Its replicas come back shorter; Kafka's recovery
  truncates them to the last whole batch and the node fetches the rest from the leader.
* ``power_loss_replicas``: every replica of the partitions the victim holds, at once, on a
  cluster larger than the replica set (one rack of several): the other nodes run on.
* ``power_loss_all``: every node at once (with replication factor = brokers, every replica of
  the partition). With Kafka's default flush settings acknowledged records in the active
  segments are gone from every copy: at-most-once, shown with the counts; with
  ``flush_messages: 1`` (fsync every append) nothing acknowledged may be lost.

Verified to act: every struck JVM has exited, its filesystem answered the cut with what it
dropped (bytes and files, recorded in the event) and had seen the node's writes; the heal
restarts the nodes, which must recover from the shortened logs.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..errors import ClusterError, InputError
from . import moves
from .failure import GONE_AT_STRIKE, SUITE_OWNED, Allowance, Failure

if TYPE_CHECKING:
    from ..cluster import Cluster
    from ..cluster.facilities.impl.lazymount import LazyDisk

# the node's log dir is mounted on the host; a container's bind mount takes it along
BACKENDS = SUITE_OWNED
NEEDS = frozenset({"lazy_fs"})  # the node facility of every power loss
MAX_EXAMPLES = 3
CUT = re.compile(r"node (\d+): \d+ un-fsynced segment bytes dropped.*?segments cut in \[([^\]]*)\]")


def lazy_disk_of(cluster: Any, node: int, failure: str) -> LazyDisk:
    """The node's lazy filesystem; a cluster started without them cannot take the fault."""
    disks = cluster.facility("lazy_fs")
    if disks is None:
        raise InputError(f"failure {failure} needs a cluster whose log dirs are lazy FUSE "
                         "filesystems (facility lazy_fs); this one has none")
    return disks[node]


def _cut(cluster: Cluster, node: int, failure: str) -> str:
    """SIGKILL the node, then drop what its filesystem had not fsynced; what was dropped."""
    disk = lazy_disk_of(cluster, node, failure)
    cluster.kill(node)
    state = cluster.node_state(node).value
    if state != "stopped":
        raise ClusterError(f"{failure}: node {node} is {state} after SIGKILL (expected "
                           "stopped); its filesystem was not cut")
    said = disk.ask("cut")
    if not said["writes"]:
        raise ClusterError(f"{failure}: node {node}'s lazy filesystem saw no write since it "
                           f"was mounted (expected the node's logs there); {disk.log}")
    examples = ", ".join(f"{e['file']} {e['size']} -> {e['kept']}"
                         for e in said["examples"][:MAX_EXAMPLES])
    return (f"node {node}: {said['log_bytes']} un-fsynced segment bytes dropped "
            f"({said['bytes']} bytes from {said['files']} file(s) in all, preallocated "
            f"indexes included" + (f": {examples}" if examples else "") +
            f"), {said['tracked']} file(s) written since their last fsync, segments cut in "
            f"[{' '.join(said['logs'])}]")


def segments_cut(measured: str | None) -> dict[str, set[int]]:
    """From a strike's measured text: each ``topic-partition`` whose segment files lost
    bytes, with the nodes where they did (the loss evidence of ``power_loss_all``)."""
    out: dict[str, set[int]] = {}
    for node, logs in CUT.findall(measured or ""):
        for name in logs.split():
            out.setdefault(name, set()).add(int(node))
    return out


def strike_one(cluster: Cluster, node: int) -> str:
    return _cut(cluster, node, "power_loss")


def strike_all(cluster: Cluster, node: int) -> str:
    """Every node, the victim first (one cut after another: the first node dies and loses its
    tail before the last does, as a rack losing power does within milliseconds)."""
    nodes = [node, *sorted(n.node_id for n in cluster.nodes if n.node_id != node)]
    return "; ".join(_cut(cluster, n, "power_loss_all") for n in nodes)


def strike_replicas(cluster: Cluster, node: int) -> str:
    """Every replica of every partition the victim holds (the case's topics: on a cluster
    the suite owns, its only non-internal ones), the victim first; the other nodes run on,
    as when one rack of several loses power."""
    states = moves.topic_states(cluster)
    held = {r for s in states.values() if node in s.replicas for r in s.replicas}
    if not held:
        raise ClusterError(f"power_loss_replicas: node {node} holds no replica of "
                           f"{sorted(states)} (expected the case's partition)")
    spared = sorted(n.node_id for n in cluster.nodes if n.node_id not in held)
    cuts = [_cut(cluster, n, "power_loss_replicas") for n in [node, *sorted(held - {node})]]
    return "; ".join(cuts) + f"; spared (running on) {spared}"


def restore_one(cluster: Cluster, node: int, timeout: float) -> str:
    cluster.start_node(node, timeout=timeout)
    return f"node {node} restarted after the power loss (log recovery)"


def restore_all(cluster: Cluster, node: int, timeout: float) -> str:
    """Start every node again, all at once: each start waits until its node is registered,
    which needs a KRaft quorum, so one node after another would wait for the later ones."""
    stopped = [n.node_id for n in cluster.nodes if cluster.node_state(n.node_id).value ==
               "stopped"]
    with ThreadPoolExecutor(max(len(stopped), 1), thread_name_prefix="kreplica-power") as pool:
        for future in [pool.submit(cluster.start_node, n, timeout) for n in stopped]:
            future.result()
    return f"nodes {stopped} restarted together after the power loss (log recovery)"


# no replica left to write to: the downtime, then log recovery of every restarted node
WHOLE_OUTAGE = Allowance(follower_s=120.0, leader_s=120.0, downtime=True)
# the FAILURES registry's entries (faults/registry.py, one line each)
POWER_LOSS = Failure(
    name="power_loss", doc="power cut: SIGKILL and the node's un-fsynced writes dropped, then "
    "a restart", event="power_loss", restore_event="start", colour="#e7969c",
    label="power loss (un-fsynced writes lost)", backends=BACKENDS, moves_leadership=True,
    leader_gone=GONE_AT_STRIKE, random=False, strike=strike_one, restore=restore_one,
    watch_isr=True, segments_cut=segments_cut, struck_state="stopped", facilities=NEEDS)
# every node down: no leader can be elected meanwhile, so the nemesis only waits out the
# downtime (moves_leadership False); nothing is acknowledged after the strike
POWER_LOSS_ALL = Failure(
    name="power_loss_all", doc="power cut of every node at once: each SIGKILLed and its "
    "un-fsynced writes dropped, then all restarted", event="power_loss_all",
    restore_event="start", colour="#0b6e79", label="power loss of every node",
    backends=BACKENDS, moves_leadership=False, leader_gone=GONE_AT_STRIKE, random=False,
    strike=strike_all, restore=restore_all, segments_cut=segments_cut, struck_state="stopped",
    availability=WHOLE_OUTAGE, facilities=NEEDS)
# every replica of the victim's partitions, the other nodes spared (a cluster larger than the
# replica set): the partition has no leader until the restore, the rest of the cluster runs
POWER_LOSS_REPLICAS = Failure(
    name="power_loss_replicas", doc="power cut of every replica of the victim's partitions "
    "at once, the other nodes running on; then those restarted together",
    event="power_loss_replicas", restore_event="start", colour="#843c39",
    label="power loss of every replica", backends=BACKENDS, moves_leadership=False,
    leader_gone=GONE_AT_STRIKE, random=False, strike=strike_replicas, restore=restore_all,
    segments_cut=segments_cut, struck_state="stopped", availability=WHOLE_OUTAGE,
    facilities=NEEDS)
