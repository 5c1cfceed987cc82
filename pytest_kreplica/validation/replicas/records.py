"""Decode the records of a v2 batch to (offset, id) pairs.

Decompression (gzip, snappy in Kafka's xerial framing, lz4 frames, zstd) and the record
layout are kafka-python's (``DefaultRecordBatch`` and ``kafka.codec``), so this module only
applies the run-directory contract: a record's id is its value up to the first space.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka.record.default_records import DefaultRecordBatch

from .batches import CONTROL_MASK


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
