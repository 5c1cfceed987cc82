"""Record ids out of batches of every codec (kafka-python's decoders)."""

from __future__ import annotations

import struct

import pytest

from pytest_kreplica.validation.replicas.records import (
    RecordDecodeError,
    iter_record_ids,
    record_id,
)
from pytest_kreplica.validation.replicas.synth import CODECS, build_batch, message_values


@pytest.mark.parametrize("codec", list(CODECS))
def test_ids_of_every_codec(codec):
    ids = [f"p1-{i}" for i in range(50)]
    batch = build_batch(1000, message_values(ids, size=120), codec=codec)
    if codec != "none":
        assert struct.unpack_from(">h", batch, 21)[0] & 7 == CODECS[codec]
    assert list(iter_record_ids(batch)) == [(1000 + i, x) for i, x in enumerate(ids)]


def test_id_is_the_value_up_to_the_first_space():
    assert record_id(b"abc 123 xyz") == "abc"
    assert record_id(b"abc") == "abc"
    assert record_id(None) is None


def test_control_batches_hold_no_ids():
    batch = bytearray(build_batch(5, [b"\x00\x00\x00\x01"]))
    attrs, = struct.unpack_from(">h", batch, 21)
    struct.pack_into(">h", batch, 21, attrs | 0x20)
    assert list(iter_record_ids(bytes(batch))) == []


def test_undecodable_compressed_batch_raises_a_clear_error():
    batch = bytearray(build_batch(5, message_values(["a"] * 20, 100), codec="zstd"))
    batch[70:80] = b"\xff" * 10
    with pytest.raises(RecordDecodeError, match="offset 5"):
        list(iter_record_ids(bytes(batch)))
