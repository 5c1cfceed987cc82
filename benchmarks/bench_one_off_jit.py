"""Benchmark: a one-off ``kreplica check`` / ``verify-logs`` of a small input in a fresh local
driver, as typed (C1-only JIT below 4 MiB since 2026-11-29) against ``KREPLICA_SPARK_JIT=full``
(what the command did before).

    python benchmarks/bench_one_off_jit.py [--rounds 3] [TARGET ...]

A TARGET is ``check:RUN_DIR`` or ``verify-logs:RUN_DIR`` (default: ``check`` of the ``lost``
and ``clean`` fixtures). Each round runs every target once per mode, the modes' order
alternating between rounds, each as a fresh process with ``--spark-master local[2] --json``
(no Spark Connect server joined). The two modes' JSON must be equal and their stderr empty.
Prints the median and every run per target and mode, and the ratio as typed / full. Use a
run directory with anomalies too (a planted one from ``tests/checker/test_txn_planted.py``
with ``--basetemp``, or a lossy case's) to time the path users wait for.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "histories"
MODES = ("as typed", "full")


def run(mode: str, command: str, run_dir: str) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("KREPLICA_SPARK_MASTER", None)
    env.pop("KREPLICA_SPARK_JIT", None)
    if mode == "full":
        env["KREPLICA_SPARK_JIT"] = "full"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest_kreplica.cli", command, run_dir,
                           "--spark-master", "local[2]", "--json"],
                          env=env, capture_output=True, text=True, timeout=900)
    took = time.monotonic() - started
    if done.returncode not in (0, 1) or done.stderr:
        sys.exit(f"{command} {run_dir} ({mode}): expected a verdict and an empty stderr, saw "
                 f"exit {done.returncode}: {done.stderr[-1000:]}")
    return took, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET",
                        default=[f"check:{FIXTURES / 'lost'}", f"check:{FIXTURES / 'clean'}"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    targets = []
    for target in args.targets:
        command, _, run_dir = target.partition(":")
        if command not in ("check", "verify-logs") or not run_dir:
            parser.error(f"target {target!r}: expected check:RUN_DIR or verify-logs:RUN_DIR")
        targets.append((command, run_dir))
    times: dict[tuple[str, str, str], list[float]] = {}
    for i in range(args.rounds):
        for command, run_dir in targets:
            outputs = {}
            for mode in (MODES if i % 2 == 0 else MODES[::-1]):
                took, outputs[mode] = run(mode, command, run_dir)
                times.setdefault((command, run_dir, mode), []).append(took)
            if outputs[MODES[0]] != outputs[MODES[1]]:
                sys.exit(f"{command} {run_dir}: the two modes answered differently")
        print(f"round {i + 1}: others' load {os.getloadavg()[0]:.1f}", flush=True)
    for command, run_dir in targets:
        medians = {m: statistics.median(times[(command, run_dir, m)]) for m in MODES}
        for mode in MODES:
            runs = " ".join(f"{t:.2f}" for t in times[(command, run_dir, mode)])
            print(f"{command} {Path(run_dir).name} {mode}: median {medians[mode]:.2f} s "
                  f"({runs})")
        print(f"{command} {Path(run_dir).name} ratio as typed / full: "
              f"{medians[MODES[0]] / medians[MODES[1]]:.2f}")


if __name__ == "__main__":
    main()
