"""Benchmark: where a warm check of a small history spends the local driver JVM's CPU, per
JIT mode (``KREPLICA_SPARK_JIT``), with the small-history settings as shipped and with
adaptive execution or generated code put back.

    python benchmarks/bench_small_check.py [--history lost|RUN_DIR] [--checks 10] [--rounds 2]

For each JIT mode, a fresh process starts the local Spark session, checks the history (a
fixture, or a case's run directory: a smoke case's is 1000 + 1000 rows)
``--warmup`` times, then ``--checks`` times while the settings alternate. It prints per
setting the median wall time and the median CPU seconds of the driver JVM and of Python per
check, and the JVM's CPU per check (all settings together)
by thread kind (JIT compilers, the driver's planning threads, executor tasks, GC), read
from ``/proc/<pid>/task``. On a shared two-core machine CPU seconds are the figure to compare:
wall time is what is left of a core after everyone else. ``--rounds`` repeats the modes
alternately.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTORIES = ROOT / "fixtures" / "histories"
# changes to spark.SMALL_INPUT_CONF, the checker's settings for a small history
SETTINGS = {
    "as shipped": {},
    "adaptive on": {"spark.sql.adaptive.enabled": "true"},
    "codegen on": {"spark.sql.codegen.wholeStage": "true",
                   "spark.sql.codegen.factoryMode": "FALLBACK"},
}


def _threads(pid: int) -> collections.Counter:
    """CPU seconds so far of each kind of thread of ``pid`` (names with digits folded)."""
    tick = os.sysconf("SC_CLK_TCK")
    out: collections.Counter = collections.Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended
        out[re.sub(r"\d+", "#", name)] += (int(fields[11]) + int(fields[12])) / tick
    return out


def child(history: Path, warmup: int, checks: int) -> None:
    """Runs in the measured process: prints one JSON line of figures."""
    import psutil

    from pytest_kreplica.validation.checker import check
    from pytest_kreplica.validation.engine.spark import SMALL_INPUT_CONF, get_spark

    get_spark()
    shipped = dict(SMALL_INPUT_CONF)
    jvm = next(c for c in psutil.Process().children(recursive=True) if "java" in c.name())
    for _ in range(warmup):
        check(history)
    me = psutil.Process()
    rows: dict[str, list[tuple[float, float, float]]] = {k: [] for k in SETTINGS}
    before = _threads(jvm.pid)
    for _ in range(checks):
        for name, change in SETTINGS.items():
            SMALL_INPUT_CONF.clear()
            SMALL_INPUT_CONF.update({**shipped, **change})
            j0, p0, t0 = sum(jvm.cpu_times()[:2]), sum(me.cpu_times()[:2]), time.perf_counter()
            check(history)
            rows[name].append((time.perf_counter() - t0, sum(jvm.cpu_times()[:2]) - j0,
                               sum(me.cpu_times()[:2]) - p0))
    after = _threads(jvm.pid)
    n = checks * len(SETTINGS)
    kinds = {k: round((after[k] - before.get(k, 0.0)) / n, 3) for k in after}
    print(json.dumps({"settings": {k: [statistics.median(x[i] for x in v) for i in range(3)]
                                   for k, v in rows.items()},
                      "threads": dict(sorted(kinds.items(), key=lambda kv: -kv[1])[:6])}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--history", default="lost",
                    help="a folder of fixtures/histories, or the path of a run directory")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--checks", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    fixture = HISTORIES / args.history
    history = fixture if fixture.is_dir() else Path(args.history).resolve()
    sys.path.insert(0, str(ROOT))
    from pytest_kreplica.errors import HistoryError
    from pytest_kreplica.validation.checker.tables import find_table

    try:  # the checker's own rule for a sends table (JSON Lines or Parquet, not both)
        find_table(history, "sends")
    except HistoryError as exc:
        sys.exit(f"--history {args.history}: not a folder of {HISTORIES}, and {exc}")
    if args.child:
        child(history, args.warmup, args.checks)
        return
    for r in range(1, args.rounds + 1):
        for mode in ("full", "quick"):
            env = {**os.environ, "KREPLICA_SPARK_JIT": mode}
            out = subprocess.run([sys.executable, __file__, "--child", "--history", str(history),
                                  "--warmup", str(args.warmup), "--checks", str(args.checks)],
                                 env=env, capture_output=True, text=True, check=True)
            doc = json.loads(out.stdout.strip().splitlines()[-1])
            load = os.getloadavg()[0]
            print(f"round {r}, JIT {mode} (load {load:.1f}), {args.history}:")
            for name, (wall, jvm, py) in doc["settings"].items():
                print(f"  {name}: wall {wall:.3f} s, driver JVM CPU {jvm:.3f} s, "
                      f"Python CPU {py:.3f} s per check")
            kinds = ", ".join(f"{k} {v:.2f}" for k, v in doc["threads"].items())
            print(f"  JVM CPU per check by thread: {kinds}")


if __name__ == "__main__":
    main()
