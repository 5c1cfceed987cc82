"""Where `kreplica check`'s time goes: one fresh process per run, timed phase by phase.

Process phases are timed in the child (interpreter + imports, JVM + SparkSession, the check,
stop); the Spark side comes from Spark's own event log (enabled for these runs only through
PYSPARK_SUBMIT_ARGS): per stage its wall time, the operators it ran, task CPU, GC and spill.
What is left of the check once the stages are taken out is driver-side work
(analysis, planning, py4j round trips, reading run.json / Parquet footers). A script, not a
timed test:

    python benchmarks/bench_checker_phases.py benchmarks/out/history-1000000/parquet --runs 3
    python benchmarks/bench_checker_phases.py DIR --runs 1 --conf spark.shuffle.compress=false

``--conf`` passes a Spark setting to the checked process, to time one against the default.

Prints a table of medians per phase and stage, and the load average, so a noisy machine shows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time
t0 = time.time()
from pytest_kreplica.validation.checker import check
from pytest_kreplica.validation.engine.spark import get_spark, stop_spark
t1 = time.time()
get_spark()
t2 = time.time()
verdict = check(sys.argv[1])
t3 = time.time()
stop_spark()
t4 = time.time()
print(json.dumps({"start": t0, "imported": t1, "session": t2, "checked": t3, "stopped": t4,
                  "acked": verdict.counts["acked"], "polled": verdict.counts["polled"]}))
"""


def stage_rows(event_log: Path) -> list[dict]:
    """Completed stages in submission order, with their operators and task totals."""
    stages: dict[int, dict] = defaultdict(lambda: {"cpu_ms": 0, "gc_ms": 0, "spill": 0,
                                                   "input": 0})
    # Spark 4 writes a rolling log: a directory of events_<n>_<app> files
    files = sorted(event_log.glob("events_*"), key=lambda f: int(f.name.split("_")[1])) \
        if event_log.is_dir() else [event_log]
    lines = [ln for f in files for ln in f.read_text().splitlines() if ln]
    for line in lines:
        event = json.loads(line)
        kind = event.get("Event")
        if kind == "SparkListenerTaskEnd":
            metrics = event.get("Task Metrics") or {}
            row = stages[event["Stage ID"]]
            row["cpu_ms"] += metrics.get("Executor Run Time", 0)
            row["gc_ms"] += metrics.get("JVM GC Time", 0)
            row["spill"] += metrics.get("Disk Bytes Spilled", 0)
            row["input"] += (metrics.get("Input Metrics") or {}).get("Bytes Read", 0)
        elif kind == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            ops = []
            for rdd in info.get("RDD Info", []):
                scope = json.loads(rdd["Scope"])["name"] if rdd.get("Scope") else rdd["Name"]
                name = scope.split(" (")[0]
                if name not in ops:
                    ops.append(name)
            stages[info["Stage ID"]].update(start=info["Submission Time"] / 1000,
                                            end=info["Completion Time"] / 1000, ops=ops)
    return sorted((s for s in stages.values() if "start" in s), key=lambda s: s["start"])


def label(stage: dict) -> str:
    ops = set(stage["ops"])
    if stage["input"] or any(op.startswith("Scan") or op == "FileScanRDD" for op in ops):
        return "read + parse + shuffle write"
    if "Window" in ops:
        return "sort + windows + per-id partial agg"
    if "Exchange" in ops or "ShuffledRowRDD" in ops:
        return "per-id agg + counts"
    return "other: " + "/".join(stage["ops"])[:40]


def one_run(run_dir: str, env: dict[str, str], confs: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="kreplica-eventlog-") as logs:
        child_env = dict(env)
        extra = "".join(f"--conf {c} " for c in confs)
        child_env["PYSPARK_SUBMIT_ARGS"] = (
            f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file://{logs} "
            f"--conf spark.eventLog.compress=false {extra}pyspark-shell")
        spawned = time.time()
        out = subprocess.run([sys.executable, "-c", CHILD, run_dir], env=child_env,
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"check of {run_dir} failed: {out.stderr.strip()[-400:]}")
        t = json.loads(out.stdout.strip().splitlines()[-1])
        logs_found = sorted(Path(logs).iterdir())
        if not logs_found:
            raise SystemExit("Spark wrote no event log: PYSPARK_SUBMIT_ARGS was not honoured")
        stages = stage_rows(logs_found[0])
    phases: dict[str, float] = defaultdict(float)
    phases["interpreter + imports"] = t["imported"] - spawned
    phases["JVM + SparkSession"] = t["session"] - t["imported"]
    in_stages = 0.0
    for s in stages:
        key = label(s)
        wall = s["end"] - s["start"]
        in_stages += wall
        phases[f"  {key}"] += wall
        phases[f"    task CPU s ({key})"] += s["cpu_ms"] / 1000
        phases[f"    task GC s ({key})"] += s["gc_ms"] / 1000
        phases[f"    spilled MB ({key})"] += s["spill"] / 1e6
    check_s = t["checked"] - t["session"]
    phases["check(): Spark stages"] = in_stages
    phases["check(): driver (plan, py4j, footers)"] = check_s - in_stages
    phases["stop"] = t["stopped"] - t["checked"]
    phases["total"] = t["stopped"] - spawned
    phases["stages run"] = len(stages)
    return dict(phases)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the checked process (repeatable)")
    args = parser.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    runs = []
    for i in range(args.runs):
        phases = one_run(args.run_dir, env, args.conf)
        runs.append(phases)
        print(f"run {i + 1}: total {phases['total']:.1f} s", flush=True)
    keys = list(dict.fromkeys(k for r in runs for k in r))
    print(f"\n{args.run_dir}: medians of {len(runs)} runs")
    print("| phase | median | runs |")
    print("| --- | --- | --- |")
    for key in keys:
        values = [r.get(key, 0.0) for r in runs]
        print(f"| {key} | {statistics.median(values):.1f} | "
              f"{', '.join(f'{v:.1f}' for v in values)} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
