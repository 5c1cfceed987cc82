"""The anomaly rules of shared/HISTORY.md as one linear Spark plan.

sends ∪ polls ──► window 1, by (topic-partition, offset bucket) ordered by offset: the
                  largest known offset below (poll skips), ids per offset
                  (inconsistent_offsets), highest polled offset (lost/unseen) (windows.py)
            ──► window 2, by (process, topic-partition) in poll / invoke order: consecutive
                  pairs (nonmonotonic_polls, poll_skips, nonmonotonic_sends); candidate pairs
                  look up the process's assign / rebalance times (a broadcast, tiny)
            ──► per id: acked / failed / indeterminate / polled, positions (duplicated,
                  lost, unseen, aborted_reads, unexpected, recovered)
            ──► one row of counts and examples (``findings``).

The per-id step also carries which rows a pair rule's example shows, so one query returns
the counts and the examples together: a history with anomalies costs no second pass (the few
rows shown are read afterwards from the input, filtered by their row numbers or ids, before
any window). The windows and the per-id step see topics and clusters as hashes
(``code``), ids as two hashes (``id``, ``id2``: 128 bits) and the status as flags, so no row
they sort, copy or group carries a string; every aggregate and key of the per-id step is a
long, which keeps it a hash aggregation (examples are carried as row numbers, ``seq``, and
show the ids read back from the input). Everything is Spark SQL expressions: no Python UDF.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from ..engine.reuse import per_session
from .codes import ID2_SEED, code, code_of
from .exempt import exempt
from .windows import POLL, SEND, SEND_STREAM, by_offset, by_order

# a row's number in its table, taken once, in the read itself (``tables.read_spark(row=ROW)``;
# ``build`` and the transactional path expect numbered tables): a number taken after a join
# or a shuffle may differ between the counting query and the later read of the rows an
# example shows, so the transactional path numbers its inputs before its joins
ROW = "_row"


@dataclass
class Frames:
    per_id: DataFrame  # one row per id, with its anomaly flags and example carriers
    union: DataFrame  # sends and polls before the windows (what ``positions`` keeps of)
    one_task: bool = False  # a small history's plan, in one task (``build``)

    @functools.cached_property
    def positions(self) -> DataFrame:
        """Sends and polls before the windows, by row number (``seq``): where each id was
        seen. Built when an example or the look-up first needs it: each DataFrame step is
        analysed when it is made, and a clean history never reads these rows."""
        return self.union.where(_positioned()).select(*_position_columns())


def _union(sends: DataFrame, polls: DataFrame) -> DataFrame:
    send_columns, poll_columns = _union_columns()
    return sends.select(*send_columns).unionByName(polls.select(*poll_columns))


@per_session
def _union_columns() -> tuple[list[Column], list[Column]]:
    """What ``_union`` selects from the sends and from the polls, with ``ok`` and ``known``
    worked out per side (one analysed step fewer than adding them to the union)."""
    good = ~F.col("_bad")
    ok = good & (F.col("status") == "ok")
    s = [
        (F.col(ROW) * 2 + SEND).alias("seq"),
        F.lit(SEND).alias("src"), good.alias("good"),
        *map(F.col, ("process", "topic", "partition", "offset", "id", "cluster", "status")),
        F.col("invoke_ns").alias("o1"), F.col("complete_ns").alias("o2"),
        F.lit(None).cast(LongType()).alias("t"), F.lit(None).cast(LongType()).alias("poll"),
        ok.alias("ok"),
        # a position known to hold this id: acknowledged at that offset, or polled there
        (ok & F.col("offset").isNotNull()).alias("known"),
    ]
    p = [
        (F.col(ROW) * 2 + POLL).alias("seq"),
        F.lit(POLL).alias("src"), good.alias("good"),
        *map(F.col, ("process", "topic", "partition", "offset", "id", "cluster")),
        F.lit(None).cast("string").alias("status"),
        F.col("poll").alias("o1"), F.coalesce("index", ROW).alias("o2"),
        F.col("time_ns").alias("t"), F.col("poll"),
        F.lit(False).alias("ok"), (good & F.col("offset").isNotNull()).alias("known"),
    ]
    return s, p


def build(
    sends: DataFrame,
    polls: DataFrame,
    exempting: dict[int, list[int]],
    mirrored: bool = False,
    assignments: dict[int, list[tuple[int, tuple[str, ...] | None]]] | None = None,
    one_task: bool = False,
) -> Frames:
    """``sends`` and ``polls`` numbered (``ROW``). ``assignments`` (history version 2,
    ``tables.read_assignments``): when given, an assign / rebalance exempts a pair only for
    a partition the process did not hold after it (its owner changed); an event without an
    assignment exempts every partition. ``one_task``: run the whole plan in one task, without
    an exchange (a small history: the checker's ``SMALL_INPUT_BYTES``).

    No step asks for a frame's schema: a Connect session answers each such question with a
    round trip to the server (7 of them were 0.29 s of a 1.4 s small check)."""
    u = _union(sends, polls)
    if one_task:  # one partition: the windows and aggregations need no exchange
        u = u.coalesce(1)
    union = u
    u = by_offset(_as_longs(u), one_task)
    window_2, candidates = by_order()
    u = u.select("*", *window_2).withColumns(candidates)
    u = u.select("*", *_pair_flags(exempt(exempting, assignments)))
    per_id = _per_id(u, mirrored, one_task)
    return Frames(per_id=per_id, union=union, one_task=one_task)


@per_session
def _position_columns() -> list[Column]:
    """What ``Frames.positions`` keeps of a row (Columns, not names: a name costs a round
    trip to the driver JVM each time it is selected)."""
    return [F.col(n) for n in ("seq", "id", "cluster", "topic", "partition", "offset",
                               "process", "poll")]


@per_session
def _positioned() -> Column:
    """The union's rows that ``Frames.positions`` keeps."""
    return F.col("known") | F.col("ok") | (F.col("good") & (F.col("src") == POLL))


def _pair_flags(exempt: Column | None) -> list[Column]:
    """The pair rules' flags; ``exempt`` (None: no pair is) clears a poll pair's."""
    plain = _unexempted_pair_flags()
    if exempt is None:
        return plain
    return [(F.col("np_cand") & ~exempt).alias("nonmonotonic_poll"),
            (F.col("skip_cand") & ~exempt).alias("poll_skip"), plain[2]]


@per_session
def _unexempted_pair_flags() -> list[Column]:
    """nonmonotonic_poll, poll_skip (every candidate) and nonmonotonic_send."""
    return [F.col("np_cand").alias("nonmonotonic_poll"),
            F.col("skip_cand").alias("poll_skip"),
            ((F.col("stream") == SEND_STREAM) & F.col("prev_offset").isNotNull()
             & (F.col("offset") < F.col("prev_offset"))).alias("nonmonotonic_send")]


def count_when(cond: Column) -> Column:
    """How many rows ``cond`` holds for, as an aggregate."""
    return F.sum(F.when(cond, 1).otherwise(0))


def carrier_names() -> list[str]:
    """The per-id columns ``_example_carriers`` adds, in its order (the one place they are
    named: ``findings`` takes them from here, without asking a frame for its schema)."""
    names = [n for flag in ROW_FLAGS.values() for n in (f"ex_{flag}", f"ex_{flag}_prev")]
    return [*names, "ex_inconsistent_offset", "ex_inconsistent_offset_other"]


@per_session
def _example_carriers() -> list[Column]:
    """Per id, which rows its examples show, carried through the counting pass so that
    showing an anomaly costs no second pass (``findings``): the row sequence numbers of the
    first flagged pair of each pair rule and of the two ids at an inconsistent offset.
    Longs only, so the per-id step stays a hash aggregation (a string or a struct in any
    aggregate makes Spark sort every row by id twice); ``findings`` reads the few rows shown
    by their numbers."""
    c = F.col
    out = []
    for flag in ROW_FLAGS.values():
        first = F.when(c(flag), c("seq"))
        out += [F.min(first), F.min_by(F.when(c(flag), c("prev_seq")), first)]
    first = F.when(c("inconsistent_offset"), c("seq"))
    out += [F.min_by(F.when(c("inconsistent_offset"), c("seq_lo")), first),
            F.min_by(F.when(c("inconsistent_offset"), c("seq_hi")), first)]
    return [column.alias(name) for column, name in zip(out, carrier_names(), strict=True)]


def _as_longs(u: DataFrame) -> DataFrame:
    """The rows as the windows and the per-id step see them: topic and cluster as codes,
    the id as two codes, the status as two flags. Every string a row carries is copied by
    each window and compared by each sort (JFR of a warm 1M check: string reads, copies and
    compares were the largest self time), and a string key makes the per-id aggregation a
    slower one (10M + 10M, warm, alternating: 75-79 s with string ids, 60-66 s with long
    ones); the rules only compare these values, and the rows an example shows are read back
    with their names (``Frames.positions``). Two topic names of one history with the same
    64-bit hash would be taken for one: about 1 in 10^17 for a few hundred topics; ids get
    128 bits (two hashes, the second seeded differently), so two of 100M ids collide with a
    chance of about 1 in 10^22."""
    return u.withColumns(_long_columns()).drop("status")


@per_session
def _long_columns() -> dict[str, Column]:
    return {
        "id": code("id"), "id2": F.when(F.col("id").isNotNull(), F.xxhash64(F.lit(ID2_SEED), "id")),
        "topic": code("topic"), "cluster": code("cluster"),
        "failed": F.col("status").eqNullSafe("fail"),
        "info": F.col("status").eqNullSafe("info"),
    }


def _per_id(u: DataFrame, mirrored: bool, one_task: bool) -> DataFrame:
    aggregates, flags = _per_id_columns(mirrored)
    # shuffled by id before aggregating: a hash aggregation in the windows' own tasks cannot
    # be made to spill when a window buffer needs memory (10M + 10M failed with
    # UNABLE_TO_ACQUIRE_MEMORY); after the exchange it runs alone in its tasks. A small
    # history in one task (``build``) needs no exchange: it fits in memory.
    by_id = u.groupBy("id", "id2") if one_task else u.repartition("id").groupBy("id", "id2")
    per_id = by_id.agg(*aggregates).select("*", *flags)
    return per_id if not mirrored else _mirrored_loss(per_id)


@per_session
def _per_id_columns(mirrored: bool) -> tuple[list[Column], list[Column]]:
    """The per-id step's aggregates, and the id rules' flags drawn from them."""
    good, src = F.col("good"), F.col("src")
    known = F.col("known")
    # duplicated: an id at two or more distinct positions. A set of tuples has two distinct
    # members exactly when some coordinate's min differs from its max: fixed-width aggregates
    # instead of collecting sets. Mirrored runs judge each cluster on its own.
    buckets = [F.col("cluster") == code_of("source"), F.col("cluster") == code_of("target"),
               F.col("cluster").isNull()] if mirrored else [F.lit(True)]
    spread = []
    for i, bucket in enumerate(buckets):
        cond = known & bucket
        for coord in ("topic", "partition", "offset"):
            spread += [F.min(F.when(cond, F.col(coord))).alias(f"lo{i}_{coord}"),
                       F.max(F.when(cond, F.col(coord))).alias(f"hi{i}_{coord}")]
    polled_for_loss = (src == POLL) & good
    if mirrored:
        polled_for_loss = polled_for_loss & (F.col("cluster") == code_of("target"))
    aggregates = [
        count_when(good & (src == SEND)).alias("n_send"),
        count_when(F.col("ok")).alias("n_ok"),
        count_when(good & (src == SEND) & F.col("failed")).alias("n_fail"),
        count_when(good & (src == SEND) & F.col("info")).alias("n_info"),
        count_when(good & (src == POLL)).alias("n_poll"),
        count_when(polled_for_loss).alias("n_poll_loss"),
        count_when(~good & (src == SEND)).alias("n_bad_sends"),
        count_when(~good & (src == POLL)).alias("n_bad_polls"),
        F.max(F.when(F.col("passed_here"), 1)).alias("passed"),
        F.min(F.when(F.col("ok"), F.col("offset"))).alias("ok_offset"),
        F.min(F.when(F.col("ok"), F.col("topic"))).alias("ok_topic_code"),
        F.min(F.when(F.col("ok"), F.col("partition"))).alias("ok_partition"),
        F.min(F.when(F.col("ok"), F.col("cluster"))).alias("ok_cluster_code"),
        F.min(F.when(F.col("ok"), F.col("seq"))).alias("ok_seq"),
        count_when(F.col("nonmonotonic_poll")).alias("nonmonotonic_polls"),
        count_when(F.col("poll_skip")).alias("poll_skips"),
        count_when(F.col("nonmonotonic_send")).alias("nonmonotonic_sends"),
        count_when(F.col("inconsistent_offset")).alias("inconsistent_offsets"),
        *spread,
        *_example_carriers(),
    ]
    dup = F.lit(False)
    for i in range(len(buckets)):
        for coord in ("topic", "partition", "offset"):
            dup = dup | F.coalesce(F.col(f"lo{i}_{coord}") != F.col(f"hi{i}_{coord}"),
                                   F.lit(False))
    missing = (F.col("n_ok") > 0) & (F.col("n_poll_loss") == 0) & F.col("id").isNotNull()
    polled = F.col("n_poll") > 0
    # lost or unseen, in the same step (a mirrored run works them out after a join)
    loss = [] if mirrored else _lost_or_unseen(missing)
    return aggregates, [
        missing.alias("missing"), *loss,
        dup.alias("duplicated"),
        ((F.col("n_fail") > 0) & polled).alias("aborted_reads"),
        ((F.col("n_send") == 0) & polled).alias("unexpected"),
        ((F.col("n_info") > 0) & polled).alias("recovered"),
    ]


def _lost_or_unseen(missing: Column) -> list[Column]:
    """An acknowledged id no one polled: lost when a later offset of its partition was."""
    passed = F.coalesce(F.col("passed") == 1, F.lit(False))
    return [(missing & passed).alias("lost"), (missing & ~passed).alias("unseen")]


def _mirrored_loss(per_id: DataFrame) -> DataFrame:
    """Lost and unseen in a mirrored run: lost when an id acknowledged later in the same
    source partition was polled on the target (mirrored partitions keep their numbers and
    order)."""
    reach = (per_id.where((F.col("n_ok") > 0) & (F.col("n_poll_loss") > 0))
             .groupBy(F.col("ok_cluster_code").alias("r_cluster"),
                      F.col("ok_topic_code").alias("r_topic"),
                      F.col("ok_partition").alias("r_partition"))
             .agg(F.max("ok_offset").alias("reach")))
    joined = per_id.join(
        reach,
        F.col("missing") & F.col("ok_cluster_code").eqNullSafe(F.col("r_cluster"))
        & (F.col("ok_topic_code") == F.col("r_topic"))
        & (F.col("ok_partition") == F.col("r_partition")),
        "left",
    )
    passed = F.coalesce(F.col("reach") > F.col("ok_offset"), F.lit(False))
    return joined.withColumns({"lost": F.col("missing") & passed,
                               "unseen": F.col("missing") & ~passed}
                              ).drop("r_cluster", "r_topic", "r_partition", "reach")


ID_FLAGS = ("lost", "unseen", "duplicated", "aborted_reads", "unexpected", "recovered")
PAIR_COUNTS = ("nonmonotonic_polls", "poll_skips", "nonmonotonic_sends", "inconsistent_offsets")
# a pair rule's count and the per-row flag it counts
ROW_FLAGS = {"nonmonotonic_polls": "nonmonotonic_poll", "poll_skips": "poll_skip",
             "nonmonotonic_sends": "nonmonotonic_send"}
RULE_NAMES = (*ID_FLAGS, *PAIR_COUNTS)  # the version 1 anomalies; txn.py counts the others
