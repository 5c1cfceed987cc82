"""Whether a replica snapshot can show that a record is gone.

"In no replica's log" excuses a loss only when the snapshot of the record's partition is
shown, against the history, able to see records (docs/failures.md "Loss and its evidence"):

- ``replicas.json`` lists at least the case's replication factor of replicas, and each has a
  copy (its ``<topic>-<partition>`` directory);
- the high watermark covers every offset a consumer read on the partition, and is above 0
  when records of the partition were acknowledged;
- every record a consumer read below the high watermark is in each replica's copy at the
  offset it was read at (the copy holds the records the consumers saw, not others);
- every batch below the high watermark is decoded (none fails its CRC or its decoding).

``blind_partitions`` returns, per partition that fails, the reasons; a missing record of such
a partition is not excused, whatever the fault records say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .layout import PartitionInfo, ReplicaLayout

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


def replica_records(layout: ReplicaLayout, part: PartitionInfo
                    ) -> dict[int, tuple[dict[int, str | None], int]]:
    """node -> ({offset: id} of every record below the high watermark, batches below it
    that could not be decoded), for every listed replica with a copy."""
    from .records import Unreadable, records_below  # kafka's decoder: when needed

    out: dict[int, tuple[dict[int, str | None], int]] = {}
    for s in layout.segment_files():
        if (s.topic, s.partition) != (part.topic, part.partition):
            continue
        records, undecodable = out.setdefault(s.node, ({}, 0))
        for item in records_below(str(s.path), s.base_offset, s.next_base_offset,
                                  part.high_watermark):
            if isinstance(item, Unreadable):
                undecodable += 1
            else:
                records[item[0]] = item[1]
        out[s.node] = (records, undecodable)
    return out


def _read_at(polls: pa.Table, topic: str, partition: int) -> dict[int, set[str]]:
    """offset -> the ids consumers read there, on one partition."""
    import pyarrow.compute as pc

    mask = pc.and_(pc.equal(polls["topic"], topic), pc.equal(polls["partition"], partition))
    out: dict[int, set[str]] = {}
    for r in polls.filter(mask).select(["offset", "id"]).group_by(["offset", "id"]) \
            .aggregate([]).to_pylist():
        out.setdefault(r["offset"], set()).add(r["id"])
    return out


def partition_problems(layout: ReplicaLayout, part: PartitionInfo | None, name: str,
                       read_at: dict[int, set[str]], acked: int, replication_factor: int
                       ) -> list[str]:
    """Why the snapshot of one partition cannot show a record gone (empty: it can)."""
    if part is None:
        return [f"{name} is not in replicas.json"]
    out = []
    hw = part.high_watermark
    if len(part.replicas) < replication_factor:
        out.append(f"replicas.json lists {len(part.replicas)} replica(s) "
                   f"{list(part.replicas)} of {name}, the case's replication factor is "
                   f"{replication_factor}")
    if read_at and max(read_at) >= hw:
        out.append(f"its high watermark {hw} is not above offset {max(read_at)}, which a "
                   f"consumer read")
    elif hw == 0 and acked:
        out.append(f"its high watermark is 0: the snapshot holds no committed record of a "
                   f"partition with {acked} acknowledged")
    copies = replica_records(layout, part)
    for node in part.replicas:
        if node not in copies:
            out.append(f"node {node} has no copy of {name} "
                       f"({layout.partition_dir(node, part.topic, part.partition)} holds no "
                       f"segment)")
            continue
        records, undecodable = copies[node]
        if undecodable:
            out.append(f"node {node}: {undecodable} batch(es) below the high watermark cannot "
                       f"be decoded")
        wrong = [(offset, rid) for offset, ids in sorted(read_at.items()) if offset < hw
                 for rid in sorted(ids) if records.get(offset) != rid]
        if wrong:
            offset, rid = wrong[0]
            held = records.get(offset)
            out.append(f"node {node}: {len(wrong)} record(s) consumers read below the high "
                       f"watermark are not at their offset in its copy, e.g. {rid} read at "
                       f"{offset}, where the copy holds "
                       + (held if held is not None else "nothing"))
    return out


def blind_partitions(layout: ReplicaLayout, polls: pa.Table, acked: pa.Table,
                     wanted: set[tuple[str, int]], replication_factor: int
                     ) -> dict[tuple[str, int], list[str]]:
    """The partitions of ``wanted`` whose snapshot cannot show a record gone, with why."""
    import pyarrow.compute as pc

    parts = {(p.topic, p.partition): p for p in layout.partitions}
    out: dict[tuple[str, int], list[str]] = {}
    for topic, partition in sorted(wanted):
        n_acked = acked.filter(pc.and_(pc.equal(acked["topic"], topic),
                                       pc.equal(acked["partition"], partition))).num_rows
        problems = partition_problems(layout, parts.get((topic, partition)),
                                      f"{topic}-{partition}",
                                      _read_at(polls, topic, partition), n_acked,
                                      replication_factor)
        if problems:
            out[(topic, partition)] = problems
    return out


def describe(blind: dict[tuple[str, int], list[str]]) -> dict[str, Any]:
    """``blind`` keyed by ``topic-partition`` (verdict.json's ``tradeoff.blind``)."""
    return {f"{t}-{p}": reasons for (t, p), reasons in sorted(blind.items())}
