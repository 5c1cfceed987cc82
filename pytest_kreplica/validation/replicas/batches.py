"""Streaming reader of Kafka record batch format v2 (magic 2) segment files.

A segment (``<base offset>.log``) is a sequence of record batches::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
    crc uint32 | attributes int16 | lastOffsetDelta int32 | ... | recordsCount int32 | records

The header is 61 bytes; ``batchLength`` counts the bytes after itself; the CRC-32C covers
``attributes`` to the end of the batch. Files are read in chunks (never whole: production
segments are 1 GiB). Problems are *reported* on the batch they concern, never raised, so one
flipped byte yields one corrupt batch and the rest of the file is still read.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import crc32c

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes batchLength does not count
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
CRC_START = 21  # attributes: first byte the CRC covers
MAGIC_AT = 16
CHUNK_SIZE = 8 << 20
# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta
_HEAD = struct.Struct(">qiibIhi")
_PREFIX = struct.Struct(">qi")
CONTROL_MASK = 0x20
CODEC_MASK = 0x07


@dataclass(slots=True)
class Batch:
    """One record batch as found in a file; ``problem`` is None for a sound batch."""

    position: int  # byte position in the file
    base_offset: int
    last_offset: int
    length: int  # bytes on disk, header included
    leader_epoch: int
    stored_crc: int
    crc_ok: bool
    attributes: int
    content_hash: bytes  # sha256 (first 16 bytes) of the whole batch as stored
    problem: str | None = None
    data: bytes | None = None  # the batch's bytes, when the scanner was asked to keep them

    @property
    def corrupt(self) -> bool:
        return self.problem is not None


def content_hash(data) -> bytes:
    """Identity of a batch's bytes, for cross-replica comparison."""
    return hashlib.sha256(data).digest()[:16]


def segment_base_offset(path: str | Path) -> int | None:
    """Base offset from a segment's file name (20 digits), or None if the name is not one."""
    stem = Path(path).name.removesuffix(".log")
    return int(stem) if stem.isdigit() else None


class SegmentScanner:
    """Iterate the batches of one segment file; afterwards ``sha256``, ``size`` and
    ``last_offset`` describe the whole file.

    ``first_offset`` (the file name's base offset) and ``next_segment_offset`` (the next
    segment's) bound the offsets a batch of this file may carry; a batch outside them, or
    going backwards, is reported as corrupt at the offset it should have had.
    """

    def __init__(self, path: str | Path, first_offset: int | None = None,
                 next_segment_offset: int | None = None, chunk_size: int = CHUNK_SIZE,
                 keep_data: bool = False):
        self.path = Path(path)
        self.first_offset = (first_offset if first_offset is not None
                             else segment_base_offset(path) or 0)
        self.next_segment_offset = next_segment_offset
        self.chunk_size = chunk_size
        self.keep_data = keep_data
        self.sha256: str | None = None
        self.size = 0
        self.batches = 0
        self.last_offset: int | None = None

    # -- reading -----------------------------------------------------------------------
    def __iter__(self) -> Iterator[Batch]:
        pending: Batch | None = None
        prev_last = self.first_offset - 1
        for batch in self._raw_batches():
            if (pending is not None and batch.problem is None and pending.problem is None
                    and pending.base_offset == prev_last + 1
                    and batch.base_offset > pending.last_offset):
                # the common case: both sound and in order
                prev_last = pending.last_offset
                yield pending
                pending = batch
                continue
            if batch.problem is None and batch.base_offset <= prev_last:
                batch.problem = (f"base offset {batch.base_offset} goes backwards "
                                 f"(previous batch ended at {prev_last})")
                batch.last_offset = batch.base_offset = prev_last + 1
            if pending is not None:
                # A batch whose successor goes back into it, while the successor fits after
                # the batch before, carries the wrong base offset itself (a flipped byte).
                if (pending.problem is None and batch.problem is None
                        and pending.base_offset != prev_last + 1
                        and prev_last < batch.base_offset <= pending.last_offset):
                    pending.problem = (f"base offset {pending.base_offset} inconsistent with "
                                       f"its neighbours (expected {prev_last + 1})")
                    pending.base_offset = pending.last_offset = prev_last + 1
                if pending.problem is None or pending.crc_ok:
                    prev_last = max(prev_last, pending.last_offset)
                yield pending
                if batch.problem is None and batch.base_offset <= prev_last:
                    batch.problem = (f"base offset {batch.base_offset} goes backwards "
                                     f"(previous batch ended at {prev_last})")
                    batch.last_offset = batch.base_offset = prev_last + 1
            pending = batch
        if pending is not None:
            limit = self.next_segment_offset
            if pending.problem is None and limit is not None and pending.last_offset >= limit:
                pending.problem = (f"last offset {pending.last_offset} reaches into the next "
                                   f"segment (base offset {limit})")
                pending.base_offset = pending.last_offset = prev_last + 1
            yield pending

    def _raw_batches(self) -> Iterator[Batch]:
        """Frame batches by their length; on a broken frame, resynchronise on the next
        position that holds a sound batch."""
        with open(self.path, "rb") as f:
            r = _Reader(f, self.chunk_size)
            self.size = r.size
            scan = _Scan(self.first_offset)
            while not scan.done:
                if not scan.resync:
                    yield from self._sound_batches(r, scan)
                if scan.resync:
                    scan.resync = False
                    if not self._resync(r, scan.expected):
                        break
                yield from self._framed_batch(r, scan)
            r.drain()
        self.sha256 = r.hasher.hexdigest()
        self.batches = scan.count
        self.last_offset = scan.last

    def _sound_batches(self, r: _Reader, scan: _Scan) -> Iterator[Batch]:
        """The fast path: every sound batch wholly in the buffer from the reader's position
        on; returns at the first that is not (cut by the buffer's end, or broken)."""
        unpack_head, crc, sha256, keep = _HEAD.unpack_from, crc32c.crc32c, hashlib.sha256, \
            self.keep_data
        buf = r.buf
        mv = memoryview(buf)
        expected, last, count = scan.expected, scan.last, scan.count
        try:
            while True:
                pos = r.pos
                if pos + HEADER_SIZE > len(buf):
                    return
                base, blen, epoch, magic, stored, attrs, delta = unpack_head(buf, pos)
                end = pos + blen + LOG_OVERHEAD
                if not (magic == 2 and blen >= MIN_BATCH_LENGTH and end <= len(buf)
                        and crc(mv[pos + CRC_START:end]) == stored):
                    return
                whole = mv[pos:end]
                last_offset = base + delta
                count += 1
                yield Batch(r.start + pos, base, last_offset, end - pos, epoch, stored, True,
                            attrs, sha256(whole).digest()[:16], None,
                            bytes(whole) if keep else None)
                if last_offset >= expected:
                    expected = last_offset + 1
                if last is None or last_offset > last:
                    last = last_offset
                r.pos = end
        finally:
            scan.expected, scan.last, scan.count = expected, last, count

    def _framed_batch(self, r: _Reader, scan: _Scan) -> Iterator[Batch]:
        """The careful path: the batch at the reader's position, read by its length field,
        reported with its problem; sets ``scan.resync`` when what follows cannot be trusted
        and ``scan.done`` at the file's end."""
        if not r.fill(LOG_OVERHEAD):
            if r.available():
                scan.count += 1
                yield self._broken(r.file_pos, scan.expected,
                                   f"{r.available()} trailing bytes at byte {r.file_pos}, "
                                   f"too few for a batch header")
            scan.done = True
            return
        buf, pos, file_pos, size = r.buf, r.pos, r.file_pos, r.size
        base, blen = _PREFIX.unpack_from(buf, pos)
        total = blen + LOG_OVERHEAD
        if blen < MIN_BATCH_LENGTH or file_pos + total > size:
            where = ("runs past the file's end" if blen >= MIN_BATCH_LENGTH
                     else "is shorter than a batch header")
            scan.count += 1
            yield self._broken(file_pos, scan.expected,
                               f"batch length {blen} at byte {file_pos} {where} "
                               f"(file size {size})")
            r.skip(1)
            scan.resync = True
            return
        r.fill(total)
        batch, magic, delta = self._decoded(r, base, total, file_pos)
        scan.count += 1
        if batch.problem is not None and not self._next_frame_plausible(r, total, base):
            # the length field itself may be what broke: trust nothing after it
            batch.last_offset = batch.base_offset = scan.expected
            yield batch
            r.skip(1)
            scan.resync = True
            return
        yield batch
        if batch.crc_ok:
            scan.expected = max(scan.expected, batch.last_offset + 1)
            scan.last = (batch.last_offset if scan.last is None
                         else max(scan.last, batch.last_offset))
        elif magic == 2 and base >= scan.expected:
            scan.expected = base + delta + 1
        r.skip(total)

    def _decoded(self, r: _Reader, base: int, total: int, file_pos: int
                 ) -> tuple[Batch, int, int]:
        """The ``total`` bytes at the reader's position as a batch, with its magic and last
        offset delta; a wrong magic or CRC is its problem."""
        buf, pos = r.buf, r.pos
        _, _, epoch, magic, stored, attrs, delta = _HEAD.unpack_from(buf, pos)
        view = memoryview(buf)[pos:pos + total]
        if magic != 2:
            problem = f"magic {magic}, expected 2"
            crc_ok = False
        else:
            computed = crc32c.crc32c(view[CRC_START:])
            crc_ok = computed == stored
            problem = None if crc_ok else (
                f"crc mismatch: stored {stored:#010x}, computed {computed:#010x}")
        batch = Batch(file_pos, base, base + delta, total, epoch, stored, crc_ok,
                      attrs, content_hash(view),
                      problem, bytes(view) if self.keep_data and crc_ok else None)
        view.release()
        return batch, magic, delta

    @staticmethod
    def _next_frame_plausible(r: _Reader, total: int, base: int) -> bool:
        """After a bad batch: does a sound-looking header (or the file's end) follow it?"""
        if not r.fill(total + HEADER_SIZE):
            return r.available() == total  # exactly at the end of the file
        nbase, nblen, _, nmagic, *_ = _HEAD.unpack_from(r.buf, r.pos + total)
        return nmagic == 2 and nblen >= MIN_BATCH_LENGTH and nbase > base

    @staticmethod
    def _resync(r: _Reader, expected: int) -> bool:
        """Move to the next position holding a whole batch with magic 2, a base offset not
        below ``expected`` and a matching CRC; False when the file holds none."""
        while True:
            if not r.fill(HEADER_SIZE):
                r.skip(r.available())
                return False
            at = r.buf.find(b"\x02", r.pos + MAGIC_AT)
            if at < 0:
                r.skip(max(0, len(r.buf) - r.pos - MAGIC_AT))
                if not r.fill(HEADER_SIZE + 1):
                    r.skip(r.available())
                    return False
                continue
            r.skip(at - MAGIC_AT - r.pos)
            if not r.fill(HEADER_SIZE):
                continue
            base, blen, _, _, stored, _, _ = _HEAD.unpack_from(r.buf, r.pos)
            total = blen + LOG_OVERHEAD
            if (blen >= MIN_BATCH_LENGTH and base >= expected
                    and r.file_pos + total <= r.size and r.fill(total)
                    and crc32c.crc32c(memoryview(r.buf)[r.pos + CRC_START:r.pos + total])
                    == stored):
                return True
            r.skip(1)

    def _broken(self, position: int, expected: int, problem: str) -> Batch:
        return Batch(position, expected, expected, 0, -1, 0, False, 0, b"", problem)


@dataclass(slots=True)
class _Scan:
    """Where the scan of one file stands, shared by its fast and its careful path."""

    expected: int  # the offset the next batch should start at
    count: int = 0  # batches yielded
    last: int | None = None  # the highest last offset of a sound batch
    resync: bool = False  # what follows the reader's position cannot be trusted
    done: bool = False


class _Reader:
    """A sliding window over a file: ``buf[pos:]`` are the unparsed bytes read so far.
    Every byte read is fed to the file's sha256 exactly once, in order."""

    __slots__ = ("f", "chunk_size", "buf", "pos", "start", "eof", "size", "hasher")

    def __init__(self, f, chunk_size: int):
        self.f = f
        self.chunk_size = chunk_size
        f.seek(0, 2)
        self.size = f.tell()
        f.seek(0)
        self.buf = b""
        self.pos = 0
        self.start = 0  # file position of buf[0]
        self.eof = False
        self.hasher = hashlib.sha256()

    @property
    def file_pos(self) -> int:
        return self.start + self.pos

    def available(self) -> int:
        return len(self.buf) - self.pos

    def skip(self, n: int) -> None:
        self.pos += n

    def fill(self, need: int) -> bool:
        """Make at least ``need`` unparsed bytes available; False if the file ends first."""
        if len(self.buf) - self.pos >= need:
            return True
        while not self.eof and len(self.buf) - self.pos < need:
            rest = self.buf[self.pos:]
            want = max(self.chunk_size, need - len(rest))
            chunk = self.f.read(want)
            if len(chunk) < want:
                self.eof = True
            self.hasher.update(chunk)
            self.start += self.pos
            self.buf = rest + chunk
            self.pos = 0
        return len(self.buf) - self.pos >= need

    def drain(self) -> None:
        """Hash the bytes the parse never asked for."""
        while not self.eof:
            chunk = self.f.read(self.chunk_size)
            if len(chunk) < self.chunk_size:
                self.eof = True
            self.hasher.update(chunk)


def scan_segment(path: str | Path, **kwargs) -> tuple[list[Batch], SegmentScanner]:
    """Read a whole segment's batch list (for tests and small files)."""
    scanner = SegmentScanner(path, **kwargs)
    return list(scanner), scanner
