"""Dependency cycles between committed transactions (Adya's G0 and G1c), found on Spark.

Jepsen's Kafka analyses (shared seeds 001, 002) read a log as a sequence of appends: when a
committed transaction's record sits just before another committed transaction's record in a
partition, the first *write-precedes* the second (``ww``); when a transaction that both reads
and writes (read-process-write, its polls carry ``txn``) polled a record another committed
transaction wrote, the writer *write-reads* before it (``wr``). A cycle of such edges is

  write_cycle  (G0)  a cycle of ww edges only. Kafka's transaction protocol allows it (two
                     open transactions interleave their appends): reported, never invalid;
  read_cycle   (G1c) a cycle of wr edges only: each transaction read another's writes before
                     that one committed. read_committed forbids it (Redpanda 21.10.1 had it);
  mixed_cycle  (G1c) a cycle of ww and wr edges: allowed by the protocol, reported.

Each is counted per strongly connected component of its edge kinds (so a cluster of
transactions tangled together counts once, with its members as the example).

How it scales (10M operations in a 4 GB driver): Spark builds the edges (a window
over each partition's committed records, a join of reads to writes) and orders the
transactions by when their commit was invoked. Every cycle has an edge that points back in
that order, and every transaction on a cycle lies inside the order interval of such a back
edge. So Spark keeps only the edges inside the merged intervals of back edges (none in the
common case: nothing is collected at all), and the driver streams them interval by interval
(``toLocalIterator``) into Tarjan's algorithm, holding one interval's edges at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

CYCLE_ANOMALIES = ("write_cycle", "read_cycle", "mixed_cycle")
WW, WR = "ww", "wr"
MAX_EXAMPLE_TXNS = 8


def edges(sends: DataFrame, polls: DataFrame, outcomes: DataFrame) -> DataFrame:
    """Distinct (src, dst, kind, at) dependency edges between committed transactions."""
    c = F.col
    committed = outcomes.where(c("outcome") == "committed").select("txn")
    writes = (sends.where(~c("_bad") & c("txn").isNotNull() & (c("status") == "ok")
                          & c("offset").isNotNull())
              .join(committed, "txn").select("txn", "id", "topic", "partition", "offset")
              .dropDuplicates(["txn", "topic", "partition", "offset"]))
    order = Window.partitionBy("topic", "partition").orderBy("offset")
    ww = (writes.withColumn("_next", F.lead("txn").over(order))
          .withColumn("_next_offset", F.lead("offset").over(order))
          .where(c("_next").isNotNull() & (c("_next") != c("txn")))
          .select(c("txn").alias("src"), c("_next").alias("dst"), F.lit(WW).alias("kind"),
                  F.format_string("%s-%d offsets %d < %d", "topic", "partition", "offset",
                                  "_next_offset").alias("at")))
    readers = polls.where(~c("_bad") & c("txn").isNotNull()).select(
        c("txn").alias("dst"), "id", "process", "topic", "partition", "offset")
    wr = (readers.join(committed.withColumnRenamed("txn", "dst"), "dst")
          .join(writes.select(c("txn").alias("src"), "id"), "id")
          .where(c("src") != c("dst"))
          .select("src", "dst", F.lit(WR).alias("kind"),
                  F.format_string("process %d polled %s at %s-%d offset %d", "process", "id",
                                  "topic", "partition", "offset").alias("at")))
    w = Window.partitionBy("src", "dst", "kind").orderBy("at")
    return (ww.unionByName(wr).withColumn("_n", F.row_number().over(w))
            .where(c("_n") == 1).drop("_n"))


def _covered(edge_df: DataFrame, outcomes: DataFrame) -> DataFrame:
    """The edges inside the merged commit-order intervals of back edges, with ``grp``."""
    c = F.col
    key = outcomes.where(c("outcome") == "committed").select(
        "txn", F.struct(F.coalesce("end_ns", F.lit(0)).alias("t"), c("txn").alias("x"))
        .alias("k"))
    e = (edge_df.join(key.select(c("txn").alias("src"), c("k").alias("ks")), "src")
         .join(key.select(c("txn").alias("dst"), c("k").alias("kd")), "dst"))
    back = e.where(c("kd") < c("ks")).select(c("kd").alias("lo"), c("ks").alias("hi"))
    # one group: every back edge of the history (they are few); named, because a window with
    # no partition makes the Spark Connect client print a warning on the user's terminal
    every = Window.partitionBy(F.lit(0)).orderBy("lo", "hi")
    reach = F.max("hi").over(every.rowsBetween(Window.unboundedPreceding, -1))
    merged = (back.withColumn("_reach", reach)
              .withColumn("_new", F.when(c("_reach").isNull() | (c("lo") > c("_reach")), 1)
                          .otherwise(0))
              .withColumn("grp", F.sum("_new").over(every.rowsBetween(
                  Window.unboundedPreceding, 0)))
              .groupBy("grp").agg(F.min("lo").alias("lo"), F.max("hi").alias("hi")))
    inside = (e.join(F.broadcast(merged), (c("ks") >= c("lo")) & (c("ks") <= c("hi"))
                     & (c("kd") >= c("lo")) & (c("kd") <= c("hi"))))
    return inside.select("grp", "src", "dst", "kind", "at")


def _components(nodes: Iterable[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), those with 2+ members."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(succ.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def classify(group: list[tuple[str, str, str, str]]) -> list[tuple[str, dict[str, Any]]]:
    """The cycles among one interval's edges (src, dst, kind, at): (anomaly, example)."""
    found: list[tuple[str, dict[str, Any]]] = []
    for name, kinds in (("write_cycle", {WW}), ("read_cycle", {WR}),
                        ("mixed_cycle", {WW, WR})):
        succ: dict[str, list[str]] = {}
        for src, dst, kind, _ in group:
            if kind in kinds:
                succ.setdefault(src, []).append(dst)
        for comp in _components(sorted(succ), succ):
            members = set(comp)
            inner = [(s, d, k, a) for s, d, k, a in group
                     if s in members and d in members and k in kinds]
            if name == "mixed_cycle" and {k for _, _, k, _ in inner} != {WW, WR}:
                continue  # a pure cycle, counted above
            found.append((name, {
                "txns": comp[:MAX_EXAMPLE_TXNS], "size": len(comp),
                "edges": [f"{s} -{k}-> {d} ({a})" for s, d, k, a in sorted(inner)
                          ][:MAX_EXAMPLE_TXNS]}))
    return found


def _groups(rows: Iterable[Any]) -> Iterator[list[tuple[str, str, str, str]]]:
    """The edges of one interval at a time, from rows sorted by ``grp``."""
    group: list[tuple[str, str, str, str]] = []
    current = None
    for row in rows:
        if row["grp"] != current and group:
            yield group
            group = []
        current = row["grp"]
        group.append((row["src"], row["dst"], row["kind"], row["at"]))
    if group:
        yield group


def find(sends: DataFrame, polls: DataFrame, outcomes: DataFrame, limit: int
         ) -> tuple[dict[str, int], dict[str, list[dict[str, Any]]]]:
    """Counts of the three cycle anomalies and up to ``limit`` examples of each."""
    counts = dict.fromkeys(CYCLE_ANOMALIES, 0)
    examples: dict[str, list[dict[str, Any]]] = {}
    covered = _covered(edges(sends, polls, outcomes), outcomes).orderBy("grp", "src", "dst")
    for group in _groups(covered.toLocalIterator()):
        for name, example in classify(group):
            counts[name] += 1
            if len(examples.setdefault(name, [])) < limit:
                examples[name].append(example)
    return counts, {k: v for k, v in examples.items() if v}
