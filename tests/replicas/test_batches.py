"""The v2 batch reader on batches built by kafka-python's builder (pure logic; the
verifier's integration tests use segments a real cluster wrote)."""

from __future__ import annotations

import hashlib
import struct

import pytest

from pytest_kreplica.validation.replicas.batches import CRC_START, SegmentScanner, scan_segment
from pytest_kreplica.validation.replicas.synth import (
    CODECS,
    build_batch,
    message_values,
    segment_name,
)


def crc32c_reference(data: bytes) -> int:
    """Bitwise CRC-32C (Castagnoli, reflected 0x82F63B78): independent of the crc32c lib."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def make_batches(n: int = 12, first: int = 0) -> list[bytes]:
    out, offset = [], first
    for i in range(n):
        count = 1 + i % 3
        values = message_values([f"m{offset + k}" for k in range(count)], size=40)
        out.append(build_batch(offset, values, codec=list(CODECS)[i % len(CODECS)],
                               leader_epoch=i // 4))
        offset += count
    return out


@pytest.fixture
def batches() -> list[bytes]:
    return make_batches()


def write(tmp_path, data: bytes, base: int = 0):
    path = tmp_path / segment_name(base)
    path.write_bytes(data)
    return path


def expected_ranges(batches: list[bytes]) -> list[tuple[int, int]]:
    out = []
    for b in batches:
        base, = struct.unpack_from(">q", b)
        delta, = struct.unpack_from(">i", b, 23)
        out.append((base, base + delta))
    return out


def test_reference_crc_matches_the_stored_crc():
    b = build_batch(7, message_values(["x1"], 30), codec="gzip")
    stored, = struct.unpack_from(">I", b, 17)
    assert crc32c_reference(b[CRC_START:]) == stored


@pytest.mark.parametrize("chunk_size", [64, 1000, 8 << 20])
def test_sound_segment_reads_every_batch(tmp_path, batches, chunk_size):
    data = b"".join(batches)
    path = write(tmp_path, data)
    found, scanner = scan_segment(path, chunk_size=chunk_size)
    assert [(b.base_offset, b.last_offset) for b in found] == expected_ranges(batches)
    assert all(b.problem is None and b.crc_ok for b in found)
    assert [b.length for b in found] == [len(b) for b in batches]
    assert [b.stored_crc for b in found] == [crc32c_reference(b[CRC_START:]) for b in batches]
    assert [b.leader_epoch for b in found] == [i // 4 for i in range(len(batches))]
    assert scanner.sha256 == hashlib.sha256(data).hexdigest()
    assert scanner.size == len(data)
    assert scanner.batches == len(batches)
    assert scanner.last_offset == expected_ranges(batches)[-1][1]


def corrupt_only(found):
    return [(b.base_offset, b.problem) for b in found if b.problem]


@pytest.mark.parametrize("chunk_size", [64, 8 << 20])
@pytest.mark.parametrize("where", ["attributes", "payload", "last byte", "crc field"])
def test_one_flipped_byte_is_one_corrupt_batch(tmp_path, batches, where, chunk_size):
    k = 5
    start = sum(len(b) for b in batches[:k])
    at = {"attributes": CRC_START, "payload": 70, "last byte": len(batches[k]) - 1,
          "crc field": 18}[where]
    data = bytearray(b"".join(batches))
    data[start + at] ^= 0x41
    found, _ = scan_segment(write(tmp_path, bytes(data)), chunk_size=chunk_size)
    bad = corrupt_only(found)
    assert len(bad) == 1, bad
    assert bad[0][0] == expected_ranges(batches)[k][0]
    assert "crc mismatch" in bad[0][1]
    assert len(found) == len(batches)


@pytest.mark.parametrize("byte", [0, 3, 7])
def test_flipped_base_offset_is_blamed_on_its_batch(tmp_path, batches, byte):
    k = 4
    start = sum(len(b) for b in batches[:k])
    data = bytearray(b"".join(batches))
    data[start + byte] ^= 0x08
    found, _ = scan_segment(write(tmp_path, bytes(data)))
    bad = corrupt_only(found)
    assert [o for o, _ in bad] == [expected_ranges(batches)[k][0]], bad
    assert len(found) == len(batches)


@pytest.mark.parametrize("chunk_size", [64, 8 << 20])
@pytest.mark.parametrize("delta", [1, 0x100, -5])
def test_broken_length_resynchronises(tmp_path, batches, delta, chunk_size):
    k = 3
    start = sum(len(b) for b in batches[:k])
    data = bytearray(b"".join(batches))
    blen, = struct.unpack_from(">i", data, start + 8)
    struct.pack_into(">i", data, start + 8, blen + delta)
    found, _ = scan_segment(write(tmp_path, bytes(data)), chunk_size=chunk_size)
    bad = corrupt_only(found)
    assert [o for o, _ in bad] == [expected_ranges(batches)[k][0]], bad
    good = [(b.base_offset, b.last_offset) for b in found if not b.problem]
    ranges = expected_ranges(batches)
    assert good == ranges[:k] + ranges[k + 1:]


def test_wrong_magic_is_corrupt_and_reading_goes_on(tmp_path, batches):
    k = 2
    start = sum(len(b) for b in batches[:k])
    data = bytearray(b"".join(batches))
    data[start + 16] = 1
    found, _ = scan_segment(write(tmp_path, bytes(data)))
    bad = corrupt_only(found)
    assert len(bad) == 1 and "magic 1" in bad[0][1]
    assert bad[0][0] == expected_ranges(batches)[k][0]
    assert len(found) == len(batches)


def test_truncated_tail_is_one_corrupt_batch(tmp_path, batches):
    data = b"".join(batches)[:-10]
    found, scanner = scan_segment(write(tmp_path, data))
    bad = corrupt_only(found)
    assert len(bad) == 1 and "runs past the file's end" in bad[0][1]
    assert bad[0][0] == expected_ranges(batches)[-1][0]
    assert scanner.sha256 == hashlib.sha256(data).hexdigest()


def test_a_few_trailing_bytes_are_reported(tmp_path, batches):
    data = b"".join(batches) + b"\x00\x01\x02"
    found, _ = scan_segment(write(tmp_path, data))
    bad = corrupt_only(found)
    assert len(bad) == 1 and "trailing bytes" in bad[0][1]
    assert bad[0][0] == expected_ranges(batches)[-1][1] + 1


def test_offsets_going_backwards_are_corrupt(tmp_path):
    first = make_batches(3, first=0)
    again = make_batches(1, first=1)  # overlaps the first batches' offsets
    found, _ = scan_segment(write(tmp_path, b"".join(first + again)))
    bad = corrupt_only(found)
    assert len(bad) == 1 and "backwards" in bad[0][1]


def test_batch_beyond_the_next_segment_is_corrupt(tmp_path, batches):
    path = write(tmp_path, b"".join(batches))
    last = expected_ranges(batches)[-1]
    found = list(SegmentScanner(path, next_segment_offset=last[1]))
    assert len(corrupt_only(found)) == 1


def test_empty_file(tmp_path):
    found, scanner = scan_segment(write(tmp_path, b""))
    assert found == [] and scanner.size == 0 and scanner.last_offset is None
    assert scanner.sha256 == hashlib.sha256(b"").hexdigest()


def test_large_batch_larger_than_a_chunk(tmp_path):
    big = build_batch(0, message_values([f"b{i}" for i in range(300)], size=1000))
    small = build_batch(300, message_values(["s"], size=10))
    found, scanner = scan_segment(write(tmp_path, big + small), chunk_size=4096)
    assert [(b.base_offset, b.last_offset, b.problem) for b in found] == [
        (0, 299, None), (300, 300, None)]
