"""Benchmark: `kreplica check` (Spark) beside the plain-Python baseline on the same files.

Generates clean histories of N sends + N polls (JSON Lines and Parquet; with --planted also
a copy holding one lost, one duplicated id and one poll skip, which makes the checker run its
examples query and is the run a user waits for), then times each
checker as a user runs it (a fresh process each time, JVM start included), alternating them
so machine noise hits all alike; reports medians, the Spark / baseline ratio and the peak
resident memory of each process tree (JVM included). A script, not a timed test:

    python benchmarks/bench_checker.py --sizes 1000000 --repeat 3 --warm
    python benchmarks/bench_checker.py --sizes 10000000 --repeat 3 --driver-memory 4g
    python benchmarks/bench_checker.py --sizes 100000000 --repeat 1 --formats parquet \
        --driver-memory 4g

Histories are generated once per size (JSON Lines by a row loop, Parquet straight from
vectorised chunks: both hold the same rows). The baseline is stopped when its process grows
past --baseline-cap-gib (12 by default): it keeps every id in Python dicts and sets.

Output goes to benchmarks/out/ (ignored by git) unless --out is given.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from pytest_kreplica.validation.checker.anomalies import ANOMALIES  # noqa: E402  (light: no Spark import)

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


def run_measured(cmd: list[str], env: dict[str, str],
                 cap_mib: float | None = None) -> tuple[float, float, str | None]:
    """Wall time, peak RSS of the whole process tree (MiB), stdout; stdout is None when the
    tree grew past cap_mib and was killed (the machine is shared: never let it swap or OOM)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    peak = 0
    done, capped = threading.Event(), threading.Event()

    def sample() -> None:
        nonlocal peak
        root = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree))
                if cap_mib is not None and peak > cap_mib * 2**20:
                    capped.set()
                    for p in reversed(tree):
                        p.kill()
                    return
            except psutil.Error:
                pass
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate()
    except BaseException:  # Ctrl-C / SIGTERM of the benchmark: take the child's tree along
        for p in [*psutil.Process(proc.pid).children(recursive=True), proc]:
            with contextlib.suppress(psutil.Error, OSError):
                p.kill()
        raise
    elapsed = time.perf_counter() - start
    done.set()
    sampler.join()
    if capped.is_set():
        return elapsed, peak / 2**20, None
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.strip()[-500:]}")
    return elapsed, peak / 2**20, out


WARM = ("import json, sys, time; from pytest_kreplica.validation.checker import check; "
        "check(sys.argv[1]); t = time.perf_counter(); v = check(sys.argv[1]); "
        "print(json.dumps({'counts': v.counts, 'seconds': time.perf_counter() - t}))")
BASELINE = ("import json, sys; "
            "from pytest_kreplica.validation.checker.baseline import check_baseline; "
            "print(json.dumps(check_baseline(sys.argv[1]).counts))")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000", help="comma-separated N (sends = polls)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--formats", default="jsonl,parquet")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--warm", action="store_true",
                        help="also time a second check in a process whose Spark session has "
                             "already checked once (how the pytest plugin runs case after case)")
    parser.add_argument("--planted", action="store_true",
                        help="also time a copy of each history with planted anomalies "
                             f"({', '.join(f'{v} {k}' for k, v in PLANTED.items())})")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    parser.add_argument("--driver-memory", default="2g",
                        help="spark.driver.memory of the local Spark checker (default 2g)")
    parser.add_argument("--baseline-cap-gib", type=float, default=12.0,
                        help="kill the plain-Python baseline past this resident size")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env = dict(os.environ)
    env["KREPLICA_SPARK_DRIVER_MEMORY"] = args.driver_memory
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        base = Path(args.out) / f"history-{n}"
        formats = args.formats.split(",")
        for fmt, make in (("jsonl", generate), ("parquet", generate_parquet)):
            if fmt in formats and not (base / fmt / "polls.parquet").exists() \
                    and not (base / fmt / "polls.jsonl").exists():
                t = time.perf_counter()
                make(base, n)
                print(f"generated {n}+{n} {fmt} in {time.perf_counter() - t:.1f} s: {base}",
                      flush=True)
        if args.planted and "jsonl" in formats \
                and not (base / "planted" / "jsonl" / "polls.jsonl").exists():
            plant(base / "jsonl", base / "planted", n)
        if args.planted and "parquet" in formats \
                and not (base / "planted" / "parquet" / "polls.parquet").exists():
            plant_parquet(base / "parquet", base / "planted", n)
        variants = [("", base)] + ([("planted-", base / "planted")] if args.planted else [])
        times: dict[str, list[float]] = {}
        peaks: dict[str, float] = {}
        capped: dict[str, float] = {}
        for rep, fmt, (tag, root) in itertools.product(range(args.repeat), formats, variants):
            run_dir = str(root / fmt)
            fmt = tag + fmt  # the label's suffix: planted-jsonl, planted-parquet
            jobs = [(f"spark-{fmt}", [sys.executable, "-m", "pytest_kreplica.cli", "check",
                                      run_dir, "--json"])]
            if args.warm:
                jobs.append((f"spark-warm-{fmt}", [sys.executable, "-c", WARM, run_dir]))
            if not args.no_baseline:
                jobs.append((f"python-{fmt}", [sys.executable, "-c", BASELINE, run_dir]))
            for label, cmd in (jobs if rep % 2 == 0 else jobs[::-1]):
                if label in capped:
                    continue  # it ran out of memory once: it will again
                cap = args.baseline_cap_gib * 1024 if label.startswith("python") else None
                elapsed, peak, out = run_measured(cmd, env, cap)
                if out is None:
                    capped[label] = elapsed
                    peaks[label] = peak
                    print(f"  n={n} {label:<16} run {rep + 1}: stopped past "
                          f"{args.baseline_cap_gib:g} GiB after {elapsed:.0f} s "
                          "(out of memory for this machine)", flush=True)
                    continue
                counts = json.loads(out)
                elapsed = counts.get("seconds", elapsed)  # warm: the second check only
                counts = counts.get("counts", counts)
                assert counts["acked"] == n, counts
                found = {a: counts[a] for a in ANOMALIES if counts.get(a)}
                expected = PLANTED if fmt.startswith("planted") else {}
                assert found == expected, f"{label}: expected {expected}, found {found}"
                times.setdefault(label, []).append(elapsed)
                peaks[label] = max(peaks.get(label, 0.0), peak)
                print(f"  n={n} {label:<16} run {rep + 1}: {elapsed:6.1f} s  "
                      f"peak {peak:7.0f} MiB", flush=True)
        for label, values in times.items():
            fmt = label.split("-", 1)[1].replace("warm-", "")
            med = statistics.median(values)
            ref = times.get(f"python-{fmt}")
            ratio = med / statistics.median(ref) if ref and label.startswith("spark") else None
            results.append((n, label, f"{med:.1f}", len(values), peaks[label],
                            "" if ratio is None else f"{ratio:.2f}"))
        for label, elapsed in capped.items():
            results.append((n, label, f"out of memory: > {args.baseline_cap_gib:g} GiB after "
                            f"{elapsed:.0f} s", 1, peaks[label], ""))
    print(f"\nSpark driver memory {args.driver_memory}")
    print("| N sends + N polls | checker | median s | runs | peak MiB | vs python |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n, label, med, runs, peak, ratio in results:
        print(f"| {n:,} | {label} | {med} | {runs} | {peak:.0f} | {ratio} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
