"""The interim replica check (closed segments compared by sha256) on hand-made log dirs: it
finds a difference, ignores the active segment, and writes replicas.json for the verifier."""

from __future__ import annotations

import json

from pytest_kreplica.cluster.base import PartitionState
from pytest_kreplica.scenarios.phases import snapshot_and_compare


class LogDirsCluster:
    """Just the Cluster methods the snapshot reads, over directories we write."""

    def __init__(self, root, ends):
        self.root, self.ends = root, ends

    def partition_state(self, topic, partition):
        return PartitionState(topic, partition, 1, 0, (1, 2, 3), (1, 2, 3))

    def log_end_offsets(self, topic, partition):
        return dict(self.ends)

    def log_dirs(self):
        return {n: self.root / f"node{n}" for n in (1, 2, 3)}


def segments(root, node, contents):
    part = root / f"node{node}" / "t-0"
    part.mkdir(parents=True)
    for base, data in contents.items():
        (part / f"{base:020d}.log").write_bytes(data)
        (part / f"{base:020d}.index").write_bytes(b"ignored")


def test_equal_closed_segments_are_valid_and_snapshotted(tmp_path):
    for node in (1, 2, 3):
        segments(tmp_path, node, {0: b"batch-a", 10: b"batch-b", 20: b"active" * node})
    run_dir = tmp_path / "run"
    check = snapshot_and_compare(LogDirsCluster(tmp_path, {1: 25, 2: 25, 3: 25}), ["t"], 1,
                                 run_dir)
    assert check.valid and check.at_rest and check.segments == 2  # the active one differs
    meta = json.loads((run_dir / "replicas.json").read_text())
    assert meta["nodes"] == {"1": "replicas/1", "2": "replicas/2", "3": "replicas/3"}
    assert meta["partitions"][0]["high_watermark"] == 25 and meta["at_rest"] is True
    assert (run_dir / "replicas/2/t-0/00000000000000000010.log").read_bytes() == b"batch-b"
    assert not list(run_dir.glob("replicas/*/t-0/*.index"))


def test_a_differing_closed_segment_is_reported(tmp_path):
    segments(tmp_path, 1, {0: b"batch-a", 10: b"x"})
    segments(tmp_path, 2, {0: b"batch-A", 10: b"x"})
    segments(tmp_path, 3, {0: b"batch-a", 10: b"x"})
    check = snapshot_and_compare(LogDirsCluster(tmp_path, {1: 12, 2: 12, 3: 12}), ["t"], 1,
                                 tmp_path / "run")
    assert not check.valid
    assert [(m["segment"], sorted(set(m["sha256"].values())).__len__())
            for m in check.mismatches] == [("00000000000000000000.log", 2)]


def test_not_at_rest_is_bounded_and_reported(tmp_path, monkeypatch):
    import pytest_kreplica.scenarios.phases as scenario

    monkeypatch.setattr(scenario, "REST_TIMEOUT", 0.3)
    for node in (1, 2, 3):
        segments(tmp_path, node, {0: b"a"})
    check = snapshot_and_compare(LogDirsCluster(tmp_path, {1: 9, 2: 9, 3: 4}), ["t"], 1,
                                 tmp_path / "run")
    assert check.at_rest is False
    meta = json.loads((tmp_path / "run" / "replicas.json").read_text())
    assert meta["at_rest"] is False and meta["partitions"][0]["high_watermark"] == 4
