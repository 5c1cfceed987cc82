"""The per-partition scan task: runs of batches identical on every replica collapse into one
range row per replica; everything else stays a batch row on every replica holding it. And
the whole check is one Spark job. Segments built with kafka-python's batch builder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_kreplica.validation.replicas.layout import load_layout
from pytest_kreplica.validation.replicas.scan import scan_partition
from pytest_kreplica.validation.replicas.synth import build_batch, write_partition

NODES = (1, 2, 3)


def batches(n: int, start: int = 0, size: int = 3) -> list[bytes]:
    """``n`` batches of ``size`` records from offset ``start`` on."""
    return [build_batch(start + i * size, [f"id-{start + i * size + k}".encode()
                                           for k in range(size)]) for i in range(n)]


def make_run(root: Path, logs: dict[int, list[bytes]], hw: int, per_segment: int = 4,
             isr: tuple[int, ...] = NODES) -> Path:
    for node, data in logs.items():
        if data:
            write_partition(root / "replicas" / str(node) / "t-0", data, per_segment)
    (root / "replicas.json").write_text(json.dumps({
        "nodes": {str(n): f"replicas/{n}" for n in NODES},
        "partitions": [{"topic": "t", "partition": 0, "leader": 1, "replicas": list(NODES),
                        "isr": list(isr), "high_watermark": hw}],
        "at_rest": True}))
    for n in NODES:
        (root / "replicas" / str(n)).mkdir(parents=True, exist_ok=True)
    return root


def rows_of(run: Path) -> list[tuple]:
    layout = load_layout(run)
    p = layout.partitions[0]
    files = [{"topic": s.topic, "partition": s.partition, "node": s.node, "path": s.path,
              "file": s.file, "base_offset": s.base_offset,
              "next_base_offset": s.next_base_offset, "closed": s.closed}
             for s in layout.segment_files()]
    return list(scan_partition({"topic": p.topic, "partition": p.partition,
                                "replicas": list(p.replicas), "files": files}))


def batch_offsets(rows: list[tuple]) -> dict[int, list[int]]:
    """Per node, the base offsets that became batch rows."""
    out: dict[int, list[int]] = {}
    for r in rows:
        if r[0] == "batch":
            out.setdefault(r[3], []).append(r[6])
    return out


def test_identical_replicas_are_one_range_row_each(tmp_path):
    data = batches(20)
    rows = rows_of(make_run(tmp_path, {n: data for n in NODES}, hw=60))
    assert batch_offsets(rows) == {}
    ranges = [r for r in rows if r[0] == "range"]
    assert sorted((r[3], r[6], r[7], r[16]) for r in ranges) == [
        (n, 0, 59, 20) for n in NODES]
    assert sum(r[16] for r in rows if r[0] == "segment") == 60  # 5 files × 3 nodes, 20 each


def test_a_divergent_batch_is_a_row_on_every_replica_and_the_collapse_resumes(tmp_path):
    data = batches(20)
    other = list(data)
    other[7] = build_batch(21, [b"other-21", b"other-22", b"other-23"])
    rows = rows_of(make_run(tmp_path, {1: data, 2: other, 3: data}, hw=60))
    assert batch_offsets(rows) == {1: [21], 2: [21], 3: [21]}
    assert {r[16] for r in rows if r[0] == "range"} == {19}


def test_a_shorter_follower_leaves_the_tail_as_rows(tmp_path):
    data = batches(10)
    rows = rows_of(make_run(tmp_path, {1: data, 2: data[:8], 3: data}, hw=30))
    assert batch_offsets(rows) == {1: [24, 27], 3: [24, 27]}


def test_a_replica_starting_later_leaves_the_head_as_rows(tmp_path):
    data = batches(10)
    rows = rows_of(make_run(tmp_path, {1: data, 2: data[2:], 3: data}, hw=30, per_segment=2))
    assert batch_offsets(rows) == {1: [0, 3], 3: [0, 3]}
    assert {(r[6], r[7]) for r in rows if r[0] == "range"} == {(6, 29)}


def test_after_a_corrupt_batch_every_batch_is_a_row(tmp_path):
    data = batches(10)
    broken = bytearray(data[4])
    broken[-1] ^= 0xFF
    bad = [*data[:4], bytes(broken), *data[5:]]
    rows = rows_of(make_run(tmp_path, {1: data, 2: bad, 3: data}, hw=30))
    offsets = batch_offsets(rows)
    assert offsets == {n: [12, 15, 18, 21, 24, 27] for n in NODES}
    assert [r[13] for r in rows if r[0] == "batch" and r[3] == 2 and r[13]]


def test_a_replica_without_files_collapses_nothing(tmp_path):
    data = batches(4)
    rows = rows_of(make_run(tmp_path, {1: data, 2: data, 3: []}, hw=12))
    assert batch_offsets(rows) == {1: [0, 3, 6, 9], 2: [0, 3, 6, 9]}
    assert not [r for r in rows if r[0] == "range"]


@pytest.fixture(scope="module")
def spark():
    from pytest_kreplica.validation.engine.spark import get_spark

    return get_spark()


def test_a_clean_check_is_one_spark_job_and_a_faulty_one_too(spark, tmp_path):
    from pytest_kreplica.validation.replicas.verify import JOB_GROUP, verify_logs

    if type(spark).__module__.startswith("pyspark.sql.connect"):
        pytest.skip("counting jobs needs the driver's status tracker, which a Spark Connect "
                    "client has not; the plan is the same in both modes")
    tracker = spark.sparkContext.statusTracker()
    data = batches(40)
    clean = make_run(tmp_path / "clean", {n: data for n in NODES}, hw=120)
    before = set(tracker.getJobIdsForGroup(JOB_GROUP))
    verdict = verify_logs(clean, spark=spark)
    assert verdict.valid and verdict.counts["batches"] == 120
    assert len(set(tracker.getJobIdsForGroup(JOB_GROUP)) - before) == 1

    other = list(data)
    other[7] = build_batch(21, [b"x-21", b"x-22", b"x-23"])
    faulty = make_run(tmp_path / "faulty", {1: data, 2: other, 3: data[:30]}, hw=120)
    before = set(tracker.getJobIdsForGroup(JOB_GROUP))
    verdict = verify_logs(faulty, spark=spark)
    assert len(set(tracker.getJobIdsForGroup(JOB_GROUP)) - before) == 1
    assert verdict.counts["divergent_batches"] == 1
    assert verdict.counts["missing_batches"] == 10
    assert verdict.first_divergence == [{"topic": "t", "partition": 0, "offset": 21,
                                         "kind": "divergent",
                                         "replicas": verdict.first_divergence[0]["replicas"]}]
    assert None not in verdict.first_divergence[0]["replicas"].values()
    assert [e["offset"] for e in verdict.examples["missing_batches"]] == [90, 93, 96, 99, 102]


def test_replicas_emptied_by_retention_are_judged_from_their_log_start(spark, tmp_path):
    """Retention runs on each broker on its own schedule: the leader and one follower have
    deleted every segment below the high watermark (an empty active segment at 6 remains)
    while the third still holds 0..5. Nothing committed and retained is missing; with a
    high watermark above the empty segment's base it is."""
    from pytest_kreplica.validation.replicas.layout import load_layout
    from pytest_kreplica.validation.replicas.synth import segment_name
    from pytest_kreplica.validation.replicas.verify import uncovered_replicas, verify_logs

    def run(root: Path, hw: int) -> Path:
        made = make_run(root, {1: [], 2: [], 3: batches(2)}, hw=hw)
        for node in (1, 2):
            folder = made / "replicas" / str(node) / "t-0"
            folder.mkdir(parents=True)
            (folder / segment_name(6)).write_bytes(b"")
        return made

    retained = run(tmp_path / "retained", hw=6)
    assert uncovered_replicas(load_layout(retained)) == []
    assert verify_logs(retained, spark=spark).valid
    behind = run(tmp_path / "behind", hw=9)  # the HW says 6..8 are committed: held by none
    assert [u["node"] for u in uncovered_replicas(load_layout(behind))] == [1, 2]
    assert not verify_logs(behind, spark=spark).valid
