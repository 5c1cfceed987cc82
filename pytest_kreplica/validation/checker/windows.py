"""The checker's two windows (``rules.build``), window 1 keyed finer than a topic-partition.

Window 1 orders each topic-partition's rows by known offset; window 2 orders each stream (a
process's polls, its acknowledged sends) of a topic-partition by poll / invoke order. Keyed
by topic-partition alone, every row of a partition is in one task: a one-partition history
left one of two cores idle (2M + 2M, warm: 34.8 s against 20.2 s in 16 partitions), and in
16 partitions the hash of three topic-partitions sometimes fell in one task.

So window 1 runs per (topic-partition, bucket of 2^16 offsets). Two of its results reach
across buckets, and come from one small aggregation per (topic-partition, bucket), joined
back by broadcast (``_offset_bounds``):

- a poll skip is a pair of consecutive polls with a known offset between them. A dense rank
  of known offsets answered it when the whole partition was one window; the same question
  is "the largest known offset below this one (``pred``) is above the previous poll's", and
  ``pred`` is a running max within the bucket or, for a bucket's first offset, the largest
  known offset of the lower buckets;
- an acknowledged id is lost, not unseen, when a higher offset of its partition was polled:
  the partition's highest polled offset.

Rows at no known offset (failed or unanswered sends, records without an offset) need none of
window 1's results; they are spread over 64 buckets of their own by row number, below any
known offset's bucket (a negative offset's too), so no one task holds them all and no bucket
mixes the two kinds. A small history runs in one task (``rules.build``'s ``one_task``): one bucket,
the whole partition's frame, and no aggregation or join.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from ..engine.reuse import per_session

SEND, POLL = 0, 1  # the union's ``src``
POLL_STREAM, SEND_STREAM = 1, 2  # window 2's streams: a process's polls, its acked sends
TP = ("cluster", "topic", "partition")
BUCKET_BITS = 16  # window 1's offset buckets: 65,536 offsets each
UNKNOWN_BUCKETS = 64  # how many buckets the rows at no known offset are spread over
# where those buckets start: below any known offset's bucket (offset >> BUCKET_BITS >= -2^47)
UNKNOWN_BASE = -(1 << 62)
W1_KEY = (*TP, "ob")  # window 1's key: topic-partition and offset bucket
_BOUND = ("lower_known", "tp_polled")  # what ``_offset_bounds`` adds to a row


def by_offset(u: DataFrame, one_task: bool) -> DataFrame:
    """Window 1 over ``u`` (the union as longs), with what the rest takes from it:
    ``inconsistent_offset`` and its example rows, ``pred``, ``passed_here``, ``stream``."""
    columns, scratch = _window_1(one_task)
    u = u.withColumns({"ob": _bucket(one_task, BUCKET_BITS)})
    if one_task:
        u = u.select("*", *columns)
    else:
        bounds = F.broadcast(_offset_bounds(u))
        u = u.select("*", *columns).join(bounds, _bound_key(), "left").drop(*_bound_names())
    return u.withColumns(_found(one_task)).drop(*scratch)


def _known(name: str) -> Column:
    """``name``'s value on a row at a known offset (null elsewhere): what window 1 compares."""
    return F.when(F.col("known"), F.col(name))


def _good_poll() -> Column:
    return F.col("good") & (F.col("src") == POLL)


@per_session
def _bucket(one_task: bool, bits: int) -> Column:
    """A row's window-1 bucket (``bits``: read when called, so a test can make buckets of a
    few offsets)."""
    if one_task:
        return F.lit(0).cast(LongType())
    spread = UNKNOWN_BASE - F.col("seq") % UNKNOWN_BUCKETS
    return F.coalesce(F.shiftright(_known("offset"), bits), spread)


@per_session
def _window_1(one_task: bool) -> tuple[list[Column], list[str]]:
    """Window 1's columns and the scratch columns dropped after ``_found``.

    Every function shares one partitioning and order (only frames differ), so Spark runs
    them in one Window operator: one sort and one pass over each bucket's buffered rows (a
    bucket, not a whole partition, is what the operator buffers and spills).

    A large history's buckets hold only known rows, or only rows at no known offset
    (``_bucket``), whose results ``_found`` masks: its windows compare the columns as they
    are. Each ``_known(...)`` operand would be a column of its own before the exchange,
    carried through the shuffle, the sort and the window's buffer (docs/checker.md, "Window
    1 over raw columns"). One task's single bucket mixes both kinds, so it keeps ``_known``."""
    value = _known if one_task else F.col
    korder = value("offset")
    w1 = Window.partitionBy(*W1_KEY).orderBy(korder)
    at_offset = w1.rangeBetween(0, 0)  # the rows at the same offset
    known_id = value("id")
    columns = [
        F.max(korder).over(w1.rangeBetween(Window.unboundedPreceding, -1)).alias("pred_in"),
        (F.row_number().over(w1) == F.rank().over(w1)).alias("first_at_offset"),
        F.min(known_id).over(at_offset).alias("id_lo"),
        F.max(known_id).over(at_offset).alias("id_hi"),
        F.min(value("id2")).over(at_offset).alias("id2_lo"),
        F.max(value("id2")).over(at_offset).alias("id2_hi"),
        F.min_by(value("seq"), known_id).over(at_offset).alias("seq_lo"),
        F.max_by(value("seq"), known_id).over(at_offset).alias("seq_hi"),
    ]
    scratch = ["ob", "pred_in", "first_at_offset", "id_lo", "id_hi", "id2_lo", "id2_hi"]
    if one_task:  # the bucket is the whole partition
        whole = w1.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
        columns.append(F.max(_polled_offset()).over(whole).alias("tp_polled"))
        scratch.append("tp_polled")
    else:
        scratch += _BOUND
    return columns, scratch


def _polled_offset() -> Column:
    return F.when(_good_poll(), F.col("offset"))


def _offset_bounds(u: DataFrame) -> DataFrame:
    """Per (topic-partition, bucket) of known offsets: the largest known offset of the lower
    buckets and the partition's highest polled offset (a row per non-empty bucket: about
    one per 65,536 records)."""
    per_bucket = u.where(F.col("known")).groupBy(*W1_KEY).agg(*_bucket_aggregates())
    return per_bucket.select(*_bound_columns())


@per_session
def _bucket_aggregates() -> list[Column]:
    return [F.max("offset").alias("b_known"), F.max(_polled_offset()).alias("b_polled")]


@per_session
def _bound_columns() -> list[Column]:
    w = Window.partitionBy(*TP).orderBy("ob")
    lower = w.rowsBetween(Window.unboundedPreceding, -1)
    whole = w.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    lower_known, tp_polled = _BOUND
    return [*(F.col(n).alias(f"b_{n}") for n in W1_KEY),
            F.max("b_known").over(lower).alias(lower_known),
            F.max("b_polled").over(whole).alias(tp_polled)]


@per_session
def _bound_names() -> list[str]:
    return [f"b_{n}" for n in W1_KEY]


@per_session
def _bound_key() -> Column:
    key = F.lit(True)
    for n in W1_KEY:
        key = key & F.col(n).eqNullSafe(F.col(f"b_{n}"))
    return key


@per_session
def _found(one_task: bool) -> dict[str, Column]:
    """What window 1 found, as the few columns the rest needs: window 2 sorts and copies
    every column its rows carry (warm 1M, alternating in one session: -7 %)."""
    inconsistent = F.col("known") & F.col("first_at_offset") & (
        (F.col("id_lo") != F.col("id_hi")) | (F.col("id2_lo") != F.col("id2_hi")))
    pred = F.col("pred_in") if one_task else F.coalesce("pred_in", "lower_known")
    return {
        "inconsistent_offset": inconsistent,
        "seq_lo": F.when(inconsistent, F.col("seq_lo")),
        "seq_hi": F.when(inconsistent, F.col("seq_hi")),
        "pred": F.when(F.col("known"), pred),
        # an acknowledged row below the partition's highest polled offset
        "passed_here": F.col("ok") & (F.col("tp_polled") > F.col("offset")),
        "stream": (F.when(_good_poll(), F.lit(POLL_STREAM))
                   .when(F.col("ok") & F.col("offset").isNotNull(), F.lit(SEND_STREAM))),
    }


@per_session
def by_order() -> tuple[list[Column], dict[str, Column]]:
    """Window 2's columns (consecutive pairs per stream, the process's polls or acked sends,
    and topic-partition) and the pair rules' candidates drawn from them. A poll skips when
    a known offset lies between it and the previous poll: the largest one below it
    (``pred``) is above the previous poll's offset."""
    w2 = Window.partitionBy("stream", "process", *TP).orderBy("o1", "o2")
    columns = [
        F.lag("offset").over(w2).alias("prev_offset"),
        F.lag("t").over(w2).alias("prev_t"),
        F.lag("seq").over(w2).alias("prev_seq"),
    ]
    is_poll = F.col("stream") == POLL_STREAM
    has_prev = F.col("prev_offset").isNotNull()
    return columns, {
        "np_cand": is_poll & has_prev & (F.col("offset") <= F.col("prev_offset")),
        "skip_cand": (is_poll & has_prev & (F.col("offset") > F.col("prev_offset"))
                      & F.coalesce(F.col("pred") > F.col("prev_offset"), F.lit(False))),
    }
