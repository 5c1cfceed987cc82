"""Cluster figures of the process backend (medians; not a test).

    python benchmarks/bench_cluster.py [--runs 3] [--version V] [--skip-untuned]

1. cold start of a 3-node cluster to ready (3 unfenced brokers + a quorum leader), with
   and without the class-data archive, measured from ``start()`` to its return (format
   included; jars already cached);
2. failover: SIGKILL the leader of a 3-replica partition -> a new leader in metadata, with
   the tuned fault settings and (baseline, same run) with Kafka's defaults;
3. teardown: ``close()`` of a 3-node cluster (parallel SIGTERM).
The machine is shared and noisy: the load average is printed next to every figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec  # noqa: E402
from pytest_kreplica.cluster.kafka.distribution import resolve  # noqa: E402
from pytest_kreplica.cluster.kafka.prepared import ensure_class_data_archive  # noqa: E402
from pytest_kreplica.cluster.process.cluster import ProcessCluster  # noqa: E402


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def median_line(name: str, samples: list[float]) -> str:
    spread = f"{min(samples):.2f}-{max(samples):.2f}"
    return f"{name:<44} median {statistics.median(samples):6.2f} s  ({spread}, n={len(samples)})"


def cold_starts(version: str, runs: int, archive: bool, root: Path) -> tuple[list, list]:
    starts, closes = [], []
    for i in range(runs):
        c = ProcessCluster(ClusterSpec(3, version), root / f"cold-{archive}-{i}",
                           use_archive=archive)
        t = time.monotonic()
        try:
            c.start(timeout=180)
            starts.append(time.monotonic() - t)
        finally:
            t = time.monotonic()
            c.close()
            closes.append(time.monotonic() - t)
        print(f"  start {'with' if archive else 'without'} archive: {starts[-1]:.2f} s "
              f"{c.timings}  close {closes[-1]:.2f} s  ({load()})", flush=True)
    return starts, closes


def failovers(version: str, runs: int, tuned: bool, root: Path) -> list[float]:
    c = ProcessCluster(ClusterSpec(3, version), root / f"failover-{tuned}", tuned=tuned)
    samples = []
    try:
        c.start(timeout=180)
        c.create_topics([TopicSpec("bench", 1, 3, {"min.insync.replicas": "2"})])
        for _ in range(runs):
            old = c.leader("bench", 0)
            t = time.monotonic()
            c.kill(old)
            c.wait_for_leader("bench", 0, not_in={old}, timeout=120)
            samples.append(time.monotonic() - t)
            print(f"  failover ({'tuned' if tuned else 'defaults'}): {samples[-1]:.2f} s "
                  f"({load()})", flush=True)
            c.start_node(old, timeout=120)
            c.wait_healthy(["bench"], timeout=120)
    finally:
        c.close()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--version", default=None)
    parser.add_argument("--skip-untuned", action="store_true",
                        help="skip the failover baseline with Kafka's default settings")
    args = parser.parse_args()
    dist = resolve(args.version)
    ensure_class_data_archive(dist, ProcessCluster)  # built once, outside the timings
    print(f"Kafka {dist.version}, {os.cpu_count()} cores, {load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kreplica-bench-") as tmp:
        root = Path(tmp)
        with_archive, closes = cold_starts(dist.version, args.runs, True, root)
        without, closes2 = cold_starts(dist.version, args.runs, False, root)
        tuned = failovers(dist.version, args.runs, True, root)
        untuned = [] if args.skip_untuned else failovers(dist.version, args.runs, False, root)
    print()
    print(median_line("cold start to ready, class-data archive", with_archive))
    print(median_line("cold start to ready, no archive (baseline)", without))
    ratio = statistics.median(without) / statistics.median(with_archive)
    print(f"{'archive speed-up':<44} x{ratio:.2f}")
    print(median_line("teardown close() of 3 nodes", closes + closes2))
    print(median_line("failover leader SIGKILL -> new leader, tuned", tuned))
    if untuned:
        print(median_line("failover, Kafka defaults (baseline)", untuned))
        ratio = statistics.median(untuned) / statistics.median(tuned)
        print(f"{'tuned speed-up':<44} x{ratio:.2f}")
    print(f"({load()} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
