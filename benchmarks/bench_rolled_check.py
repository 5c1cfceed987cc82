"""Benchmark: `kreplica check` of a history rolled into Parquet parts (a soak's form,
docs/history.md) beside a plain Spark read of the same files, in the same run.

Generates N sends + N polls (``synthetic_history``: Parquet, with the PLANTED anomalies),
re-writes sends and polls as ``NAME.parquet/part-NNNNN.parquet`` folders of --part-rows rows
each (what the rolling writer leaves), then times, alternating them, each in a fresh process
(JVM start included in both):

- check: ``kreplica check RUN --json --spark-master local[2]`` (asserting exactly PLANTED);
- read: a Spark session on the same master that reads every table's parts and counts, per
  table, the rows and the non-null values of every column (so every value is decoded, not
  just the row groups' metadata; a bare ``count()`` is printed too).

    python benchmarks/bench_rolled_check.py --sizes 1000000 --repeat 1

``--run DIR`` times the same pair on a run directory a case wrote (a soak's own history,
whatever its verdict) instead of the synthetic one.

Prints ``rolled N: check X s, read Y s, count Z s, ratio R, P parts``. Output goes to
benchmarks/out/ (ignored by git) unless --out is given.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_checker import run_measured  # noqa: E402  (beside this script)
from synthetic_history import PLANTED, generate_parquet, plant_parquet  # noqa: E402

from pytest_kreplica.validation.checker.anomalies import ANOMALIES  # noqa: E402

READ = """import json, sys, time
from pyspark.sql import functions as F
from pytest_kreplica.validation.engine.spark import get_spark
spark = get_spark("local[2]")
run = sys.argv[1]
def table(name):
    import pathlib
    path = pathlib.Path(run) / (name + ".parquet")
    if not path.exists():  # a case's own run keeps its events as JSON lines
        return spark.read.json(str(pathlib.Path(run) / (name + ".jsonl")))
    files = sorted(str(p) for p in path.rglob("*.parquet")) if path.is_dir() else [str(path)]
    return spark.read.parquet(*files)
t = time.perf_counter()
rows = {n: table(n).count() for n in ("sends", "polls", "events")}
bare = time.perf_counter() - t
t = time.perf_counter()
full = {n: table(n).agg(*[F.count(c) for c in table(n).columns]).collect()[0][0]
        for n in ("sends", "polls", "events")}
print(json.dumps({"rows": rows, "full": full, "count_s": bare,
                  "read_s": time.perf_counter() - t}))
"""


def roll(planted: Path, rolled: Path, part_rows: int) -> int:
    """The planted Parquet history as folders of parts of ``part_rows`` rows; the parts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if rolled.exists():
        shutil.rmtree(rolled)
    rolled.mkdir(parents=True)
    for name in ("run.json", "events.parquet"):
        shutil.copyfile(planted / name, rolled / name)
    parts = 0
    for name in ("sends", "polls"):
        folder = rolled / f"{name}.parquet"
        folder.mkdir()
        source = pq.ParquetFile(planted / f"{name}.parquet")
        for k, batch in enumerate(source.iter_batches(batch_size=part_rows)):
            pq.write_table(pa.Table.from_batches([batch]), folder / f"part-{k:05d}.parquet")
            parts += 1
    return parts


def time_pair(run: Path, n: int | None, repeat: int, env: dict, title: str,
              extra: str = "") -> None:
    """Time ``kreplica check`` and the plain read of ``run``, alternating; ``n``: the
    synthetic history's size (its planted anomalies are asserted), None: a case's run."""
    check = [sys.executable, "-m", "pytest_kreplica.cli", "check", str(run), "--json",
             "--spark-master", "local[2]"]
    read = [sys.executable, "-c", READ, str(run)]
    times: dict[str, list[float]] = {"check": [], "read": [], "count": []}
    peaks: dict[str, float] = {}
    for rep in range(repeat):
        for label, cmd in ([("check", check), ("read", read)] if rep % 2 == 0
                           else [("read", read), ("check", check)]):
            elapsed, peak, out = run_measured(cmd, env)
            peaks[label] = max(peaks.get(label, 0.0), peak)
            got = json.loads(out or "{}")
            if label == "check":
                found = {a: got["counts"][a] for a in ANOMALIES if got["counts"].get(a)}
                if n is not None:
                    assert found == PLANTED, f"expected {PLANTED}, found {found}"
                else:
                    print(f"  {title} anomalies: {found or 'none'}", flush=True)
                times["check"].append(elapsed)
            else:
                if n is not None:
                    assert got["rows"]["sends"] == n, got
                else:
                    print(f"  {title} rows: {got['rows']}", flush=True)
                # the process's own start (JVM) counted once, in the read
                start = elapsed - got["read_s"] - got["count_s"]
                times["read"].append(start + got["read_s"])
                times["count"].append(start + got["count_s"])
            print(f"  {title} {label} run {rep + 1}: {elapsed:.1f} s peak {peak:.0f} MiB",
                  flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{title}: check {med['check']:.1f} s ({peaks['check']:.0f} MiB), "
          f"read {med['read']:.1f} s ({peaks['read']:.0f} MiB), count {med['count']:.1f} s, "
          f"ratio {med['check'] / med['read']:.2f}{extra}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000000", help="comma-separated N (sends = polls)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--part-rows", type=int, default=50_000,
                        help="rows per part (the rolling writer's default)")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    parser.add_argument("--run", default=None,
                        help="a run directory to time instead of the synthetic history")
    args = parser.parse_args()
    env = {**os.environ, "KREPLICA_SPARK_DRIVER_MEMORY": args.driver_memory,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if args.run:
        time_pair(Path(args.run), None, args.repeat, env, "run")
        print(f"load average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        return 0
    for n in (int(s) for s in args.sizes.split(",")):
        base = Path(args.out) / f"history-{n}"
        if not (base / "parquet" / "polls.parquet").exists():
            generate_parquet(base, n)
        if not (base / "planted" / "parquet" / "polls.parquet").exists():
            plant_parquet(base / "parquet", base / "planted", n)
        rolled = base / "rolled"
        parts = roll(base / "planted" / "parquet", rolled, args.part_rows)
        time_pair(rolled, n, args.repeat, env, f"rolled {n}", f", {parts} parts")
    print(f"load average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
