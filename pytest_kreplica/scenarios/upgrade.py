"""Version compatibility (test case C.7b): a rolling upgrade of one cluster under load.

``VersionedCluster`` is the process backend with one difference: each node runs the jars of
its own Kafka version (all from the same cache), so a cluster can be mixed, and a stopped
node can come back on another version with the same log dir. ``rolling_upgrade`` takes a
cluster from its version to a newer one a node at a time (terminate, switch jars, start,
wait until every replica of the case's topics is back in sync), then finalises the metadata
version with the standard features tool (``FeatureCommand``, from ``kafka-tools`` of the new
version). Every step is an event in the run directory, so the checker and the report see the
whole upgrade beside the history it ran under.
"""

from __future__ import annotations

import logging
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ..cluster.base import ClusterSpec
from ..cluster.process import ProcessCluster
from ..errors import ClusterError, InputError

log = logging.getLogger(__name__)

FEATURES_CLASS = "org.apache.kafka.tools.FeatureCommand"
FEATURES_TIMEOUT_S = 180.0
NODE_TIMEOUT_S = 180.0  # one node: stop, start on the new jars, every replica in sync
_MAPPING_RE = re.compile(r"metadata\.version=(\d+)\s*\(([^)]+)\)")
_FINALIZED_RE = re.compile(r"Feature:\s*metadata\.version\s.*?FinalizedVersionLevel:\s*(\S+)")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


class VersionedCluster(ProcessCluster):
    """A process cluster whose nodes may run different Kafka versions (module docstring).
    ``spec.kafka_version`` formats and starts every node unless ``node_versions`` says
    otherwise for a node."""

    def __init__(self, spec: ClusterSpec, workdir: Path | str, *,
                 node_versions: dict[int, str] | None = None, **kwargs: Any):
        super().__init__(spec, workdir, **kwargs)
        self.node_versions: dict[int, str] = dict(node_versions or {})
        older = {n: v for n, v in self.node_versions.items() if spec.kafka_version
                 and _key(v) < _key(spec.kafka_version)}
        if older or (self.node_versions and spec.kafka_version is None):
            # storage is formatted by spec.kafka_version's tool at its metadata version,
            # which an older broker cannot read
            raise InputError(f"mixed cluster: node versions {self.node_versions} must not be "
                             f"older than the cluster's kafka_version "
                             f"{spec.kafka_version or 'default (newest)'}; allowed: the "
                             f"oldest version as kafka_version, newer ones per node")
        self._node_dists: dict[int, Any] = {}

    def _dist_for(self, node_id: int) -> Any:
        from ..cluster import distribution

        version = self.node_versions.get(node_id)
        if version is None or self.dist is None or version == self.dist.version:
            return self.dist
        if version not in self._node_dists:
            self._node_dists[version] = distribution.resolve(version)
        return self._node_dists[version]

    def _jvm_command(self, node: Any, main_class: str, *args: str) -> list[str]:
        dist = self._dist_for(node.node_id) if node is not None else self.dist
        if dist is self.dist:
            return super()._jvm_command(node, main_class, *args)
        from ..cluster import reaper

        marks = reaper.owner_flags(str(self.workdir), detached=self.detached)
        marks.append(f"-Dkreplica.node={node.node_id}")
        return dist.command(main_class, *args, heap_mb=self.heap_mb, archive=self.use_archive,
                            extra_flags=[*marks, *self.extra_jvm_flags])

    def node_version(self, node_id: int) -> str:
        return self.node_versions.get(node_id) or self.kafka_version

    def switch_version(self, node_id: int, version: str) -> None:
        """Run ``node_id`` on ``version`` from its next start (it must be stopped)."""
        self.node_versions[node_id] = version

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        for node in self.nodes:
            info["nodes"][str(node.node_id)]["kafka_version"] = self.node_version(node.node_id)
        return info


def features_command(version: str, *args: str, timeout: float = FEATURES_TIMEOUT_S) -> str:
    """Run the features tool of ``version`` (kafka-tools); its stdout, or ClusterError with
    what it printed."""
    from ..cluster import distribution

    dist = distribution.resolve(version, ("broker", "tools"))
    cmd = [c for c in dist.command(FEATURES_CLASS, *args, component="tools")
           if not c.startswith("-Xm")]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ClusterError(f"features tool {' '.join(args)} did not finish within "
                           f"{timeout:.0f} s (expected exit 0)") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ClusterError(f"features tool {' '.join(args)} exited {proc.returncode} "
                           f"(expected 0): {' | '.join(tail)}")
    return proc.stdout


def latest_metadata_version(version: str) -> tuple[int, str]:
    """(level, name) of the newest stable metadata.version the tools of ``version`` know."""
    out = features_command(version, "version-mapping")
    match = _MAPPING_RE.search(out)
    if not match:
        raise ClusterError(f"features tool version-mapping printed no metadata.version line "
                           f"(expected 'metadata.version=N (X-IVn)'): {out[:300]!r}")
    return int(match.group(1)), match.group(2)


def finalized_metadata_version(version: str, bootstrap: str) -> str | None:
    """The cluster's finalised metadata.version as the features tool describes it."""
    match = _FINALIZED_RE.search(features_command(version, "--bootstrap-server", bootstrap,
                                                  "describe"))
    return match.group(1) if match else None


def rolling_upgrade(cluster: VersionedCluster, to_version: str, writer: Any,
                    topics: list[str], *, stop: threading.Event | None = None,
                    node_timeout: float = NODE_TIMEOUT_S, finalise: bool = True
                    ) -> dict[str, Any]:
    """Upgrade every node of ``cluster`` to ``to_version`` one at a time on its log dir,
    then finalise metadata.version; returns what happened (for verdict.json)."""
    from ..cluster import distribution

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


def upgrade_hooks(case: Any, to_version: str | None) -> tuple[Any, dict[str, Any]]:
    """``CaseHooks`` that run the rolling upgrade during the produce (the producer keeps
    sending until it is done) and a dict that receives its outcome."""
    from ..cluster import distribution
    from .phases import CaseHooks

    target = to_version or distribution.default_version()
    hooks = CaseHooks()
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def upgrade(ctx: Any) -> None:
        try:
            outcome.update(rolling_upgrade(ctx.cluster, target, ctx.writer, ctx.topics,
                                           stop=ctx.stop))
            ctx.extra["upgrade"] = dict(outcome)
        finally:
            done.set()

    upgrade.__name__ = f"rolling-upgrade-to-{target}"
    hooks.during_produce.append(upgrade)
    hooks.keep_producing.append(lambda: not done.is_set())
    hooks.produce_rate = UPGRADE_PRODUCE_RATE
    return hooks, outcome


UPGRADE_PRODUCE_RATE = 100.0  # sends/s while nodes restart: an upgrade takes minutes here
