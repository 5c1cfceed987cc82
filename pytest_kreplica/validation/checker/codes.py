"""Strings as 64-bit codes: what the windows and the per-id step compare instead of names.

Every string a row carries is copied by each window and compared by each sort, so the rules
see topics and clusters as one xxhash64 code and ids as two (``rules._as_longs``). The rows
an example shows are read back from the input with their own strings."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

ID2_SEED = "kreplica id2"  # hashed before the id: the second code's seed (``rules._as_longs``)


def code(name: str) -> Column:
    """A string column as a long (xxhash64; null stays null), for rules that only compare
    values: see ``rules._as_longs``."""
    return F.when(F.col(name).isNotNull(), F.xxhash64(name))


def code_of(value: str) -> Column:
    """The code (``code``) of a string constant; Spark folds it to a literal."""
    return F.xxhash64(F.lit(value))


def partition_code(held: str) -> Column:
    """The code of an assignment's ``topic:partition`` (the code of the topic and the
    partition, as ``F.xxhash64("topic", "partition")`` over coded rows); an entry whose
    partition is not a number matches nothing, as it never equalled a row's before."""
    topic, _, number = held.rpartition(":")
    if not (number.isdigit() and str(int(number)) == number):
        return F.lit(None).cast(LongType())
    return F.xxhash64(code_of(topic), F.lit(int(number)).cast(LongType()))
