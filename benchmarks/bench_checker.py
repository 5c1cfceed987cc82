"""Benchmark: `kreplica check` (Spark) beside the plain-Python baseline on the same files.

Generates clean histories of N sends + N polls (JSON Lines and Parquet), then times each
checker as a user runs it (a fresh process each time, JVM start included), alternating them
so machine noise hits all alike; reports medians, the Spark / baseline ratio and the peak
resident memory of each process tree (JVM included). A script, not a timed test:

    python benchmarks/bench_checker.py --sizes 1000000 --repeat 3
    python benchmarks/bench_checker.py --sizes 10000000 --repeat 1 --no-baseline

Output goes to benchmarks/out/ (ignored by git) unless --out is given.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
PARTITIONS, PRODUCERS, CONSUMERS, BATCH = 16, 4, 4, 500


def generate(run_dir: Path, n: int) -> None:
    """A clean history: PRODUCERS producers round-robin over PARTITIONS partitions, every
    record read once by one of CONSUMERS consumers, BATCH records per poll call."""
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

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
    parquet = run_dir / "parquet"
    parquet.mkdir(exist_ok=True)
    (parquet / "run.json").write_text((jsonl / "run.json").read_text())
    for name in ("sends", "polls", "events"):
        table = pj.read_json(jsonl / f"{name}.jsonl",
                             parse_options=pj.ParseOptions(newlines_in_values=False))
        if name == "sends":
            table = table.set_column(table.schema.get_field_index("error"), "error",
                                     pa.nulls(table.num_rows, pa.string()))
        if name == "events":
            for col in ("node", "role", "detail"):
                table = table.set_column(table.schema.get_field_index(col), col,
                                         pa.nulls(table.num_rows, pa.string()))
        pq.write_table(table, parquet / f"{name}.parquet", compression="snappy")


def run_measured(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall time, peak RSS of the whole process tree (MiB), stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        root = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree))
            except psutil.Error:
                pass
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    elapsed = time.perf_counter() - start
    done.set()
    sampler.join()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.strip()[-500:]}")
    return elapsed, peak / 2**20, out


BASELINE = ("import json, sys; from pytest_kreplica.checker.baseline import check_baseline; "
            "print(json.dumps(check_baseline(sys.argv[1]).counts))")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000", help="comma-separated N (sends = polls)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--formats", default="jsonl,parquet")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    args = parser.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        base = Path(args.out) / f"history-{n}"
        if not (base / "parquet" / "polls.parquet").exists():
            t = time.perf_counter()
            generate(base, n)
            print(f"generated {n}+{n} in {time.perf_counter() - t:.1f} s: {base}", flush=True)
        formats = args.formats.split(",")
        times: dict[str, list[float]] = {}
        peaks: dict[str, float] = {}
        for rep in range(args.repeat):
            for fmt in formats:
                run_dir = str(base / fmt)
                jobs = [(f"spark-{fmt}", [sys.executable, "-m", "pytest_kreplica.cli", "check",
                                          run_dir, "--json"])]
                if not args.no_baseline:
                    jobs.append((f"python-{fmt}", [sys.executable, "-c", BASELINE, run_dir]))
                for label, cmd in (jobs if rep % 2 == 0 else jobs[::-1]):
                    elapsed, peak, out = run_measured(cmd, env)
                    counts = json.loads(out)
                    counts = counts.get("counts", counts)
                    assert counts["acked"] == n and counts["polled"] == n, counts
                    times.setdefault(label, []).append(elapsed)
                    peaks[label] = max(peaks.get(label, 0.0), peak)
                    print(f"  n={n} {label:<16} run {rep + 1}: {elapsed:6.1f} s  "
                          f"peak {peak:7.0f} MiB", flush=True)
        for label, values in times.items():
            fmt = label.split("-", 1)[1]
            med = statistics.median(values)
            ref = times.get(f"python-{fmt}")
            ratio = med / statistics.median(ref) if ref and label.startswith("spark") else None
            results.append((n, label, med, len(values), peaks[label], ratio))
    print("\n| N sends + N polls | checker | median s | runs | peak MiB | vs python |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n, label, med, runs, peak, ratio in results:
        print(f"| {n:,} | {label} | {med:.1f} | {runs} | {peak:.0f} | "
              f"{'' if ratio is None else f'{ratio:.2f}'} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
