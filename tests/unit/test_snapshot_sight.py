"""A replica snapshot says "gone" only when it is shown able to see: the planted acks=1
loss of m3 (``tests.planted_loss``), excused by the leader kill when the snapshot of t-0 is
sound, is refused when the snapshot cannot show m3 absent - a high watermark below offsets
the consumer read, empty copies at a high watermark of 0, copies holding other records than
the ones read, a replica of the replication factor not listed, a batch not decoded."""

from __future__ import annotations

import json
import struct

import crc32c
import pytest

from pytest_kreplica.validation.replicas.synth import build_batch, message_values, write_partition
from pytest_kreplica.validation.tradeoffs import judge
from tests.planted_loss import leader_kill, write_lost_m3
from tests.unit.test_tradeoffs import COUNTS, snapshot

LOG = ["m0", "m1", "m2", "m4", "m5"]  # what the new leader holds at 0..4
RF3 = {"acks": 1, "replication_factor": 3}


def judged(run, params=RF3):
    return judge("at-least-once", COUNTS, run, leader_kill(), params)


def refused(run, params=RF3):
    t = judged(run, params)
    assert t["accepted"] is False, t["reason"]
    assert "m3 (acknowledged at t-0 offset 3) is in no replica's log, but the snapshot " \
           "cannot show it gone" in t["reason"]
    return t


def test_a_sound_snapshot_excuses_the_loss(tmp_path):
    run = write_lost_m3(tmp_path)
    snapshot(run, LOG)
    t = judged(run)
    assert t["accepted"] is True and "blind" not in t, t["reason"]


def test_a_high_watermark_below_offsets_a_consumer_read(tmp_path):
    run = write_lost_m3(tmp_path)
    snapshot(run, LOG, hw=3)  # m4, m5 read at 3, 4 lie above it: unseen by the look-up
    t = refused(run)
    assert "its high watermark 3 is not above offset 4, which a consumer read" in t["reason"]
    assert list(t["blind"]) == ["t-0"]


def test_a_high_watermark_of_0_with_empty_directories(tmp_path):
    run = write_lost_m3(tmp_path)
    for node in (1, 2, 3):
        (run / "replicas" / str(node) / "t-0").mkdir(parents=True)
    snapshot(run, [], hw=0, nodes=())
    doc = json.loads((run / "replicas.json").read_text())
    doc["nodes"] = {str(n): f"replicas/{n}" for n in (1, 2, 3)}
    doc["partitions"][0].update(replicas=[1, 2, 3], isr=[1, 2, 3], leader=2)
    (run / "replicas.json").write_text(json.dumps(doc))
    t = refused(run)
    assert "high watermark 0 is not above offset 4" in t["reason"]
    assert "node 1 has no copy of t-0" in " ".join(t["blind"]["t-0"])


def test_segments_that_hold_other_records_than_the_ones_read(tmp_path):
    run = write_lost_m3(tmp_path)
    snapshot(run, ["x0", "x1", "x2", "x3", "x4"])  # another topic's copy, say
    t = refused(run)
    assert "5 record(s) consumers read below the high watermark are not at their offset " \
           "in its copy, e.g. m0 read at 0, where the copy holds x0" in t["reason"]


def test_a_replica_of_the_replication_factor_not_listed(tmp_path):
    run = write_lost_m3(tmp_path)
    snapshot(run, LOG, nodes=(2,))
    t = refused(run)
    assert "replicas.json lists 1 replica(s) [2] of t-0, the case's replication factor " \
           "is 3" in t["reason"]
    assert judged(run, {"acks": 1, "replication_factor": 1})["accepted"] is True
    assert judged(run, {"acks": 1})["accepted"] is False  # the matrix's default: 3


def undecodable(batch: bytes) -> bytes:
    """``batch`` marked gzip-compressed (it is not), its CRC set again: sound framing, a
    payload nothing can decode."""
    data = bytearray(batch)
    struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | 1)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


@pytest.mark.parametrize("crc", ["sound", "broken"])
def test_a_batch_below_the_high_watermark_that_cannot_be_decoded(tmp_path, crc):
    """m3 sits at offset 5 in a batch the look-up cannot decode (it was counted, then
    ignored): nothing shows it gone."""
    run = write_lost_m3(tmp_path)
    snapshot(run, LOG, hw=6)
    hidden = undecodable(build_batch(5, message_values(["m3"])))
    if crc == "broken":
        hidden = hidden[:-1] + bytes([hidden[-1] ^ 0xFF])
    for node in (1, 2, 3):
        write_partition(run / "replicas" / str(node) / "t-0",
                        [build_batch(0, message_values(LOG)), hidden], per_segment=2)
    t = refused(run)
    assert "node 1: 1 batch(es) below the high watermark cannot be decoded" in t["reason"]
