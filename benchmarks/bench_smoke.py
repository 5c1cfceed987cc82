"""Per-case overhead on a reused cluster, and the smoke matrix's wall time with -n 1 / -n 2.

    python benchmarks/bench_smoke.py overhead [--runs 5]
    python benchmarks/bench_smoke.py smoke [--runs 1] [--workers 1 2]

``overhead`` starts one 3-node cluster (the pool's way: health gate before each case), then
runs a tiny case (10 async messages, 1 partition) ``--runs`` times through the same
``ClusterPool.acquire`` + ``run_case`` path the plugin uses and prints the median of each phase.
Everything but the produce phase is overhead a case pays on a reused cluster (target <= 2 s).
``smoke`` runs ``pytest tests/system -m smoke -n W`` in a subprocess and prints the wall
time per worker count (medians when ``--runs`` > 1), the -n 2 / -n 1 ratio, and each run's
per-phase medians read from the cases' verdict.json (``overhead``: all but the workload,
over every case, each worker's first one with its cluster start and cold Spark JVM
included; ``overhead, reused cluster``: over the cases whose run.json says
``cluster_reused``, the population the issue's <= 2 s target names).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TINY = """
dimensions:
  partitions: [1]
  replication_factor: [3]
  producer_mode: [async]
  messages: [10]
"""


def overhead(runs: int) -> None:
    import yaml

    from pytest_kreplica.cluster import create_cluster
    from pytest_kreplica.cluster.pool import ClusterPool, cluster_spec
    from pytest_kreplica.matrix import parse_matrix
    from pytest_kreplica.scenarios.runner import run_case

    case = parse_matrix(Path("bench.yaml"), yaml.safe_load(TINY)).cases[0]
    with tempfile.TemporaryDirectory(prefix="kreplica-bench-") as tmp:
        pool = ClusterPool(Path(tmp) / "clusters", create_cluster)
        try:
            started = time.monotonic()
            pool.acquire(cluster_spec(case))
            print(f"cluster cold start (3 nodes): {time.monotonic() - started:.2f} s")
            rows = []
            for i in range(runs + 1):  # the first run warms Spark and the clients up
                t0 = time.monotonic()
                cluster = pool.acquire(cluster_spec(case))
                gate = time.monotonic() - t0
                result = run_case(case, cluster, Path(tmp) / f"run-{i}")
                total = time.monotonic() - t0
                phases = {"gate": gate, **result.phases, "total": total}
                phases["overhead"] = total - result.phases["produce"]
                assert result.valid, result.failure_message()
                if i:
                    rows.append(phases)
                print(f"run {i}{' (warm-up)' if not i else ''}: "
                      + "  ".join(f"{k} {v:.2f}" for k, v in phases.items()))
        finally:
            pool.close_all()
    print(f"median over {runs} runs (s):")
    for key in rows[0]:
        print(f"  {key:<11}{statistics.median(r[key] for r in rows):7.2f}")


WORKLOAD = ("topics", "produce", "drain")  # the workload's own time; the rest is overhead


def case_phases(output: Path) -> list[dict[str, float]]:
    """Each case's phases from its verdict.json, plus ``workload`` and ``overhead``
    (everything but topics + produce + drain, the cluster's health gate included)."""
    rows = []
    for path in sorted(output.glob("*/verdict.json")):
        phases = json.loads(path.read_text()).get("phases") or {}
        workload = sum(phases.get(k, 0.0) for k in WORKLOAD)
        row = {**phases, "workload": workload, "overhead": sum(phases.values()) - workload}
        run = json.loads((path.parent / "run.json").read_text())
        if run.get("cluster_reused"):  # the figure: a case on a reused cluster
            row["overhead, reused cluster"] = row["overhead"]
        rows.append(row)
    return rows


def print_phase_medians(rows: list[dict[str, float]], label: str) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    print(f"{label}: per-phase median / max over {len(rows)} cases (s):")
    for key in keys:
        values = [r[key] for r in rows if key in r]
        n = f"  ({len(values)} cases)" if len(values) != len(rows) else ""
        print(f"  {key:<25}{statistics.median(values):7.2f} {max(values):7.2f}{n}")


def smoke(runs: int, workers: list[int]) -> None:
    times: dict[int, list[float]] = {}
    for w in workers:
        for i in range(runs):
            output = Path(tempfile.mkdtemp(prefix="kreplica-bench-smoke-"))
            cmd = [sys.executable, "-m", "pytest", "tests/system", "-m", "smoke", "-q",
                   "-p", "no:cacheprovider", "-n", str(w), f"--kreplica-output={output}"]
            t0 = time.monotonic()
            proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                  capture_output=True, text=True)
            elapsed = time.monotonic() - t0
            last = (proc.stdout.strip().splitlines() or ["?"])[-1]
            print(f"-n {w}: {elapsed:.1f} s (exit {proc.returncode}: {last})")
            print_phase_medians(case_phases(output), f"-n {w} run {i + 1}")
            shutil.rmtree(output, ignore_errors=True)
            times.setdefault(w, []).append(elapsed)
    medians = {w: statistics.median(t) for w, t in times.items()}
    for w, m in medians.items():
        print(f"smoke matrix -n {w}: median {m:.1f} s over {len(times[w])} run(s)")
    if 1 in medians and 2 in medians:
        print(f"ratio -n 2 / -n 1: {medians[2] / medians[1]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("overhead")
    p.add_argument("--runs", type=int, default=5)
    p = sub.add_parser("smoke")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    if args.what == "overhead":
        overhead(args.runs)
    else:
        smoke(args.runs, args.workers)


if __name__ == "__main__":
    main()
