"""What the plan's production shape costs one machine (process backend; not a test).

    python benchmarks/bench_shape.py [--brokers 8] [--topics 1000] [--partitions 10]
                                     [--heap-mb 768] [--batch 100] [--idle-s 60]

Starts ``--brokers`` nodes with ``--heap-mb`` each, creates ``--topics`` x ``--partitions``
partitions of replication factor 3 in batches of ``--batch`` topics (each batch bounded and
waited for: every ISR full, every replica answering), then reads each broker's live heap
(after a full GC, ``jstat``), resident memory, open files, memory maps and threads, and the
CPU the idle cluster burns over ``--idle-s`` seconds. The baseline, in the same run, is the
same cluster with the small profile's 10 x 10 partitions: the ratios say what the shape adds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec  # noqa: E402
from pytest_kreplica.cluster.kafka.distribution import resolve  # noqa: E402
from pytest_kreplica.cluster.kafka.prepared import ensure_class_data_archive  # noqa: E402
from pytest_kreplica.cluster.process.cluster import ProcessCluster  # noqa: E402

SMALL = (10, 10)  # the production-small profile's topics x partitions: the baseline


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def live_heap_mb(pid: int) -> float:
    """Heap in use after a full GC (``jcmd GC.run``, then ``jstat -gc``: S0U S1U EU OU)."""
    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=60, check=False)
    out = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split("\n")
    names, values = out[0].split(), out[1].split()  # "-": a column this GC has not
    row = {k: float(v) for k, v in zip(names, values, strict=True) if v != "-"}
    return sum(row.get(k, 0.0) for k in ("S0U", "S1U", "EU", "OU")) / 1024


def node_figures(pid: int) -> dict[str, float]:
    proc = psutil.Process(pid)
    with open(f"/proc/{pid}/maps", encoding="ascii", errors="replace") as maps:
        mmaps = sum(1 for _ in maps)
    return {"heap_mb": live_heap_mb(pid), "rss_mb": proc.memory_info().rss / 2**20,
            "fds": proc.num_fds(), "mmaps": mmaps, "threads": proc.num_threads()}


def idle_cpu(pids: list[int], seconds: float) -> float:
    """Cores the brokers keep busy while nothing is produced (CPU seconds per second)."""
    procs = [psutil.Process(p) for p in pids]
    before = sum(sum(p.cpu_times()[:2]) for p in procs)
    time.sleep(seconds)
    return (sum(sum(p.cpu_times()[:2]) for p in procs) - before) / seconds


def measure(version: str, brokers: int, topics: int, partitions: int, heap_mb: int,
            batch: int, idle_s: float, root: Path, jvm_flags: tuple[str, ...] = ()
            ) -> dict[str, float]:
    cluster = ProcessCluster(ClusterSpec(brokers, version), root / f"shape-{topics}",
                             heap_mb=heap_mb, extra_jvm_flags=jvm_flags)
    figures: dict[str, float] = {}
    try:
        t = time.monotonic()
        cluster.start(timeout=300)
        figures["start_s"] = time.monotonic() - t
        t = time.monotonic()
        for first in range(0, topics, batch):
            specs = [TopicSpec(f"shape-{i}", partitions, 3, {"min.insync.replicas": "2"})
                     for i in range(first, min(first + batch, topics))]
            cluster.create_topics(specs, timeout=120 + 0.05 * len(specs) * partitions)
            print(f"  {min(first + batch, topics)}/{topics} topics created, "
                  f"{time.monotonic() - t:.1f} s ({load()})", flush=True)
        figures["create_s"] = time.monotonic() - t
        t = time.monotonic()
        cluster.wait_healthy(None, timeout=600)
        figures["healthy_s"] = time.monotonic() - t
        pids = [n.pid for n in cluster.nodes if n.pid is not None]
        per_node = [node_figures(pid) for pid in pids]
        for key in per_node[0]:
            figures[f"max_{key}"] = max(f[key] for f in per_node)
        figures["idle_cores"] = idle_cpu(pids, idle_s)
        t = time.monotonic()
    finally:
        cluster.close()
    figures["close_s"] = time.monotonic() - t
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--brokers", type=int, default=8)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--heap-mb", type=int, default=768)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--version", default=None)
    parser.add_argument("--jvm-flag", action="append", default=[],
                        help="a broker JVM flag after the small-footprint ones (repeatable), "
                             "e.g. -XX:TieredStopAtLevel=4 for the full JIT")
    args = parser.parse_args()
    dist = resolve(args.version)
    ensure_class_data_archive(dist, ProcessCluster)
    replicas = args.topics * args.partitions * 3
    print(f"Kafka {dist.version}, {os.cpu_count()} cores, {args.brokers} brokers, heap "
          f"{args.heap_mb} MB, {load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kreplica-shape-") as tmp:
        flags = tuple(args.jvm_flag)
        base = measure(dist.version, args.brokers, *SMALL, args.heap_mb, args.batch,
                       args.idle_s, Path(tmp), flags)
        print(f"baseline {SMALL[0]}x{SMALL[1]}: {base}", flush=True)
        shape = measure(dist.version, args.brokers, args.topics, args.partitions,
                        args.heap_mb, args.batch, args.idle_s, Path(tmp), flags)
    print()
    print(f"shape {args.topics}x{args.partitions} rf 3 on {args.brokers} brokers "
          f"({replicas} replicas, {replicas // args.brokers} per broker), heap {args.heap_mb} MB"
          + (f", flags {' '.join(flags)}" if flags else ""))
    for key, value in shape.items():
        print(f"  {key:<14} {value:10.2f}   baseline {base[key]:10.2f}")
    print(f"({load()} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
