"""Build valid record batch v2 bytes and segment files with kafka-python's batch builder,
for unit tests, benchmarks and the plugin's Spark warm-up (``validation/warmup.py``); the
integration tests use segments a real cluster wrote."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def build_batch(base_offset: int, values: list[bytes], codec: str = "none",
                leader_epoch: int = 0, timestamp: int = 1_700_000_000_000) -> bytes:
    """One batch holding ``values`` at ``base_offset`` onwards, CRC set as Kafka does."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=CODECS[codec],
                                        is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 30)
    for delta, value in enumerate(values):
        builder.append(delta, timestamp=timestamp, key=None, value=value, headers=[])
    data = builder.build()
    # base offset and leader epoch are assigned by the broker and lie outside the CRC
    struct.pack_into(">q", data, 0, base_offset)
    struct.pack_into(">i", data, 12, leader_epoch)
    return bytes(data)


def message_values(ids: Iterable[str], size: int = 0) -> list[bytes]:
    """Record values as the workload writes them: the id, then a space and padding."""
    out = []
    for i in ids:
        v = i.encode()
        if size > len(v) + 1:
            v += b" " + b"x" * (size - len(v) - 1)
        out.append(v)
    return out


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def write_partition(directory: Path, batches: list[bytes], per_segment: int) -> list[Path]:
    """Write ``batches`` (in offset order) into segments of ``per_segment`` batches each."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(0, len(batches), per_segment):
        group = batches[i:i + per_segment]
        base = struct.unpack_from(">q", group[0])[0]
        path = directory / segment_name(base)
        path.write_bytes(b"".join(group))
        paths.append(path)
    return paths
