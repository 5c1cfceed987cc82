"""The ``tiered`` dimension, the remote tier's broker and topic settings, the remote tier's
check over segments built here, the final read's judgement and ``remote_reads`` in
verdict.json's counts. The real cluster's side: tests/integration/test_tiered_storage.py."""

from __future__ import annotations

import pytest
import yaml

from pytest_kreplica.cluster.facilities.impl import tiered
from pytest_kreplica.errors import InputError, MatrixError
from pytest_kreplica.matrix import load_matrix
from pytest_kreplica.matrix.dimensions import DIMENSIONS, InvalidValue
from pytest_kreplica.report.verdict import build_verdict
from pytest_kreplica.scenarios.tiered import read_check
from pytest_kreplica.validation.replicas.remote import REMOTE_DIR, check_remote
from pytest_kreplica.validation.replicas.synth import build_batch, message_values

PART = ("t", 0)
SEGMENT_ID = "A" * 21 + "w"  # 22 characters, as LocalTieredStorage names a segment


@pytest.mark.parametrize(("value", "parsed"), [("on", "on"), ("off", "off"), (True, "on"),
                                               (False, "off")])
def test_tiered_takes_on_and_off_in_both_yaml_spellings(value, parsed):
    assert DIMENSIONS["tiered"].parse(value) == parsed


@pytest.mark.parametrize("value", ["yes", 1, None, "ON"])
def test_a_bad_tiered_value_lists_the_allowed_ones(value):
    with pytest.raises(InvalidValue, match="^off [|] on$"):
        DIMENSIONS["tiered"].parse(value)


def _matrix(tmp_path, dimensions, scenario="replication"):
    path = tmp_path / "tiered-bad.yaml"
    path.write_text(yaml.safe_dump({"description": "d", "scenario": scenario,
                                    "dimensions": dimensions}))
    return path


@pytest.mark.parametrize(("dimensions", "expected"), [
    ({"tiered": ["on"], "kafka_version": ["3.8.1"]},
     "tiered: on needs Kafka >= 3.9 (production-ready tiered storage), got kafka_version "
     "3.8.1; allowed: off, or kafka_version >= 3.9.0"),
    ({"tiered": ["on"], "backend": ["docker"]},
     "tiered: on needs backend process (the remote store is a directory on this machine), "
     "got backend docker; allowed: off, or backend process"),
    ({"failure": ["remote_store_readonly"], "target": ["leader"]},
     "failure: remote_store_readonly needs tiered: on (it acts on the remote store), got "
     "tiered off; allowed: tiered on, or another failure"),
    ({"tiered": ["on"], "workload": ["txn"]},
     "tiered: on needs scenario replication and workload plain, got scenario replication, "
     "workload txn; allowed: off"),
])
def test_tiered_on_is_refused_where_it_cannot_run_with_one_line(tmp_path, dimensions, expected):
    path = _matrix(tmp_path, dimensions)
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    text = str(info.value)
    assert text.startswith(str(path)) and "\n" not in text
    assert text.endswith(expected)


def test_a_tiered_case_is_marked_and_its_cluster_is_a_tiered_one(tmp_path):
    from pytest_kreplica.cluster.pool import cluster_spec, spec_key

    on, off = load_matrix(_matrix(tmp_path, {"tiered": ["on", "off"]})).cases
    assert on.tiered == "on" and "tiered" in on.markers and "tiered" not in off.markers
    assert "tiered_storage" in cluster_spec(on).facilities
    assert "tiered_storage" not in cluster_spec(off).facilities
    assert spec_key(cluster_spec(on)).endswith("-tiered")


def test_an_environment_of_its_own_deselects_tiered_cases_with_their_reason(tmp_path):
    from pytest_kreplica.cluster.capabilities import Capabilities

    on, off = load_matrix(_matrix(tmp_path, {"tiered": ["on", "off"]})).cases
    reason = Capabilities(where="my.yaml").lacks(on)
    assert reason == "tiered: on runs on the process backend's own clusters only, not my.yaml"
    assert Capabilities(where="my.yaml").lacks(off) is None


def test_kafka_before_3_9_is_refused_at_the_broker_too():
    with pytest.raises(InputError, match="tiered: on needs Kafka >= 3.9.0, got Kafka 3.8.1"):
        tiered.check_version("3.8.1")
    tiered.check_version("3.9.0")


def test_broker_settings_name_the_store_its_jar_and_a_replicable_metadata_topic(
        tmp_path, monkeypatch):
    jar = tmp_path / "kafka-storage-4.3.1-test.jar"
    monkeypatch.setattr(tiered, "store_jar", lambda version: jar)
    config = tiered.broker_config("4.3.1", 2, tmp_path / "cluster")
    assert config["remote.log.storage.system.enable"] == "true"
    assert config["remote.log.storage.manager.class.name"].endswith(".LocalTieredStorage")
    assert config["remote.log.storage.manager.class.path"] == str(jar)
    assert config["rsm.config.dir"] == str(tmp_path / "cluster" / "tiered-storage")
    assert config["rlmm.config.remote.log.metadata.topic.replication.factor"] == "2"
    assert int(config["remote.log.manager.task.interval.ms"]) <= 1000
    assert tiered.store_dir(tmp_path / "cluster").parent.is_dir()
    topic = tiered.topic_config()
    assert topic["remote.storage.enable"] == "true" and int(topic["local.retention.ms"]) <= 1000


# -- the remote tier's check -----------------------------------------------------------------
def _store(run_dir, segments):
    """Remote segments of PART in the run directory: ``segments`` = [(start, [ids per
    batch, ...]), ...]; returns offset -> id of every record written."""
    folder = run_dir / REMOTE_DIR / f"{PART[0]}-{PART[1]}"
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for start, batches in segments:
        data, offset = b"", start
        for ids in batches:
            data += build_batch(offset, message_values(ids))
            written.update({offset + i: rid for i, rid in enumerate(ids)})
            offset += len(ids)
        (folder / f"{start:020d}-{SEGMENT_ID}.log").write_bytes(data)
    return written


def _ids(first, n):
    return [f"id-{i}" for i in range(first, first + n)]


def test_a_contiguous_remote_tier_up_to_the_local_start_is_valid(tmp_path):
    acked = _store(tmp_path, [(0, [_ids(0, 3), _ids(3, 2)]), (5, [_ids(5, 4)])])
    verdict = check_remote(tmp_path, {PART: 9}, {PART: {**acked, 9: "id-9"}})
    assert verdict["valid"], verdict
    assert verdict["segments"] == 2 and verdict["partitions"][0]["remote_end"] == 8


def test_a_segment_deleted_from_the_remote_tier_is_a_gap_and_lost_acknowledged_records(
        tmp_path):
    acked = _store(tmp_path, [(0, [_ids(0, 3)]), (3, [_ids(3, 3)]), (6, [_ids(6, 3)])])
    (tmp_path / REMOTE_DIR / "t-0" / f"{3:020d}-{SEGMENT_ID}.log").unlink()
    verdict = check_remote(tmp_path, {PART: 9}, {PART: acked})
    assert not verdict["valid"]
    assert verdict["counts"]["gaps"] == 3 and verdict["counts"]["missing_acked"] == 3
    assert "offsets 3..5 (3 missing)" in verdict["examples"]["gaps"][0]


def test_a_flipped_byte_in_a_remote_segment_is_a_corrupt_batch(tmp_path):
    acked = _store(tmp_path, [(0, [_ids(0, 3), _ids(3, 3)])])
    path = tmp_path / REMOTE_DIR / "t-0" / f"{0:020d}-{SEGMENT_ID}.log"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside the last batch's records: its CRC no longer holds
    path.write_bytes(bytes(data))
    verdict = check_remote(tmp_path, {PART: 6}, {PART: acked})
    assert verdict["counts"]["corrupt_batches"] == 1 and not verdict["valid"]


def test_records_in_neither_tier_are_a_boundary_gap(tmp_path):
    acked = _store(tmp_path, [(0, [_ids(0, 3)])])
    verdict = check_remote(tmp_path, {PART: 5}, {PART: acked})
    assert verdict["counts"]["boundary_gaps"] == 1
    assert "offsets 3..4 in neither tier" in verdict["examples"]["boundary_gaps"][0]


def test_another_id_at_an_acknowledged_offset_is_a_wrong_id(tmp_path):
    acked = _store(tmp_path, [(0, [_ids(0, 3)])])
    verdict = check_remote(tmp_path, {PART: 3}, {PART: {**acked, 1: "id-other"}})
    assert verdict["counts"]["wrong_ids"] == 1 and not verdict["valid"]


def test_an_empty_remote_tier_is_not_valid(tmp_path):
    """A tiered case that tiered nothing checked nothing: it must fail."""
    verdict = check_remote(tmp_path, {PART: 0}, {PART: {0: "id-0"}})
    assert verdict["counts"]["empty"] == 1 and not verdict["valid"]
    assert verdict["segments"] == 0


# -- the final read ---------------------------------------------------------------------------
def test_the_final_read_counts_records_below_the_local_start_as_remote_reads():
    read = {PART: [(o, f"id-{o}") for o in range(10)]}
    judged = read_check(read, {PART: 4}, {PART: {o: f"id-{o}" for o in range(10)}})
    assert judged == {"ok": True, "remote_reads": 4, "records": 10, "problems": []}


def test_a_final_read_that_never_reached_the_remote_tier_fails():
    read = {PART: [(o, f"id-{o}") for o in range(10)]}
    judged = read_check(read, {PART: 0}, {PART: {}})
    assert not judged["ok"] and judged["remote_reads"] == 0
    assert "no record was read from the remote tier" in judged["problems"][0]


def test_a_gap_or_a_missed_acknowledged_record_in_the_final_read_fails():
    read = {PART: [(0, "id-0"), (2, "id-2")]}
    judged = read_check(read, {PART: 3}, {PART: {0: "id-0", 1: "id-1", 2: "id-2"}})
    assert not judged["ok"]
    assert "not gapless (offset 1 expected, 2 seen)" in judged["problems"][0]
    assert "1 acknowledged records not read at their offset, e.g. id-1 at 1" in \
        judged["problems"][1]


def test_remote_reads_join_the_checkers_counts_in_verdict_json():
    doc = build_verdict(case_id="c", parameters={}, semantics="at-least-once",
                        history={"valid": True, "counts": {"lost": 0, "acked": 5}},
                        extra={"extra_counts": {"remote_reads": 3}, "tiered": {"x": 1}})
    assert doc["counts"] == {"lost": 0, "acked": 5, "remote_reads": 3}
    assert "extra_counts" not in doc and doc["tiered"] == {"x": 1}
