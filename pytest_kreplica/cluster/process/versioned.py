"""A process cluster whose nodes may run different Kafka versions, and the standard features
tool (``FeatureCommand``, from ``kafka-tools``) that reads and finalises metadata.version.

``VersionedCluster`` is the process backend with one difference: each node runs the jars of
its own Kafka version (all from the same cache), so a cluster can be mixed, and a stopped
node can come back on another version with the same log dir. The rolling upgrade that uses
it is a scenario (``scenarios.upgrade``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ClusterError, InputError
from .. import reaper
from ..base import ClusterSpec, Node
from ..kafka import distribution
from .cluster import ProcessCluster

if TYPE_CHECKING:
    from ..kafka.distribution import Distribution

FEATURES_CLASS = "org.apache.kafka.tools.FeatureCommand"
FEATURES_TIMEOUT_S = 180.0
MAPPING_RE = re.compile(r"metadata\.version=(\d+)\s*\(([^)]+)\)")
FINALIZED_RE = re.compile(r"Feature:\s*metadata\.version\s.*?FinalizedVersionLevel:\s*(\S+)")


class VersionedCluster(ProcessCluster):
    """A process cluster whose nodes may run different Kafka versions (module docstring).
    ``spec.kafka_version`` formats and starts every node unless ``node_versions`` says
    otherwise for a node."""

    def __init__(self, spec: ClusterSpec, workdir: Path | str, *,
                 node_versions: dict[int, str] | None = None, **kwargs: Any):
        super().__init__(spec, workdir, **kwargs)
        self.node_versions: dict[int, str] = dict(node_versions or {})
        older = {n: v for n, v in self.node_versions.items() if spec.kafka_version
                 and distribution.version_key(v) < distribution.version_key(spec.kafka_version)}
        if older or (self.node_versions and spec.kafka_version is None):
            # storage is formatted by spec.kafka_version's tool at its metadata version,
            # which an older broker cannot read
            raise InputError(f"mixed cluster: node versions {self.node_versions} must not be "
                             f"older than the cluster's kafka_version "
                             f"{spec.kafka_version or 'default (newest)'}; allowed: the "
                             f"oldest version as kafka_version, newer ones per node")
        self._node_dists: dict[str, Distribution] = {}

    def _dist_for(self, node_id: int) -> Distribution:
        version = self.node_versions.get(node_id)
        if version is None or self.dist is None or version == self.dist.version:
            return self.dist
        if version not in self._node_dists:
            self._node_dists[version] = distribution.resolve(version)
        return self._node_dists[version]

    def _jvm_command(self, node: Node | None, main_class: str, *args: str) -> list[str]:
        dist = self._dist_for(node.node_id) if node is not None else self.dist
        if dist is self.dist:
            return super()._jvm_command(node, main_class, *args)
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
    return distribution.run_tool(version, FEATURES_CLASS, *args,
                                 what=f"features tool {' '.join(args)}", timeout=timeout)


def latest_metadata_version(version: str) -> tuple[int, str]:
    """(level, name) of the newest stable metadata.version the tools of ``version`` know."""
    out = features_command(version, "version-mapping")
    match = MAPPING_RE.search(out)
    if not match:
        raise ClusterError(f"features tool version-mapping printed no metadata.version line "
                           f"(expected 'metadata.version=N (X-IVn)'): {out[:300]!r}")
    return int(match.group(1)), match.group(2)


def finalized_metadata_version(version: str, bootstrap: str) -> str | None:
    """The cluster's finalised metadata.version as the features tool describes it."""
    match = FINALIZED_RE.search(features_command(version, "--bootstrap-server", bootstrap,
                                                  "describe"))
    return match.group(1) if match else None
