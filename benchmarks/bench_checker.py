"""Benchmark: `kreplica check` (Spark) beside the plain-Python baseline on the same files.

Generates clean histories of N sends + N polls (JSON Lines and Parquet; with --planted also
a copy holding one lost, one duplicated id and two poll skips, which makes the checker run its
examples query and is the run a user waits for; ``synthetic_history.py``), then times each
checker as a user runs it (a fresh process each time, JVM start included), alternating them
so machine noise hits all alike; reports medians, the Spark / baseline ratio and the peak
resident memory of each process tree (JVM included). A script, not a timed test:

    python benchmarks/bench_checker.py --sizes 1000000 --repeat 3 --warm
    python benchmarks/bench_checker.py --sizes 10000000 --repeat 3 --driver-memory 4g
    python benchmarks/bench_checker.py --sizes 100000000 --repeat 1 --planted-only \
        --formats parquet --no-baseline --driver-memory 4g
    python benchmarks/bench_checker.py --sizes 1000000 --planted --formats parquet \
        --spark-master connect
    python benchmarks/bench_checker.py --sizes 2000000 --partitions 1 --formats parquet \
        --no-baseline --planted

With ``--spark-master connect`` each timed `kreplica check` runs against the machine's shared
Spark Connect server, as a one-off check does when a validation engine already runs: one
untimed check first starts the server and warms it (reported on its own line); the peak
memory is then the client's alone (the server is not its child). ``--spark-master auto`` is
the command as a user types it (its default): the untimed check starts the server with
``connect``, the timed ones join it. Without the option the timed checks run with
``local[2]``, a fresh driver JVM each, whether or not a server runs.

Histories are generated once per size (JSON Lines by a row loop, Parquet straight from
vectorised chunks: both hold the same rows; the planted Parquet copy is streamed from the
clean one, so 100M rows need no JSON Lines detour). Every run asserts the anomaly counts:
exactly PLANTED in a planted copy, none in a clean one. The baseline is stopped when its
process grows past --baseline-cap-gib (12 by default): it keeps every id in Python dicts and
sets.

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synthetic_history  # noqa: E402  (beside this script)
from synthetic_history import (  # noqa: E402
    PLANTED,
    generate,
    generate_parquet,
    plant,
    plant_parquet,
)


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
    parser.add_argument("--planted-only", action="store_true",
                        help="time only the planted copy (a 100M history's clean run is the "
                             "same work and doubles the hour)")
    parser.add_argument("--partitions", type=int, default=synthetic_history.PARTITIONS,
                        help="topic-partitions of the generated histories (default "
                             f"{synthetic_history.PARTITIONS}; 1 is a single-partition case's "
                             "history, whose windows have one key)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    parser.add_argument("--driver-memory", default="2g",
                        help="spark.driver.memory of the local Spark checker (default 2g)")
    parser.add_argument("--baseline-cap-gib", type=float, default=12.0,
                        help="kill the plain-Python baseline past this resident size")
    parser.add_argument("--spark-master", default=None,
                        help="the checks' --spark-master (e.g. connect: the machine's shared "
                             "server, started and warmed by one untimed check first)")
    args = parser.parse_args()
    args.planted = args.planted or args.planted_only
    if args.partitions < 1:
        parser.error(f"--partitions must be at least 1, not {args.partitions}")
    same_partitions = args.partitions == parser.get_default("partitions")
    synthetic_history.PARTITIONS = args.partitions  # the generators read it when they run
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    env = dict(os.environ)
    env["KREPLICA_SPARK_DRIVER_MEMORY"] = args.driver_memory
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if args.spark_master in ("connect", "auto"):
        env.setdefault("KREPLICA_SPARK_IDLE_S", "180")  # outlive a 1M baseline run between
    results, warmed = [], False
    for n in (int(s) for s in args.sizes.split(",")):
        base = Path(args.out) / (f"history-{n}" if same_partitions
                                 else f"history-{n}-p{args.partitions}")
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
        if args.planted_only:
            variants = variants[1:]
        times: dict[str, list[float]] = {}
        peaks: dict[str, float] = {}
        capped: dict[str, float] = {}
        for rep, fmt, (tag, root) in itertools.product(range(args.repeat), formats, variants):
            run_dir = str(root / fmt)
            fmt = tag + fmt  # the label's suffix: planted-jsonl, planted-parquet
            with_master = [sys.executable, "-m", "pytest_kreplica.cli", "check", run_dir,
                           "--json", "--spark-master"]
            check_cmd = [*with_master, args.spark_master or "local[2]"]
            if args.spark_master and not warmed:  # auto starts no server: connect does
                warm_master = "connect" if args.spark_master == "auto" else args.spark_master
                took, _, _ = run_measured([*with_master, warm_master], env)
                warmed = True
                print(f"  untimed first check (starts and warms {args.spark_master}): "
                      f"{took:.1f} s", flush=True)
            jobs = [(f"spark-{fmt}", check_cmd)]
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
    print(f"\nSpark driver memory {args.driver_memory}, {args.partitions} topic-partitions"
          + (f", master {args.spark_master}" if args.spark_master else ""))
    print("| N sends + N polls | checker | median s | runs | peak MiB | vs python |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n, label, med, runs, peak, ratio in results:
        print(f"| {n:,} | {label} | {med} | {runs} | {peak:.0f} | {ratio} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
