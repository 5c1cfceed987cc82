"""Rolling-upgrade pure logic: version guards of a mixed cluster and parsing of the features
tool's output."""

from __future__ import annotations

import pytest

from pytest_kreplica.cluster.base import ClusterSpec
from pytest_kreplica.cluster.process.versioned import FINALIZED_RE, MAPPING_RE, VersionedCluster
from pytest_kreplica.errors import InputError


def test_mixed_cluster_nodes_may_only_be_newer_than_the_formatting_version(tmp_path):
    ok = VersionedCluster(ClusterSpec(3, "3.9.2"), tmp_path / "a", node_versions={3: "4.3.1"})
    assert ok.node_versions == {3: "4.3.1"}
    with pytest.raises(InputError, match="must not be older"):
        VersionedCluster(ClusterSpec(3, "4.3.1"), tmp_path / "b", node_versions={1: "3.9.2"})
    with pytest.raises(InputError, match="default"):
        VersionedCluster(ClusterSpec(3, None), tmp_path / "c", node_versions={1: "3.9.2"})


def test_switch_version_changes_the_next_start_only(tmp_path):
    cluster = VersionedCluster(ClusterSpec(3, "3.9.2"), tmp_path)
    cluster.kafka_version = "3.9.2"
    cluster.switch_version(2, "4.3.1")
    assert cluster.node_version(2) == "4.3.1" and cluster.node_version(1) == "3.9.2"


def test_features_tool_output_is_parsed():
    mapping = "metadata.version=30 (4.3-IV0)\nkraft.version=1\ngroup.version=1\n"
    match = MAPPING_RE.search(mapping)
    assert (int(match.group(1)), match.group(2)) == (30, "4.3-IV0")
    describe = ("Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
                "FinalizedVersionLevel: 0\tEpoch: 12\n"
                "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\t"
                "SupportedMaxVersion: 4.3-IV0\tFinalizedVersionLevel: 4.3-IV0\tEpoch: 40\n")
    assert FINALIZED_RE.search(describe).group(1) == "4.3-IV0"
