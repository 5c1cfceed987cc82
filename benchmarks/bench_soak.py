"""Benchmark: a soak at the plan's production shape (``--kreplica-matrix production``: 8
brokers, 1000 topics x 10 partitions, rf 3, mirrored by MirrorMaker 2, composed random
faults), then ``kreplica check`` of its own history beside a plain Spark read of it.

    python benchmarks/bench_soak.py --duration 7200

Runs ``pytest tests/system --kreplica-matrix MATRIX -m soak --kreplica-duration D`` as one
process (no xdist) and samples the resident memory of its whole process tree (brokers,
MirrorMaker 2, Spark, clients) every 10 s. A soak over ``D`` plus an hour gets SIGINT, which
ends it with a verdict on what it recorded. Prints the verdict, the counts, the faults and
the peak, then times the check against the plain read of the case's run directory, in
turns (``bench_rolled_check``). ``--run DIR`` skips the soak and reads a case's run
directory a soak wrote. A soak that ended in a harness error gives no figure (exit 1).
Output goes to benchmarks/out/soak (ignored by git) unless --out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rolled_check import time_pair  # noqa: E402  (beside this script)

SAMPLE_S = 10
SLACK_S = 3600  # past the duration: the shape's start, MirrorMaker 2's, the last recovery
INTERRUPTED_S = 900  # a SIGINT soak's own check and teardown


def tree_rss(root: psutil.Process) -> int:
    total = 0
    for proc in (root, *root.children(recursive=True)):
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


def run_soak(matrix: str, duration: int, out: Path) -> tuple[int, float, int]:
    """The soak's exit status, wall seconds and peak tree RSS (bytes); its output in
    ``out/pytest.log``."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cmd = [sys.executable, "-m", "pytest", "tests/system", "--kreplica-matrix", matrix,
           "-m", "soak", "--kreplica-duration", str(duration), "-p", "no:xdist",
           "-p", "no:cacheprovider", f"--basetemp={out / 'tmp'}",
           "--kreplica-output", str(out / "output"), "--kreplica-results=", "-q"]
    print("soak: " + " ".join(cmd[1:]), flush=True)
    started = time.monotonic()
    with open(out / "pytest.log", "w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        root, peak = psutil.Process(proc.pid), 0
        try:
            while proc.poll() is None:
                peak = max(peak, tree_rss(root))
                if time.monotonic() - started > duration + SLACK_S:
                    print(f"soak: still running {SLACK_S} s past its duration; SIGINT",
                          flush=True)
                    proc.send_signal(signal.SIGINT)
                    proc.wait(timeout=INTERRUPTED_S)
                    break
                time.sleep(SAMPLE_S)
        except BaseException:  # Ctrl-C or SIGTERM of the benchmark: end the soak with it
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=INTERRUPTED_S)
            raise
    return proc.wait(), time.monotonic() - started, peak


def case_dir(output: Path) -> Path:
    """The soak case's run directory: the one folder of ``output`` with a verdict."""
    found = [p.parent for p in output.glob("*/verdict.json")]
    if len(found) != 1:
        raise SystemExit(f"expected one case run directory with a verdict.json in {output}, "
                         f"found {len(found)}; see its pytest.log")
    return found[0]


def summary(verdict: dict) -> str:
    """One line of the case's verdict: what passed, the counts, the faults."""
    counts = verdict["counts"]
    checks = verdict.get("checks") or []
    shown = ("sent", "acked", "indeterminate", "polled", "lost", "unseen", "duplicated")
    anomalies = {k: v for k, v in counts.items()
                 if v and k not in shown and k not in ("recovered", "failed")}
    return (f"{'passed' if verdict['passed'] else 'failed'} ({verdict['reason']}); "
            + ", ".join(f"{k} {counts.get(k, 0)}" for k in shown)
            + f", other anomalies {anomalies or 'none'}, faults {len(verdict['faults'])}, "
            f"checks {sum(c['ok'] for c in checks)}/{len(checks)} ok, election max "
            f"{verdict.get('election_max_s') or 0:.1f} s, case {verdict['duration_s']:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=int, default=7200, help="the soak's seconds")
    parser.add_argument("--matrix", default="production")
    parser.add_argument("--repeat", type=int, default=2, help="check/read pairs")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "soak"))
    parser.add_argument("--run", default=None, help="a soak's case run directory to read")
    args = parser.parse_args()
    if args.run:
        run = Path(args.run)
    else:
        status, wall, peak = run_soak(args.matrix, args.duration, Path(args.out))
        run = case_dir(Path(args.out) / "output")
        print(f"soak {args.duration} s: exit {status}, wall {wall:.0f} s, "
              f"peak {peak / 2**30:.1f} GiB", flush=True)
    if not (run / "verdict.json").is_file():
        raise SystemExit(f"--run {run}: expected a case's run directory with a verdict.json")
    verdict = json.loads((run / "verdict.json").read_text(encoding="utf-8"))
    print(f"soak verdict: {summary(verdict)}", flush=True)
    if verdict.get("harness"):
        print("soak: ended in a harness error, which says nothing of the brokers: no figure; "
              f"run directory {run}", file=sys.stderr)
        return 1
    env = {**os.environ, "KREPLICA_SPARK_DRIVER_MEMORY": args.driver_memory,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    time_pair(run, None, args.repeat, env, "soak history")
    print(f"load average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
