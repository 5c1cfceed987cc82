"""Issue 12 item 3: a replica the snapshot could not copy is named in replicas.json, and an
ISR replica without a copy of a non-empty committed range is an anomaly of verify-logs
(``uncovered_replicas``), not a silent skip."""

from __future__ import annotations

import json

from pytest_kreplica.cluster.base import PartitionState, TopicSpec
from pytest_kreplica.validation.replicas.layout import load_layout
from pytest_kreplica.validation.replicas.snapshot import snapshot_replicas
from pytest_kreplica.validation.replicas.synth import build_batch, message_values, write_partition
from pytest_kreplica.validation.replicas.verify import uncovered_replicas


class TwoLogDirs:
    """A cluster at rest whose node 3 has no known log directory."""

    def __init__(self, root):
        self.root = root

    def partition_state(self, topic, partition):
        return PartitionState(topic, partition, 1, 0, (1, 2, 3), (1, 2, 3))

    def log_end_offsets(self, topic, partition):
        return {1: 3, 2: 3, 3: 3}

    def high_watermark(self, topic, partition, timeout):
        return 3

    def log_dirs(self):
        return {1: self.root / "node1", 2: self.root / "node2"}


def test_uncopied_replica_is_named_and_uncovered(tmp_path):
    write_partition(tmp_path / "node1" / "t-0", [build_batch(0, message_values(
        ["m0", "m1", "m2"]))], per_segment=1)
    (tmp_path / "node2").mkdir()  # node 2 lost its partition directory
    run = tmp_path / "run"
    snapshot_replicas(TwoLogDirs(tmp_path), [TopicSpec("t", 1)], run, timeout=2)
    doc = json.loads((run / "replicas.json").read_text())
    assert [(n["node"], n["why"].split(" ")[-2:]) for n in doc["not_copied"]] == [
        (2, ["not", "exist"]), (3, ["the", "node"])]
    found = uncovered_replicas(load_layout(run))
    assert [(u["node"], u["problem"]) for u in found] == [
        (2, "no partition directory in the snapshot"),
        (3, "no partition directory in the snapshot")]
