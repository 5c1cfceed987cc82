"""Which pair-rule candidates an assign or a rebalance exempts (HISTORY.md: no
nonmonotonic poll or poll skip counts across an ``assign`` / ``rebalance`` of the process).

The few event times travel in the plan as literal maps, so exempting a pair needs no
Python worker and no join."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from .codes import partition_code


def exempt(exempting: dict[int, list[int]],
           assignments: dict[int, list[tuple[int, tuple[str, ...] | None]]] | None
           ) -> Column | None:
    """Whether a candidate pair is exempt (None: no pair is): its process had an assign /
    rebalance in (previous poll, this poll]."""
    if assignments:
        return _moved_partition(assignments)
    # one SQL expression, parsed by the driver in one round trip: built from Columns, its
    # literals and functions were about 90 round trips of a smoke case's check
    times = ", ".join(f"{int(process)}L, array({', '.join(f'{int(t)}L' for t in ts)})"
                      for process, ts in sorted(exempting.items()) if ts)
    if not times:
        return None
    return F.expr(f"coalesce(exists(CASE WHEN np_cand OR skip_cand THEN try_element_at("
                  f"map({times}), process) END, x -> x > prev_t AND x <= t), false)")


def _moved_partition(assignments: dict[int, list[tuple[int, tuple[str, ...] | None]]]
                     ) -> Column:
    """True for a candidate pair whose process had, in (previous poll, this poll], an
    assign / rebalance that left this partition out of its assignment (or recorded none)."""
    events = F.create_map(*[
        c for process, evs in sorted(assignments.items())
        for c in (F.lit(process).cast(LongType()), F.array(*[
            F.struct(F.lit(t).cast(LongType()).alias("t"),
                     (F.array(*[partition_code(x) for x in held]).cast("array<bigint>")
                      if held is not None else F.lit(None).cast("array<bigint>")).alias("held"))
            for t, held in evs]))
    ])
    mine = F.when(F.col("np_cand") | F.col("skip_cand"),
                  F.try_element_at(events, F.col("process")))
    here = F.xxhash64("topic", "partition")  # the topic's code and the partition
    return F.coalesce(F.exists(mine, lambda e: (
        (e["t"] > F.col("prev_t")) & (e["t"] <= F.col("t"))
        & (e["held"].isNull() | ~F.coalesce(F.array_contains(e["held"], here),
                                             F.lit(False))))), F.lit(False))
