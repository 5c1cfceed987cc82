"""The newcomer's first run against a warm one (not a test): the main command, the smoke
matrix ``pytest tests/system -m smoke -n 2``, timed once on an empty ``KREPLICA_CACHE``
(jars from Maven Central, format template, broker and Spark class-data archives all made
by the run) and once on the warm cache, alternating, ``--runs`` times each.

    python benchmarks/bench_first_run.py [--runs 1] [--warm-cache DIR] [-- extra pytest args]

Prints per run the total, the time to the first preparation line, every ``kreplica: …``
preparation step with its duration, the longest lock wait reported, and the load average
(the machine is shared); then the medians and the cold - warm difference. Install excluded:
it runs in the current interpreter's environment.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEP = re.compile(r"^kreplica: (?P<what>.+?)… (?P<s>\d+) s")
WAIT = re.compile(r"^kreplica: waiting for .*\((?P<s>\d+) s so far\)")


def run_once(cache: Path | None, extra: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache is not None:
        env["KREPLICA_CACHE"] = str(cache)
    with tempfile.TemporaryDirectory(prefix="kreplica-bench-out-") as out:
        cmd = [sys.executable, "-m", "pytest", "tests/system", "-m", "smoke", "-n", "2",
               "-p", "no:cacheprovider", "--kreplica-output", out, *extra]
        load_before = os.getloadavg()[0]
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        first_step = None
        steps: list[tuple[str, int]] = []
        waits: list[int] = []
        tail: list[str] = []
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            tail = (tail + [line])[-15:]
            if line.startswith("kreplica: ") and first_step is None:
                first_step = time.monotonic() - started
            if m := STEP.match(line):
                steps.append((m["what"], int(m["s"])))
            if m := WAIT.match(line):
                waits.append(int(m["s"]))
        code = proc.wait()
        total = time.monotonic() - started
    return {"total": total, "code": code, "first_step": first_step, "steps": steps,
            "max_wait": max(waits, default=0), "load": (load_before, os.getloadavg()[0]),
            "tail": tail}


def show(label: str, r: dict) -> None:
    first = f"{r['first_step']:.1f} s" if r["first_step"] is not None else "none"
    print(f"{label}: total {r['total']:.1f} s, exit {r['code']}, first preparation line at "
          f"{first}, longest lock wait {r['max_wait']} s, load {r['load'][0]:.1f} -> "
          f"{r['load'][1]:.1f}", flush=True)
    for what, seconds in r["steps"]:
        print(f"    {what:<72} {seconds:4d} s", flush=True)
    if r["code"] != 0:
        print("    last lines:\n      " + "\n      ".join(r["tail"]), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--warm-cache", type=Path, default=None,
                        help="the warm cache (default: KREPLICA_CACHE or ~/.cache/kreplica)")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    cold, warm = [], []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="kreplica-empty-cache-") as empty:
            r = run_once(Path(empty), args.extra)
        show(f"cold {i + 1}", r)
        cold.append(r)
        r = run_once(args.warm_cache, args.extra)
        show(f"warm {i + 1}", r)
        warm.append(r)
    c = statistics.median(r["total"] for r in cold)
    w = statistics.median(r["total"] for r in warm)
    print(f"median total: cold {c:.1f} s, warm {w:.1f} s, cold - warm {c - w:.1f} s "
          f"(target: at most 120 s), n={args.runs}")
    return 0 if all(r["code"] == 0 for r in cold + warm) else 1


if __name__ == "__main__":
    sys.exit(main())
