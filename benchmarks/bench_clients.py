"""Each client's acknowledged msg/s against Kafka's own ProducerPerformance.

    python benchmarks/bench_clients.py [--rounds 3] [--messages 10000] [--acks all]
                                       [--clients kafka-python java librdkafka]

Starts one 3-node process cluster, then ``--rounds`` times, alternating so every figure
sees the same load: the plain workload's producer of each client and mode (``sync``: one
send awaited at a time; ``async``: sends in flight, linger 5 ms; the ``java`` client has
no sync mode) writing ``--messages`` records to a fresh topic (3 partitions, rf 3,
min ISR 2), and ProducerPerformance of the same Kafka version with the same acks, record
count and record size (the baseline, ``--throughput -1``). A client's figure is its
acknowledged records over the wall time of its ``produce`` (the history it writes
included, as in a case); the ratio is that over the baseline's records/s of the same
round. Prints every round and the medians.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLIENTS = ("kafka-python", "java", "librdkafka")
MODES = ("sync", "async")
RECORD_BYTES = 100
PERF_CLASS = "org.apache.kafka.tools.ProducerPerformance"
PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")
PERF_TIMEOUT_S = 600


def case_for(client: str, mode: str, messages: int, acks: str):
    """The matrix case the benchmark's producer runs (a real parse, so refusals apply)."""
    from pytest_kreplica.matrix import parse_matrix

    dims = {"client": [client], "producer_mode": [mode], "messages": [messages],
            "acks": [acks], "partitions": [3], "replication_factor": [3],
            "message_bytes": [0 if client == "java" else RECORD_BYTES]}
    return parse_matrix(Path("bench-clients.yaml"),
                        {"scenario": "replication", "dimensions": dims}).cases[0]


def fresh_topic(cluster, prefix: str) -> str:
    """A new topic of the benchmark's shape: 3 partitions, rf 3, min ISR 2."""
    from pytest_kreplica.cluster.base import TopicSpec

    topic = f"{prefix}-{time.time_ns() % 10**10}"
    cluster.create_topics([TopicSpec(topic, 3, 3, {"min.insync.replicas": "2"})])
    return topic


def client_rate(cluster, case, workdir: Path) -> tuple[float, int]:
    """One client run: (acknowledged records per second, acknowledged records)."""
    from pytest_kreplica.history import RunWriter
    from pytest_kreplica.workloads import client_module
    from pytest_kreplica.workloads.sends import ProduceStats

    topic = fresh_topic(cluster, "bench")
    module = client_module(case.client)
    workdir.mkdir(parents=True)
    with RunWriter(workdir) as writer:
        started = time.monotonic()
        stats = module.produce(case, [topic], cluster.bootstrap_servers, writer, ProduceStats())
        elapsed = time.monotonic() - started
    acked = len(stats.acked_ids)
    return acked / elapsed, acked


def perf_rate(cluster, version: str | None, acks: str, messages: int) -> float:
    """ProducerPerformance's records/s on a fresh topic of the same shape."""
    from pytest_kreplica.cluster.kafka import distribution

    topic = fresh_topic(cluster, "bench-perf")
    dist = distribution.resolve(version, ("broker", "tools"))
    cmd = dist.command(PERF_CLASS, "--topic", topic, "--num-records", str(messages),
                       "--record-size", str(RECORD_BYTES), "--throughput", "-1",
                       "--producer-props", f"bootstrap.servers={cluster.bootstrap_servers}",
                       f"acks={acks}", "linger.ms=5", component="tools")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=PERF_TIMEOUT_S,
                          check=False)
    lines = PERF_LINE.findall(done.stdout)
    if done.returncode or not lines:
        raise SystemExit(f"ProducerPerformance failed (exit {done.returncode}): expected a "
                         f"'N records sent, R records/sec' line; stderr: "
                         f"{done.stderr.strip()[-400:]}")
    return float(lines[-1][1])


def measure(clients: list[str], rounds: int, messages: int, acks: str
            ) -> tuple[list[float], dict[str, list[tuple[float, float]]]]:
    """The baseline's rate in each round, and per client/mode label its (rate, ratio to
    that round's baseline) in each round."""
    from pytest_kreplica.cluster import create_cluster
    from pytest_kreplica.cluster.base import ClusterSpec

    cases = {f"{c}/{m}": case_for(c, m, messages, acks) for c in clients for m in MODES
             if not (c == "java" and m == "sync")}
    baseline: list[float] = []
    figures: dict[str, list[tuple[float, float]]] = {label: [] for label in cases}
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as tmp:
        root = Path(tmp)
        cluster = create_cluster(ClusterSpec(brokers=3), root / "cluster")
        try:
            cluster.start(timeout=240)
            version = next(iter(cases.values())).kafka_version
            for r in range(rounds):
                base = perf_rate(cluster, version, acks, messages)
                baseline.append(base)
                print(f"round {r + 1}: ProducerPerformance {base:,.0f} records/s", flush=True)
                for label, case in cases.items():
                    workdir = root / f"r{r}-{label.replace('/', '-')}"
                    rate, acked = client_rate(cluster, case, workdir)
                    figures[label].append((rate, rate / base))
                    print(f"round {r + 1}: {label} {rate:,.0f} acked/s ({acked} acknowledged),"
                          f" {rate / base:.3f} of ProducerPerformance", flush=True)
        finally:
            cluster.close()
    return baseline, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--acks", choices=("0", "1", "all"), default="all")
    parser.add_argument("--clients", nargs="+", choices=CLIENTS, default=list(CLIENTS))
    args = parser.parse_args()
    baseline, figures = measure(args.clients, args.rounds, args.messages, args.acks)
    load = os.getloadavg()[0]
    print(f"medians of {args.rounds} round(s), {args.messages} records of {RECORD_BYTES} B, "
          f"acks={args.acks}, {os.cpu_count()} cores, load {load:.1f}:")
    print(f"  ProducerPerformance: {statistics.median(baseline):,.0f} records/s (baseline)")
    for label, rounds in figures.items():
        print(f"  {label}: {statistics.median(r for r, _ in rounds):,.0f} acked/s, ratio "
              f"{statistics.median(q for _, q in rounds):.3f}")


if __name__ == "__main__":
    main()
