"""The synthetic histories bench_checker.py times: N sends + N polls, clean (JSON Lines by a
row loop, Parquet straight from vectorised chunks: the same rows) and a planted copy holding
the anomalies of PLANTED, which the checker must find exactly."""

from __future__ import annotations

import json
import os
from pathlib import Path

PARTITIONS, PRODUCERS, CONSUMERS, BATCH = 16, 4, 4, 500


def generate(run_dir: Path, n: int) -> None:
    """A clean history as JSON Lines: PRODUCERS producers round-robin over PARTITIONS
    partitions, every record read once by one of CONSUMERS consumers, BATCH records per poll
    call. generate_parquet() writes the same rows as Parquet."""
    jsonl = run_dir / "jsonl"
    jsonl.mkdir(parents=True, exist_ok=True)
    next_offset = [0] * PARTITIONS
    per_partition: list[list[tuple[int, str]]] = [[] for _ in range(PARTITIONS)]
    with open(jsonl / "sends.jsonl", "w") as out:
        for i in range(n):
            p = i % PARTITIONS
            o = next_offset[p]
            next_offset[p] += 1
            rid = f"p{i % PRODUCERS}-{i:09d}"
            per_partition[p].append((o, rid))
            t = 1_000_000 + i * 1000
            out.write(f'{{"process":{i % PRODUCERS},"topic":"bench","partition":{p},'
                      f'"id":"{rid}","offset":{o},"status":"ok","invoke_ns":{t},'
                      f'"complete_ns":{t + 700},"error":null}}\n')
    with open(jsonl / "polls.jsonl", "w") as out:
        for c in range(CONSUMERS):
            poll, t = 0, 10**12 + c
            for p in range(c, PARTITIONS, CONSUMERS):
                recs = per_partition[p]
                for start in range(0, len(recs), BATCH):
                    for k, (o, rid) in enumerate(recs[start:start + BATCH]):
                        out.write(f'{{"process":{100 + c},"poll":{poll},"topic":"bench",'
                                  f'"partition":{p},"offset":{o},"id":"{rid}",'
                                  f'"time_ns":{t},"index":{k}}}\n')
                    poll += 1
                    t += 1000
    with open(jsonl / "events.jsonl", "w") as out:
        for c in range(CONSUMERS):
            out.write(f'{{"time_ns":{10**12 - 10},"kind":"assign","process":{100 + c},'
                      '"node":null,"role":null,"detail":null}\n')
    (jsonl / "run.json").write_text('{"semantics": "at-least-once"}\n')


CHUNK = 2_000_000


def _ids(i):
    """The ids of generate() for the int64 array i: p{i % PRODUCERS}-{i:09d}."""
    import pyarrow as pa
    import pyarrow.compute as pc

    producer = pc.cast(pc.remainder(i, PRODUCERS), pa.string())
    number = pc.utf8_lpad(pc.cast(i, pa.string()), width=9, padding="0")
    return pc.binary_join_element_wise("p", producer, "-", number, "")


def generate_parquet(run_dir: Path, n: int) -> None:
    """The rows of generate(), in the same order, written straight to Parquet in chunks of
    CHUNK rows (bounded memory, no JSON detour): how 100M-row histories are made."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = run_dir / "parquet"
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text('{"semantics": "at-least-once"}\n')
    i64, text = pa.int64(), pa.string()
    sends_schema = pa.schema([("process", i64), ("topic", text), ("partition", i64),
                              ("id", text), ("offset", i64), ("status", text),
                              ("invoke_ns", i64), ("complete_ns", i64), ("error", text)])
    with pq.ParquetWriter(out / "sends.parquet.tmp", sends_schema, compression="snappy") as w:
        for start in range(0, n, CHUNK):
            i = np.arange(start, min(n, start + CHUNK), dtype=np.int64)
            t = 1_000_000 + i * 1000
            w.write_table(pa.table([
                i % PRODUCERS, pa.repeat("bench", len(i)), i % PARTITIONS, _ids(pa.array(i)),
                i // PARTITIONS, pa.repeat("ok", len(i)), t, t + 700,
                pa.nulls(len(i), text)], schema=sends_schema))
    polls_schema = pa.schema([("process", i64), ("poll", i64), ("topic", text),
                              ("partition", i64), ("offset", i64), ("id", text),
                              ("time_ns", i64), ("index", i64)])
    with pq.ParquetWriter(out / "polls.parquet.tmp", polls_schema, compression="snappy") as w:
        for c in range(CONSUMERS):
            poll_base = 0
            for p in range(c, PARTITIONS, CONSUMERS):
                length = (n - p + PARTITIONS - 1) // PARTITIONS
                for start in range(0, length, CHUNK):
                    o = np.arange(start, min(length, start + CHUNK), dtype=np.int64)
                    poll = poll_base + o // BATCH
                    w.write_table(pa.table([
                        np.full(len(o), 100 + c, dtype=np.int64), poll,
                        pa.repeat("bench", len(o)), np.full(len(o), p, dtype=np.int64), o,
                        _ids(pa.array(o * PARTITIONS + p)), 10**12 + c + poll * 1000,
                        o % BATCH], schema=polls_schema))
                poll_base += (length + BATCH - 1) // BATCH
    events_schema = pa.schema([("time_ns", i64), ("kind", text), ("process", i64),
                               ("node", text), ("role", text), ("detail", text)])
    pq.write_table(pa.table([[10**12 - 10] * CONSUMERS, ["assign"] * CONSUMERS,
                             [100 + c for c in range(CONSUMERS)], pa.nulls(CONSUMERS, text),
                             pa.nulls(CONSUMERS, text), pa.nulls(CONSUMERS, text)],
                            schema=events_schema), out / "events.parquet")
    for name in ("sends", "polls"):
        os.replace(out / f"{name}.parquet.tmp", out / f"{name}.parquet")


# what plant() makes the checker find: one lost id (its only poll row dropped, which is
# also a skip of that consumer), one duplicated id (read again at a new offset by a second
# consumer) and one poll skip on its own (a record the first consumer jumps over that a
# third consumer reads)
PLANTED = {"lost": 1, "duplicated": 1, "poll_skips": 2}


def _plant_points(n: int) -> tuple[int, int, int]:
    """Offsets of partition 0 (read by consumer process 100) to lose, to skip, to duplicate."""
    per_p0 = (n + PARTITIONS - 1) // PARTITIONS  # partition 0 holds offsets 0..per_p0-1
    return per_p0 // 2, per_p0 // 2 + 10, per_p0 // 3


def _planted_extras(skipped: dict, duplicated: dict, n: int) -> list[dict]:
    """The two poll rows plant adds: the skipped record read by a third consumer, the
    duplicated one read again by a second consumer at a new offset."""
    t = 10**13
    return [{**skipped, "process": 102 + CONSUMERS, "poll": 0, "time_ns": t, "index": 0},
            {**duplicated, "process": 101 + CONSUMERS, "poll": 0,
             "offset": (n + PARTITIONS - 1) // PARTITIONS, "time_ns": t + 1, "index": 0}]


def _planted_events() -> list[dict]:
    return [{"time_ns": 10**12 - 10, "kind": "assign", "process": process, "node": None,
             "role": None, "detail": None} for process in (101 + CONSUMERS, 102 + CONSUMERS)]


def plant(clean: Path, planted: Path, n: int) -> None:
    """A copy of the JSON Lines history of ``clean`` with the PLANTED anomalies
    (``planted/jsonl``); ``plant_parquet`` makes the same rows from the Parquet history."""
    jsonl = planted / "jsonl"
    jsonl.mkdir(parents=True, exist_ok=True)
    lost_at, skip_at, dup_at = _plant_points(n)
    skipped = duplicated = None
    with open(clean / "polls.jsonl") as src, open(jsonl / "polls.jsonl", "w") as out:
        for line in src:
            row = json.loads(line) if line.startswith('{"process":100,') else None
            if row is not None and row["partition"] == 0:
                if row["offset"] == lost_at:
                    continue
                if row["offset"] == skip_at:
                    skipped = row
                    continue
                if row["offset"] == dup_at:
                    duplicated = row
            out.write(line)
        assert skipped and duplicated, "partition 0 too short to plant into"
        for row in _planted_extras(skipped, duplicated, n):
            out.write(json.dumps(row) + "\n")
    with open(clean / "events.jsonl") as src, open(jsonl / "events.jsonl", "w") as out:
        out.write(src.read())
        for row in _planted_events():
            out.write(json.dumps(row) + "\n")
    for name in ("sends.jsonl", "run.json"):
        (jsonl / name).write_bytes((clean / name).read_bytes())


def plant_parquet(clean: Path, planted: Path, n: int) -> None:
    """plant() for the Parquet history, streamed in record batches (bounded memory): how a
    100M-row history gets its anomalies without a JSON Lines detour."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out = planted / "parquet"
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_bytes((clean / "run.json").read_bytes())
    (out / "sends.parquet").unlink(missing_ok=True)
    os.link(clean / "sends.parquet", out / "sends.parquet")  # unchanged: no second copy
    lost_at, skip_at, dup_at = _plant_points(n)
    source = pq.ParquetFile(clean / "polls.parquet")
    kept: dict[int, dict] = {}
    with pq.ParquetWriter(out / "polls.parquet.tmp", source.schema_arrow,
                          compression="snappy") as w:
        for batch in source.iter_batches(batch_size=CHUNK):
            mine = pc.and_(pc.equal(batch["process"], 100), pc.equal(batch["partition"], 0))
            for at in (skip_at, dup_at):
                hit = pc.and_(mine, pc.equal(batch["offset"], at))
                if pc.any(hit).as_py():
                    kept[at] = batch.filter(hit).to_pylist()[0]
            gone = pc.and_(mine, pc.is_in(batch["offset"], pa.array([lost_at, skip_at])))
            w.write_batch(batch.filter(pc.invert(gone)))
        assert len(kept) == 2, "partition 0 too short to plant into"
        extras = _planted_extras(kept[skip_at], kept[dup_at], n)
        w.write_table(pa.Table.from_pylist(extras, schema=source.schema_arrow))
    os.replace(out / "polls.parquet.tmp", out / "polls.parquet")
    events = pq.read_table(clean / "events.parquet")
    pq.write_table(pa.concat_tables([events, pa.Table.from_pylist(_planted_events(),
                                                                  schema=events.schema)]),
                   out / "events.parquet")
