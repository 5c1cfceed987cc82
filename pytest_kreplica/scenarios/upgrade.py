"""Scenario ``version-compat`` (test case C.7): replication across Kafka versions.

``compat: mirror-pair`` is the ``mirror`` scenario between a ``kafka_version`` source and a
``target_kafka_version`` target. ``compat: upgrade`` is a rolling upgrade of one cluster
under load: ``rolling_upgrade`` takes a ``cluster.versioned.VersionedCluster`` from its
version to a newer one a node at a time (terminate, switch jars, start, wait until every
replica of the case's topics is back in sync), then finalises the metadata version with the
standard features tool. Every step is an event in the run directory, so the checker and
the report see the whole upgrade beside the history it ran under.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cluster.base import ClusterSpec
from ..cluster.kafka import distribution
from ..cluster.process.versioned import (
    VersionedCluster,
    features_command,
    finalized_metadata_version,
    latest_metadata_version,
)
from . import mirror
from .runner import CaseContext, CaseHooks, CaseResult, RunOptions, run_case

if TYPE_CHECKING:
    from ..cluster.pool import ClusterPool
    from ..history import RunWriter
    from ..matrix import Case

log = logging.getLogger(__name__)

NODE_TIMEOUT_S = 180.0  # one node: stop, start on the new jars, every replica in sync
UPGRADE_PRODUCE_RATE = 100.0  # sends/s while nodes restart: an upgrade takes minutes here
UPGRADE_DRAIN_TIMEOUT = 120.0


def run(case: Case, pool: ClusterPool, run_dir: Path, options: RunOptions) -> CaseResult:
    """The mirror pair (``mirror.run``), or a rolling upgrade under load on a cluster of its
    own (per-node versions, closed afterwards); ``extra["node_versions"]`` says what each
    node ran at the end."""
    if case.compat != "upgrade":
        return mirror.run(case, pool, run_dir, options)
    spec = ClusterSpec(brokers=case.brokers, kafka_version=case.kafka_version,
                       backend=case.backend, role="upgrade")
    cluster = VersionedCluster(spec, run_dir / "cluster")
    try:
        cluster.start(timeout=pool.start_timeout)
        hooks, _ = upgrade_hooks(case, case.target_kafka_version, options.hooks)
        result = run_case(case, cluster, run_dir, hooks, spark_master=options.spark_master,
                          replica_check=options.replica_check,
                          drain_timeout=UPGRADE_DRAIN_TIMEOUT)
        result.extra["node_versions"] = {
            str(n.node_id): cluster.node_version(n.node_id) for n in cluster.nodes}
        return result
    finally:
        cluster.close()


def rolling_upgrade(cluster: VersionedCluster, to_version: str, writer: RunWriter,
                    topics: list[str], *, node_timeout: float = NODE_TIMEOUT_S,
                    finalise: bool = True) -> dict[str, Any]:
    """Upgrade every node of ``cluster`` to ``to_version`` one at a time on its log dir,
    then finalise metadata.version; returns what happened (for verdict.json)."""
    distribution.resolve(to_version, ("broker", "tools"))  # before the first node stops
    steps: list[dict[str, Any]] = []
    result: dict[str, Any] = {"from": cluster.kafka_version, "to": to_version, "nodes": steps}
    controller = cluster.active_controller()
    order = sorted(n.node_id for n in cluster.nodes if n.node_id != controller) + [controller]
    for node_id in order:
        old = cluster.node_version(node_id)
        started = time.monotonic()
        writer.event("terminate", node=str(node_id), role="upgrade",
                     detail=f"rolling upgrade: stop node {node_id} ({old})")
        cluster.terminate(node_id)
        cluster.switch_version(node_id, to_version)
        writer.event("start", node=str(node_id), role="upgrade",
                     detail=f"rolling upgrade: start node {node_id} on {to_version}, same log dir")
        cluster.start_node(node_id, timeout=node_timeout)
        cluster.wait_healthy(topics, timeout=node_timeout)
        took = round(time.monotonic() - started, 3)
        writer.event("recovered", node=str(node_id), role="upgrade",
                     detail=f"node {node_id} on {to_version}, every replica in sync "
                            f"({took:.1f} s)")
        steps.append({"node": node_id, "from": old, "to": to_version, "seconds": took})
    if finalise:
        level, name = latest_metadata_version(to_version)
        bootstrap = cluster.live_bootstrap_servers()
        features_command(to_version, "--bootstrap-server", bootstrap, "upgrade", "--feature",
                         f"metadata.version={level}")
        finalized = finalized_metadata_version(to_version, bootstrap)
        writer.event("finalise", role="upgrade",
                     detail=f"metadata.version upgraded to {level} ({name}); "
                            f"finalised level now {finalized}")
        result.update(metadata_version=name, metadata_level=level, finalized=finalized)
    return result


def upgrade_hooks(case: Case, to_version: str | None, hooks: CaseHooks | None = None
                  ) -> tuple[CaseHooks, dict[str, Any]]:
    """``hooks`` (new ones by default) that also run the rolling upgrade during the produce
    (the producer keeps sending until it is done), and a dict that receives its outcome."""
    target = to_version or distribution.default_version()
    hooks = hooks or CaseHooks()
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def upgrade(ctx: CaseContext) -> None:
        try:
            outcome.update(rolling_upgrade(ctx.cluster, target, ctx.writer, ctx.topics))
            ctx.extra["upgrade"] = dict(outcome)
        finally:
            done.set()

    upgrade.__name__ = f"rolling-upgrade-to-{target}"
    hooks.during_produce.append(upgrade)
    hooks.keep_producing.append(lambda: not done.is_set())
    hooks.produce_rate = UPGRADE_PRODUCE_RATE
    return hooks, outcome
