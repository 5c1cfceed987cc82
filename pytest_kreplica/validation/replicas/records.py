"""Decode the records of a v2 batch to (offset, id) pairs.

Decompression (gzip, snappy in Kafka's xerial framing, lz4 frames, zstd) and the record
layout are kafka-python's (``DefaultRecordBatch`` and ``kafka.codec``), so this module only
applies the run-directory contract: a record's id is its value up to the first space.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka.record.default_records import DefaultRecordBatch

from .batches import CONTROL_MASK, SegmentScanner


class RecordDecodeError(Exception):
    """A batch's records cannot be decoded (bad compression or record framing)."""


def record_id(value: bytes | None) -> str | None:
    """The message id a record value carries (HISTORY.md "Record values")."""
    if value is None:
        return None
    head = value.split(b" ", 1)[0]
    return head.decode("utf-8", errors="replace")


def iter_record_ids(batch: bytes | bytearray | memoryview) -> Iterator[tuple[int, str | None]]:
    """Yield (offset, id) for every data record of one whole batch; control batches
    (transaction markers) yield nothing."""
    parsed = DefaultRecordBatch(batch)
    if parsed.attributes & CONTROL_MASK:
        return
    try:
        for record in parsed:
            yield record.offset, record_id(record.value)
    except Exception as exc:  # each codec library raises its own types (ZstdError, zlib.error…)
        raise RecordDecodeError(f"cannot decode batch at offset {parsed.base_offset}: "
                                f"{exc}") from exc


class Unreadable:
    """A batch below the high watermark whose records cannot be read: its CRC does not hold
    (``crc_failed``) or its records cannot be decoded."""

    __slots__ = ("base_offset", "crc_failed")

    def __init__(self, base_offset: int, crc_failed: bool):
        self.base_offset, self.crc_failed = base_offset, crc_failed


def records_below(path: str, base_offset: int, next_base_offset: int | None, hw: int
                  ) -> Iterator[tuple[int, str | None] | Unreadable]:
    """(offset, id) of every data record of one segment below the high watermark ``hw``, and
    an ``Unreadable`` in place of each batch below it that cannot be read. The one reader of
    a segment's records for the not-in-log look-up and the snapshot's sight."""
    if base_offset >= hw:
        return
    for b in SegmentScanner(path, first_offset=base_offset,
                            next_segment_offset=next_base_offset, keep_data=True):
        if b.base_offset >= hw:
            continue
        if b.data is None:
            yield Unreadable(b.base_offset, crc_failed=True)
            continue
        try:
            yield from ((o, rid) for o, rid in iter_record_ids(b.data) if o < hw)
        except RecordDecodeError:
            yield Unreadable(b.base_offset, crc_failed=False)
