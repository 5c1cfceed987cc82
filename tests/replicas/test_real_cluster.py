"""The verifier on segments a real 3-node cluster wrote: one module-scoped cluster and one
snapshot (every codec, 16 KiB segments so each replica has several); every test plants its
fault into its own copy of the snapshot, never into a live broker's files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import KafkaProducer

from pytest_kreplica.cluster import ClusterSpec, TopicSpec, create_cluster
from pytest_kreplica.validation.replicas.batches import scan_segment
from pytest_kreplica.validation.replicas.layout import load_layout
from pytest_kreplica.validation.replicas.snapshot import snapshot_replicas
from pytest_kreplica.validation.replicas.synth import build_batch
from pytest_kreplica.validation.replicas.verify import verify_logs

START_TIMEOUT = 120.0
TOPIC = "verify-codecs"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]  # partition p is written with CODECS[p]
ASYNC_MESSAGES = 400  # per partition, batched by the producer
SYNC_MESSAGES = 15  # per partition, one record per batch
SEGMENT_BYTES = 16384


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = create_cluster(ClusterSpec(brokers=3), tmp_path_factory.mktemp("cluster"))
    try:
        c.start(timeout=START_TIMEOUT)
        yield c
    finally:
        c.close()


def produce_every_codec(cluster) -> dict[int, dict[str, int]]:
    """Per partition: id -> acknowledged offset."""
    acked: dict[int, dict[str, int]] = {}
    for partition, codec in enumerate(CODECS):
        producer = KafkaProducer(bootstrap_servers=cluster.live_bootstrap_servers(),
                                 acks="all", linger_ms=20, batch_size=8192,
                                 compression_type=None if codec == "none" else codec,
                                 request_timeout_ms=30000)
        try:
            futures = []
            for i in range(ASYNC_MESSAGES):
                rid = f"{codec}-{i}"
                value = f"{rid} {os.urandom(30).hex()}".encode()
                futures.append((rid, producer.send(TOPIC, value, partition=partition)))
            producer.flush(timeout=60)
            for i in range(SYNC_MESSAGES):
                rid = f"{codec}-sync-{i}"
                futures.append((rid, producer.send(TOPIC, rid.encode(), partition=partition)))
                producer.flush(timeout=30)
            acked[partition] = {rid: f.get(timeout=30).offset for rid, f in futures}
        finally:
            producer.close(timeout=10)
    return acked


@pytest.fixture(scope="module")
def written(cluster, tmp_path_factory):
    """The snapshot run directory and the acknowledged ids, made once for the module."""
    cluster.create_topics([TopicSpec(TOPIC, partitions=len(CODECS), replication_factor=3,
                                     config={"min.insync.replicas": "2",
                                             "segment.bytes": str(SEGMENT_BYTES)})])
    acked = produce_every_codec(cluster)
    run_dir = tmp_path_factory.mktemp("snapshot")
    doc = snapshot_replicas(cluster, [TOPIC], run_dir, timeout=90)
    return run_dir, acked, doc


@pytest.fixture
def run(written, tmp_path) -> Path:
    """A private copy of the module's snapshot to plant faults into."""
    target = tmp_path / "run"
    shutil.copytree(written[0], target)
    return target


def partition_info(run_dir: Path, partition: int) -> dict:
    doc = json.loads((run_dir / "replicas.json").read_text())
    return next(p for p in doc["partitions"] if p["partition"] == partition)


def follower(run_dir: Path, partition: int) -> int:
    info = partition_info(run_dir, partition)
    return next(n for n in info["replicas"] if n != info["leader"])


def segments(run_dir: Path, node: int, partition: int) -> list[Path]:
    return sorted((run_dir / "replicas" / str(node) / f"{TOPIC}-{partition}").glob("*.log"))


# -- snapshot ---------------------------------------------------------------------------------
def test_snapshot_is_at_rest_with_several_segments_per_replica(written):
    run_dir, acked, doc = written
    assert doc["at_rest"] is True
    assert set(doc["nodes"]) == {"1", "2", "3"}
    for p in doc["partitions"]:
        assert set(p["isr"]) == set(p["replicas"]) == {1, 2, 3}
        assert p["high_watermark"] == ASYNC_MESSAGES + SYNC_MESSAGES
        assert p["high_watermark"] == max(acked[p["partition"]].values()) + 1
        for node in p["replicas"]:
            assert len(segments(run_dir, node, p["partition"])) >= 2, (node, p)
    assert json.loads((run_dir / "replicas.json").read_text()) == doc


def test_snapshot_asks_in_batches_not_per_partition(cluster, written, tmp_path, monkeypatch):
    """A snapshot at rest of 5 partitions x 3 replicas: one Metadata request per question
    and one ListOffsets per broker per question, not a round trip per partition/replica."""
    sent: list[tuple[str, int | None]] = []
    ask, ask_many = cluster._ask, cluster._ask_many

    def counting_ask(admin, request, node_id=None):
        sent.append((type(request).__name__, node_id))
        return ask(admin, request, node_id)

    def counting_ask_many(admin, requests):
        sent.extend((type(r).__name__, n) for n, r in requests.items())
        return ask_many(admin, requests)

    monkeypatch.setattr(cluster, "_ask", counting_ask)
    monkeypatch.setattr(cluster, "_ask_many", counting_ask_many)
    doc = snapshot_replicas(cluster, [TOPIC], tmp_path, timeout=30)
    assert doc["at_rest"] is True
    assert [p["high_watermark"] for p in doc["partitions"]] == \
        [p["high_watermark"] for p in written[2]["partitions"]]
    kinds = [kind for kind, _ in sent]
    # by-name topic: metadata for the partition count, the at-rest check, the high watermarks
    assert kinds.count("MetadataRequest") == 3, sent
    # log end offsets: one per broker; high watermarks: one per leader (at most 3 brokers)
    assert len(kinds) - 3 <= 6 and kinds.count("ListOffsetsRequest") == len(kinds) - 3, sent


# -- verify-logs ----------------------------------------------------------------------------------
def test_clean_snapshot_is_valid_with_zero_anomalies(written):
    run_dir = written[0]
    v = verify_logs(run_dir)
    assert v.valid, v.summary()
    assert [v.counts[k] for k in ("corrupt_batches", "missing_batches", "divergent_batches",
                                  "segment_mismatches")] == [0, 0, 0, 0]
    assert v.first_divergence == []
    assert v.counts["partitions"] == len(CODECS) and v.counts["replicas"] == 3 * len(CODECS)
    files = sorted(run_dir.glob("replicas/*/*/*.log"))
    assert v.counts["segments"] == len(files)
    assert v.counts["bytes"] == sum(f.stat().st_size for f in files)
    assert v.counts["batches"] == sum(len(scan_segment(f)[0]) for f in files)
    by_file = {s["file"]: s for s in v.segments}
    for f in files:
        s = by_file[str(f.relative_to(run_dir))]
        assert s["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
        assert s["base_offset"] == int(f.stem)
    d = v.to_dict()
    assert set(d) >= {"valid", "counts", "first_divergence", "segments", "examples"}
    json.dumps(d)


def test_flipped_byte_in_a_follower_is_one_corrupt_batch(run):
    partition = 1  # gzip
    node = follower(run, partition)
    seg = segments(run, node, partition)[0]
    batches, _ = scan_segment(seg)
    victim = batches[2]
    data = bytearray(seg.read_bytes())
    data[victim.position + victim.length - 3] ^= 0x5A
    seg.write_bytes(bytes(data))

    v = verify_logs(run)
    assert not v.valid
    assert v.counts["corrupt_batches"] == 1, v.summary()
    assert v.counts["missing_batches"] == v.counts["divergent_batches"] == 0, v.summary()
    [first] = v.first_divergence
    assert (first["topic"], first["partition"], first["offset"], first["kind"]) == (
        TOPIC, partition, victim.base_offset, "corrupt")
    assert set(first["replicas"]) == {"1", "2", "3"}
    assert first["replicas"][str(node)] == victim.stored_crc
    [example] = v.examples["corrupt_batches"]
    assert example["node"] == node and example["offset"] == victim.base_offset
    assert example["file"] == str(seg.relative_to(run))
    assert example["position"] == victim.position


def test_truncated_follower_is_missing_its_batches(run):
    partition = 0
    node = follower(run, partition)
    files = segments(run, node, partition)
    keep, *drop = files
    batches, _ = scan_segment(keep)
    half = len(batches) // 2
    with open(keep, "r+b") as f:
        f.truncate(batches[half].position)
    for f in drop:
        f.unlink()
    leader = partition_info(run, partition)["leader"]
    on_leader = [b.base_offset for f in segments(run, leader, partition)
                 for b in scan_segment(f)[0]]
    lost = [o for o in on_leader if o >= batches[half].base_offset]

    v = verify_logs(run)
    assert not v.valid
    assert v.counts["missing_batches"] == len(lost), v.summary()
    assert v.counts["corrupt_batches"] == v.counts["divergent_batches"] == 0
    [first] = v.first_divergence
    assert (first["partition"], first["offset"], first["kind"]) == (
        partition, batches[half].base_offset, "missing")
    assert first["replicas"][str(node)] is None
    assert all(first["replicas"][str(n)] is not None for n in (1, 2, 3) if n != node)
    assert {e["node"] for e in v.examples["missing_batches"]} == {node}


def test_follower_batch_replaced_by_another_valid_batch_is_divergent(run):
    partition = 0  # uncompressed: the replacement is built the same way
    node = follower(run, partition)
    seg = segments(run, node, partition)[1]
    batches, _ = scan_segment(seg)
    victim = batches[1]
    data = seg.read_bytes()
    records = victim.last_offset - victim.base_offset + 1
    forged = build_batch(victim.base_offset, [f"forged-{i}".encode() for i in range(records)],
                         leader_epoch=victim.leader_epoch)
    seg.write_bytes(data[:victim.position] + forged + data[victim.position + victim.length:])
    assert all(b.crc_ok for b in scan_segment(seg)[0])

    v = verify_logs(run)
    assert not v.valid
    assert (v.counts["divergent_batches"], v.counts["corrupt_batches"],
            v.counts["missing_batches"]) == (1, 0, 0), v.summary()
    [first] = v.first_divergence
    assert (first["partition"], first["offset"], first["kind"]) == (
        partition, victim.base_offset, "divergent")
    forged_crc = struct.unpack_from(">I", forged, 17)[0]
    assert first["replicas"][str(node)] == forged_crc
    others = {first["replicas"][str(n)] for n in (1, 2, 3) if n != node}
    assert others == {victim.stored_crc} and forged_crc != victim.stored_crc


def test_replicas_rolled_at_different_offsets_are_still_valid(run):
    """One follower's first segment re-split at a batch boundary, its second half merged
    with the next segment: that replica rolled at other offsets than the others."""
    partition = 4  # zstd
    node = follower(run, partition)
    first, second, *_ = segments(run, node, partition)
    batches, _ = scan_segment(first)
    cut = batches[len(batches) // 2]
    data = first.read_bytes()
    first.write_bytes(data[:cut.position])
    merged = data[cut.position:] + second.read_bytes()
    second.unlink()
    (first.parent / f"{cut.base_offset:020d}.log").write_bytes(merged)

    v = verify_logs(run)
    assert v.valid, v.summary()
    assert (v.counts["corrupt_batches"], v.counts["missing_batches"],
            v.counts["divergent_batches"]) == (0, 0, 0)
    # the first segment is closed everywhere but now differs on one replica: reported only
    assert v.counts["segment_mismatches"] == 1
    [mismatch] = v.examples["segment_mismatches"]
    assert (mismatch["partition"], mismatch["base_offset"]) == (partition, 0)


def test_replica_outside_the_isr_is_judged_only_up_to_its_log_end(run):
    partition = 2  # snappy
    node = follower(run, partition)
    *_, last = segments(run, node, partition)
    last.unlink()
    doc = json.loads((run / "replicas.json").read_text())
    for p in doc["partitions"]:
        if p["partition"] == partition:
            p["isr"] = [n for n in p["isr"] if n != node]
    (run / "replicas.json").write_text(json.dumps(doc))
    v = verify_logs(run)
    assert v.valid, v.summary()
    # back in the ISR, the same files are missing batches
    for p in doc["partitions"]:
        p["isr"] = list(p["replicas"])
    (run / "replicas.json").write_text(json.dumps(doc))
    v = verify_logs(run)
    assert not v.valid and v.counts["missing_batches"] > 0


def test_cli_exit_status_and_json(run):
    """A byte flipped in the first batch of a follower's log: exit 1, JSON says where."""
    partition = 3  # lz4
    node = follower(run, partition)
    seg = segments(run, node, partition)[0]
    data = bytearray(seg.read_bytes())
    data[100] ^= 0xFF
    seg.write_bytes(bytes(data))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "pytest_kreplica.cli", "verify-logs",
                           str(run), "--json"], capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 1, (proc.stdout[-3000:], proc.stderr[-2000:])
    out = json.loads(proc.stdout)
    assert out["valid"] is False and out["counts"]["corrupt_batches"] == 1
    assert out["first_divergence"][0]["partition"] == partition


# -- locate -----------------------------------------------------------------------------------
def test_lost_ids_are_found_in_the_log_of_every_codec(written, run):
    from pytest_kreplica.validation.engine.spark import get_spark
    from pytest_kreplica.validation.replicas.locate import locate_missing

    acked = written[1]
    spark = get_spark()
    rows = []
    for partition, codec in enumerate(CODECS):
        rid = f"{codec}-{ASYNC_MESSAGES // 2}"
        rows.append((rid, "lost", TOPIC, partition, acked[partition][rid]))
    rows.append(("never-written-1", "lost", TOPIC, 0, 3))
    rows.append(("never-written-2", "unseen", TOPIC, 1, 9))
    missing = spark.createDataFrame(
        rows, "id string, anomaly string, topic string, partition int, offset bigint")
    found = locate_missing(spark, run, missing)
    assert found["counts"]["in_log"] == len(CODECS)
    assert found["counts"]["not_in_log"] == 2
    assert found["counts"]["undecodable_batches"] == 0
    by_id = {e["id"]: e for e in found["examples"]["in_log"]}
    assert len(by_id) == len(CODECS)
    for rid, _, _, partition, offset in rows[:len(CODECS)]:
        where = by_id[rid]["found"]
        assert sorted(w["node"] for w in where) == [1, 2, 3]
        assert {(w["partition"], w["offset"]) for w in where} == {(partition, offset)}
    assert {e["id"] for e in found["examples"]["not_in_log"]} == {"never-written-1",
                                                                 "never-written-2"}


def test_id_above_the_high_watermark_is_not_in_log(written, run):
    """Only the committed range counts: lower the HW below an id's offset."""
    from pytest_kreplica.validation.engine.spark import get_spark
    from pytest_kreplica.validation.replicas.locate import locate_missing

    acked = written[1]
    rid = "none-300"
    doc = json.loads((run / "replicas.json").read_text())
    for p in doc["partitions"]:
        if p["partition"] == 0:
            p["high_watermark"] = acked[0][rid]
    (run / "replicas.json").write_text(json.dumps(doc))
    spark = get_spark()
    missing = spark.createDataFrame([(rid,), ("none-10",)], "id string")
    found = locate_missing(spark, run, missing)
    assert found["counts"] == {"in_log": 1, "not_in_log": 1, "undecodable_batches": 0}
    assert found["examples"]["not_in_log"] == [{"id": rid}]
    assert load_layout(run).partitions[0].high_watermark == acked[0][rid]


# -- wiring: the checker and the case runner --------------------------------------------------
def write_history(run: Path, acked: dict[str, int], not_polled: str, ghost: str) -> None:
    """sends: every acknowledged id of partition 0 plus ``ghost`` (acknowledged past the log
    end); polls: all of them but ``not_polled`` and ``ghost``."""
    sends, polls = [], []
    for i, (rid, offset) in enumerate(sorted(acked.items(), key=lambda kv: kv[1])):
        sends.append({"process": 0, "topic": TOPIC, "partition": 0, "id": rid,
                      "offset": offset, "status": "ok", "invoke_ns": i, "complete_ns": i + 1,
                      "error": None})
        if rid != not_polled:
            polls.append({"process": 1, "poll": i, "topic": TOPIC, "partition": 0,
                          "offset": offset, "id": rid, "time_ns": i + 2})
    sends.append({"process": 0, "topic": TOPIC, "partition": 0, "id": ghost,
                  "offset": 10_000, "status": "ok", "invoke_ns": 10**6, "complete_ns": 10**6,
                  "error": None})
    for name, rows in (("sends", sends), ("polls", polls)):
        (run / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_check_tells_lost_by_the_broker_from_missed_by_the_consumer(written, run):
    from pytest_kreplica.validation.checker import check

    acked = written[1][0]
    write_history(run, acked, not_polled="none-200", ghost="ghost-1")
    verdict = check(run, "at-least-once")
    counts = verdict.counts
    assert (counts["lost"], counts["unseen"]) == (1, 1), counts
    assert (counts["in_log"], counts["not_in_log"]) == (1, 1), counts
    [kept] = verdict.examples["in_log"]
    assert kept["id"] == "none-200"
    assert {(f["node"], f["offset"]) for f in kept["found"]} == {
        (n, acked["none-200"]) for n in (1, 2, 3)}
    assert [e["id"] for e in verdict.examples["not_in_log"]] == ["ghost-1"]


def test_case_runner_replica_check_on_the_live_cluster(cluster, written, tmp_path):
    from pytest_kreplica.scenarios.runner import verify_replicas

    check = verify_replicas(cluster, [TOPIC], len(CODECS), tmp_path)
    assert check.valid and check.at_rest, check.as_dict()
    assert check.logs["counts"]["corrupt_batches"] == 0
    assert check.segments == len(list(tmp_path.glob("replicas/*/*/*.log")))
    assert json.loads((tmp_path / "replicas.json").read_text())["at_rest"] is True
