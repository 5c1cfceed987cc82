"""Documented trade-offs: when an at-most-once case (acks 1/0 or unclean leader election
under faults) lost acknowledged records, the new leader writes new records at the lost
records' offsets. The checker then counts, besides ``lost``, an ``inconsistent_offsets``
anomaly at each such offset (shared/HISTORY.md: an offset tied to two ids, counting
acknowledged sends and polls). That collision is the loss itself seen from the offset side,
not a second fault, so it is accepted here when, and only when, it is fully explained:

- every inconsistent offset pairs ids of which at most one was ever polled there (readers
  agree on the log), and every other id at that offset was acknowledged and never polled
  anywhere (a lost record);
- no other anomaly that at-most-once forbids occurred.

The checker's verdict is untouched (verdict.json keeps ``valid: false``); the case passes
with ``tradeoff.accepted`` and the explanation in verdict.json and report.html.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AT_MOST_ONCE_FORBIDDEN = ("duplicated", "inconsistent_offsets", "aborted_reads", "unexpected",
                          "nonmonotonic_polls", "poll_skips")


def offset_reuse(run_dir: str | Path, limit: int = 20) -> dict[str, Any]:
    """Inconsistent offsets of a run, split into those explained by a lost acknowledged
    record and the rest (columnar: pyarrow, no Python set per message)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .report.data import read_table

    run_dir = Path(run_dir)
    sends, polls = read_table(run_dir, "sends"), read_table(run_dir, "polls")
    keys = ["topic", "partition", "offset", "id"]
    acked = sends.filter(pc.and_(pc.equal(sends["status"], "ok"), pc.is_valid(sends["offset"])))
    acked = acked.select(keys).append_column("polled", pa.repeat(False, acked.num_rows))
    seen = polls.select(keys).append_column("polled", pa.repeat(True, polls.num_rows))
    rows = pa.concat_tables([acked, seen]).group_by(keys).aggregate([("polled", "any")])
    per_offset = rows.group_by(["topic", "partition", "offset"]).aggregate(
        [("id", "count_distinct")])
    clash = per_offset.filter(pc.greater(per_offset["id_count_distinct"], 1))
    polled_ids = pc.unique(polls["id"])
    explained, unexplained = 0, []
    if clash.num_rows:
        members = rows.join(clash, ["topic", "partition", "offset"], join_type="inner")
        for (topic, partition, offset), group in _groups(members.to_pylist()):
            readers = {r["id"] for r in group if r["polled_any"]}
            others = [r["id"] for r in group if r["id"] not in readers]
            never_read = not pc.any(pc.is_in(pa.array(others, pa.string()),
                                             value_set=polled_ids)).as_py()
            if len(readers) <= 1 and never_read:
                explained += 1
            elif len(unexplained) < limit:
                unexplained.append({"topic": topic, "partition": partition, "offset": offset,
                                    "ids": sorted(r["id"] for r in group),
                                    "polled": sorted(readers)})
    return {"inconsistent_offsets": clash.num_rows, "explained_by_loss": explained,
            "unexplained": clash.num_rows - explained, "unexplained_examples": unexplained}


def _groups(rows: list[dict[str, Any]]):
    by: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault((r["topic"], r["partition"], r["offset"]), []).append(r)
    return sorted(by.items())


def judge(semantics: str, counts: dict[str, int], run_dir: str | Path) -> dict[str, Any] | None:
    """The trade-off verdict of an at-most-once case whose history the checker found
    invalid, or None when no trade-off applies (other semantics, or already valid)."""
    if semantics != "at-most-once" or not counts.get("inconsistent_offsets"):
        return None
    others = {k: counts.get(k) for k in AT_MOST_ONCE_FORBIDDEN
              if k != "inconsistent_offsets" and counts.get(k)}
    reuse = offset_reuse(run_dir)
    accepted = (not others and reuse["unexplained"] == 0
                and reuse["inconsistent_offsets"] == counts["inconsistent_offsets"])
    reason = (f"{reuse['explained_by_loss']} inconsistent offset(s), each the offset of a "
              f"lost acknowledged record that the new leader reused (the acks/unclean "
              f"election trade-off this case documents); {counts.get('lost', 0)} lost")
    if not accepted:
        reason = (f"not explained by loss alone: other anomalies {others}, "
                  f"{reuse['unexplained']} unexplained inconsistent offset(s)")
    return {"accepted": accepted, "reason": reason, **reuse}
