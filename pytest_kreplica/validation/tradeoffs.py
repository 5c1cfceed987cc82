"""The loss trade-off: when a case lost acknowledged records, the checker counts them
(``lost`` / ``unseen``) and, where a new leader wrote new records at the lost records'
offsets, an ``inconsistent_offsets`` anomaly at each such offset. The checker's verdict is
never changed (verdict.json keeps ``valid: false``); the case passes with
``tradeoff.accepted`` only when every such anomaly is explained by evidence:

- every missing record (acknowledged, never polled) is in **no replica's log** below the
  high watermark (looked up in ``replicas.json``'s snapshot; without one nothing is
  accepted), the snapshot of its partition is shown able to see (``replicas.sight``: every
  replica of the replication factor listed with a copy, the high watermark above every
  offset read, every record read below it at its offset, every batch decoded) and it was
  sent before an **excusing event** of its partition
  (``evidence.excusing_events``: an election from outside the ISR, or a leader change
  under acks 1/0) - a record kept by a replica but never read is a consumer bug;
- every inconsistent offset holds at most one id a consumer read there, that id is in some
  replica's log (a record a consumer has read and that then disappears is always invalid),
  and every other id at that offset is such an excused missing record;
- no other anomaly the case's semantics forbid occurred.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..rundir import REPLICAS_JSON
from .checker.anomalies import EXCUSABLE, INVALIDATING
from .checker.arrow import read_arrow
from .evidence import excusing_events, find_excuse, why_unexcused
from .replicas.layout import load_layout
from .replicas.sight import blind_partitions, describe

DEFAULT_REPLICATION_FACTOR = 3  # the matrix's default (``matrix.dimensions``)

EXAMPLES = 10


def _tables(run_dir: Path):
    import pyarrow.compute as pc

    sends, polls = read_arrow(run_dir, "sends", True), read_arrow(run_dir, "polls", True)
    acked = sends.filter(pc.and_(pc.equal(sends["status"], "ok"), pc.is_valid(sends["offset"])))
    return sends, polls, acked


def offset_clashes(acked, polls) -> list[dict[str, Any]]:
    """Every (topic, partition, offset) tied to two or more ids, with the ids a consumer
    read there (columnar: pyarrow, no Python set per message)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = ["topic", "partition", "offset", "id"]
    a = acked.select(keys).append_column("polled", pa.repeat(False, acked.num_rows))
    p = polls.select(keys).append_column("polled", pa.repeat(True, polls.num_rows))
    rows = pa.concat_tables([a, p]).group_by(keys).aggregate([("polled", "any")])
    per_offset = rows.group_by(["topic", "partition", "offset"]).aggregate(
        [("id", "count_distinct")])
    clash = per_offset.filter(pc.greater(per_offset["id_count_distinct"], 1))
    if not clash.num_rows:
        return []
    by: dict[tuple, dict[str, Any]] = {}
    for r in rows.join(clash, ["topic", "partition", "offset"], join_type="inner").to_pylist():
        entry = by.setdefault((r["topic"], r["partition"], r["offset"]),
                              {"topic": r["topic"], "partition": r["partition"],
                               "offset": r["offset"], "ids": [], "read": []})
        entry["ids"].append(r["id"])
        if r["polled_any"]:
            entry["read"].append(r["id"])
    return [{**v, "ids": sorted(v["ids"]), "read": sorted(v["read"])}
            for _, v in sorted(by.items())]


def missing_records(acked, polls) -> dict[str, dict[str, Any]]:
    """Acknowledged ids never polled anywhere: id -> its first acknowledgement."""
    import pyarrow.compute as pc

    never = acked.filter(pc.invert(pc.is_in(acked["id"], value_set=pc.unique(polls["id"]))))
    out: dict[str, dict[str, Any]] = {}
    cols = ["id", "topic", "partition", "offset", "invoke_ns", "complete_ns"]
    for r in never.select([c for c in cols if c in never.column_names]).to_pylist():
        if r["id"] not in out or r["offset"] < out[r["id"]]["offset"]:
            out[r["id"]] = r
    return out


def ids_in_logs(run_dir: Path, wanted: set[str]) -> dict[str, list[dict[str, Any]]] | None:
    """Where each wanted id sits in the replicas' logs below the high watermark (the
    checker's ``in_log`` look-up, read here without Spark: only the case's few ids), or
    None without a replica snapshot."""
    import pyarrow as pa

    from .replicas.locate import records_arrow

    if not (run_dir / REPLICAS_JSON).exists():
        return None
    layout = load_layout(run_dir)
    hws = {(p.topic, p.partition): p.high_watermark for p in layout.partitions}
    bins = [[{"topic": s.topic, "partition": s.partition, "node": s.node, "path": s.path,
              "base_offset": s.base_offset, "next_base_offset": s.next_base_offset,
              "hw": hws[(s.topic, s.partition)]}] for s in layout.segment_files()]
    found: dict[str, list[dict[str, Any]]] = {}
    if not bins or not wanted:
        return found
    tasks = iter([pa.record_batch([pa.array(range(len(bins)))], names=["id"])])
    for batch in records_arrow(bins, frozenset(wanted), tasks):
        for r in batch.to_pylist():
            if r["id"] is not None:
                found.setdefault(r["id"], []).append(
                    {k: r[k] for k in ("node", "topic", "partition", "offset")})
    return found


def _blind(run_dir: Path, polls, acked, missing: dict[str, dict[str, Any]],
           params: dict[str, Any] | None) -> dict[tuple[str, int], list[str]]:
    """The partitions of the missing records whose snapshot cannot show them gone
    (``replicas.sight``), none without a snapshot (then nothing is accepted anyway)."""
    if not missing or not (run_dir / REPLICAS_JSON).exists():
        return {}
    factor = int((params or {}).get("replication_factor") or DEFAULT_REPLICATION_FACTOR)
    return blind_partitions(load_layout(run_dir), polls, acked,
                            {(r["topic"], r["partition"]) for r in missing.values()}, factor)


def judge(semantics: str, counts: dict[str, int], run_dir: str | Path,
          faults: list[dict[str, Any]] | None = None,
          params: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The trade-off verdict of a case whose history the checker found invalid, or None
    when no trade-off can apply (valid already, exactly-once, or nothing excusable)."""
    bad = {k: counts[k] for k in INVALIDATING[semantics] if counts.get(k)}
    if semantics == "exactly-once" or not bad or not set(bad) & set(EXCUSABLE):
        return None
    run_dir = Path(run_dir)
    events = excusing_events(faults, params)
    doc: dict[str, Any] = {"accepted": False, "evidence": [], "excused": 0,
                           "inconsistent_offsets": counts.get("inconsistent_offsets", 0),
                           "explained_by_loss": 0, "refused": []}
    others = {k: v for k, v in bad.items() if k not in EXCUSABLE}
    if others:
        doc["reason"] = f"not a trade-off: other anomalies {others}"
        return doc
    _, polls, acked = _tables(run_dir)
    missing = missing_records(acked, polls)
    clashes = offset_clashes(acked, polls)
    refused: list[str] = doc["refused"]
    refused.extend(_count_mismatches(counts, missing, clashes))
    readers = {c["read"][0] for c in clashes if len(c["read"]) == 1}
    where = ids_in_logs(run_dir, set(missing) | readers)
    if where is None:
        refused.append("no replica snapshot (replicas.json): a missing record cannot be "
                       "shown absent from every replica")
        where = {}
    blind = _blind(run_dir, polls, acked, missing, params)
    if blind:
        doc["blind"] = describe(blind)
    used, excused = _excuse_missing(run_dir, missing, where, blind, events, params, refused)
    doc["explained_by_loss"] = _explain_clashes(clashes, where, excused, refused)
    doc["evidence"] = list(used.values())
    doc["excused"] = len(excused)
    return _decided(doc, refused)


def _count_mismatches(counts: dict[str, int], missing: dict[str, dict[str, Any]],
                      clashes: list[dict[str, Any]]) -> list[str]:
    """Where the tables read here disagree with the checker's counts."""
    lost = counts.get("lost", 0) + counts.get("unseen", 0)
    found = []
    if len(missing) != lost:
        found.append(f"{len(missing)} acknowledged id(s) never polled, the checker "
                     f"counts {lost} lost or unseen")
    if len(clashes) != counts.get("inconsistent_offsets", 0):
        found.append(f"{len(clashes)} offset(s) tied to two ids here, the checker counts "
                     f"{counts.get('inconsistent_offsets', 0)}")
    return found


def _excuse_missing(run_dir: Path, missing: dict[str, dict[str, Any]],
                    where: dict[str, list], blind: dict[tuple[str, int], list[str]],
                    events: list[dict[str, Any]], params: dict[str, Any] | None,
                    refused: list[str]) -> tuple[dict[int, dict[str, Any]], set[str]]:
    """Each missing record is excused by a fault's event, or refused with why; returns the
    events used (with how many records each excused) and the excused ids."""
    used: dict[int, dict[str, Any]] = {}
    excused: set[str] = set()
    for rid, rec in sorted(missing.items()):
        if rid in where:
            refused.append(f"{rid} (acknowledged at {rec['topic']}-{rec['partition']} "
                           f"offset {rec['offset']}) is in a replica's log "
                           f"{where[rid][0]} but no consumer read it")
            continue
        if not (run_dir / REPLICAS_JSON).exists():
            continue
        if (rec["topic"], rec["partition"]) in blind:
            refused.append(f"{rid} (acknowledged at {rec['topic']}-{rec['partition']} "
                           f"offset {rec['offset']}) is in no replica's log, but the "
                           f"snapshot cannot show it gone: "
                           + "; ".join(blind[(rec["topic"], rec["partition"])]))
            continue
        at = (rec["topic"], rec["partition"], rec["invoke_ns"], rec.get("complete_ns"))
        event = find_excuse(events, *at)
        if event is None:
            refused.append(f"{rid} (acknowledged at {rec['topic']}-{rec['partition']} "
                           f"offset {rec['offset']}) is in no replica's log and no fault "
                           f"explains its loss (" + (why_unexcused(events, *at) or (
                               "no election outside the ISR"
                               + (", no leader change" if (params or {}).get("acks") in (0, 1)
                                  else ""))) + ")")
            continue
        excused.add(rid)
        entry = used.setdefault(id(event), dict(event))
        entry["excused"] = entry.get("excused", 0) + 1
    return used, excused


def _explain_clashes(clashes: list[dict[str, Any]], where: dict[str, list],
                     excused: set[str], refused: list[str]) -> int:
    """How many inconsistent offsets are an excused lost record's offset reused by the new
    leader; every other one is refused with why."""
    explained = 0
    for c in clashes:
        at = f"{c['topic']}-{c['partition']} offset {c['offset']}"
        if len(c["read"]) > 1:
            refused.append(f"{at}: consumers read different ids {c['read']}")
            continue
        if c["read"] and c["read"][0] not in where:
            refused.append(f"{at}: {c['read'][0]} was read there and is in no replica's "
                           f"log (a read record disappeared)")
            continue
        unexplained = [i for i in c["ids"] if i not in c["read"] and i not in excused]
        if unexplained:
            refused.append(f"{at}: {unexplained} not an excused lost record")
            continue
        explained += 1
    return explained


def _decided(doc: dict[str, Any], refused: list[str]) -> dict[str, Any]:
    """Accepted when nothing was refused, with the reason either way."""
    if refused:
        doc["refused"] = refused[:EXAMPLES]
        doc["reason"] = f"not a trade-off: {refused[0]}" + (
            f" (and {len(refused) - 1} more)" if len(refused) > 1 else "")
        return doc
    doc["accepted"] = True
    doc["reason"] = (f"{doc['excused']} acknowledged record(s) lost, none read and none in "
                     f"any replica's log, each sent before " + "; ".join(
                         f"fault #{e['fault']}: {e['why']}" for e in doc["evidence"])
                     + f"; {doc['explained_by_loss']} inconsistent offset(s), each the "
                       f"offset of such a record reused by the new leader")
    return doc
