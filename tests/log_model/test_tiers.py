"""The tiered profile's pure logic (no Kafka): the properties of one observation of a
tiered log and the remote store's reading."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest

from pytest_kreplica.logmodel.tiered import TIERED_WEIGHTS, TieredLogMachine
from pytest_kreplica.logmodel.tiers import (
    RemoteSegment,
    TierView,
    missing_offsets,
    partition_segments,
    tier_problems,
)

pytestmark = pytest.mark.log_model


def seg(start: int, end: int) -> RemoteSegment:
    return RemoteSegment(start, end, Path(f"{start:020d}-x.log"))


def view(log_start: int, local: int, hw: int, *spans: tuple[int, int]) -> TierView:
    return TierView(log_start, local, hw, tuple(seg(a, b) for a, b in spans))


def test_a_sound_tiered_log_has_no_problem():
    # tiered 0..9 and 10..19, hotset from 15 (15..19 in both tiers), untiered 20..29
    assert tier_problems(view(0, 15, 30, (0, 9), (10, 19))) == []
    # everything local, nothing tiered yet
    assert tier_problems(view(0, 0, 30)) == []
    # DeleteRecords moved the log start inside the first remote segment; a segment below it
    # not yet deleted by the broker is no problem
    assert tier_problems(view(12, 20, 30, (0, 9), (10, 19))) == []


def test_a_gap_between_the_remote_tier_and_the_local_log_is_found():
    problems = tier_problems(view(0, 20, 30, (0, 9)))
    assert len(problems) == 1 and "offsets 10..19" in problems[0], problems
    # a remote segment missing in the middle (deleted by hand)
    problems = tier_problems(view(0, 30, 40, (0, 9), (20, 29)))
    assert len(problems) == 1 and "offsets 10..19" in problems[0], problems
    assert "expected in the remote tier" in problems[0]


def test_tiered_data_at_or_past_the_high_watermark_is_found():
    problems = tier_problems(view(0, 10, 10, (0, 10)))
    assert any("at or past the high watermark 10" in p for p in problems), problems


def test_the_local_start_must_lie_between_the_log_start_and_the_high_watermark():
    assert tier_problems(view(10, 5, 30, (0, 19)))  # earliest-local below earliest
    assert tier_problems(view(0, 31, 30, (0, 29)))  # past the high watermark


def test_missing_offsets_names_the_first_run_not_covered():
    segments = (seg(0, 4), seg(3, 9), seg(15, 20))  # overlapping copies are fine
    assert missing_offsets((0, 9), segments) is None
    assert missing_offsets((0, 20), segments) == (10, 14)
    assert missing_offsets((21, 25), segments) == (21, 25)
    assert missing_offsets((5, 5), ()) == (5, 5)


def _batch(base: int, count: int) -> bytes:
    """A record batch header of ``count`` records (no records inside: the scanner reads the
    frame and the CRC-32C only)."""
    body = struct.pack(">hiqqqhii", 0, count - 1, 0, 0, -1, -1, -1, 0)
    crc = crc32c.crc32c(body)
    return struct.pack(">qiibI", base, len(body) + 9, 0, 2, crc) + body


def test_the_store_is_read_per_partition_with_each_segment_s_last_offset(tmp_path):
    folder = tmp_path / "topic-a-0-AAAAAAAAAAAAAAAAAAAAAA"
    folder.mkdir()
    (folder / f"{0:020d}-BBBBBBBBBBBBBBBBBBBBBB.log").write_bytes(_batch(0, 3) + _batch(3, 2))
    (folder / f"{5:020d}-CCCCCCCCCCCCCCCCCCCCCC.log").write_bytes(b"")  # still being written
    other = tmp_path / "topic-a-1-AAAAAAAAAAAAAAAAAAAAAA"  # another partition
    other.mkdir()
    (other / f"{0:020d}-BBBBBBBBBBBBBBBBBBBBBB.log").write_bytes(_batch(0, 1))
    found = partition_segments(tmp_path, "topic-a", 0)
    assert [(s.start, s.end) for s in found] == [(0, 4)]
    assert partition_segments(tmp_path / "absent", "topic-a") == []


def test_tiered_rules_are_registered_by_weight_and_create_topic_is_the_tiered_one():
    state = TieredLogMachine.setup_state()
    names = [r.function.__name__ for r in state.rules]
    for name, weight in TIERED_WEIGHTS.items():
        assert names.count(name) == weight, name
    assert [r.function.__name__ for r in state.initializers] == ["create_topic"]
    assert "hotset" in state.initializers[0].arguments
