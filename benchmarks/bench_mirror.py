"""MirrorMaker 2 figures: start to first mirrored record, and mirror lag.

    python benchmarks/bench_mirror.py [--runs 3] [--messages 500] [--backends process docker]
    python benchmarks/bench_mirror.py --run-dir RUN_DIR   # lag of a finished mirrored run

Starts a 1-broker source and target cluster once, then ``--runs`` times: a fresh topic, a
MirrorMaker 2 launch, one probe record, and the time until that record is on the target
(``start_to_first_record``); then ``--messages`` sync sends to the source while one consumer
reads the source and another the mirrored topic on the target. Mirror lag is, per
acknowledged id, the time from its acknowledgement on the source to its first poll on the
target; the baseline measured in the same run is the same time to a poll on the source
itself. Prints medians over the runs of p50 / p99 and the target/source ratio.
With ``--backends process docker`` the runs alternate with runs on docker clusters (MirrorMaker 2
as a container, its image built before the clock), so both see the same load; the
docker/process ratio of the start figure is printed.
``--run-dir`` prints the lag of an existing mirrored run directory (e.g. the C.6 smoke case,
faults included) from its sends.jsonl and polls.jsonl.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASE = {"scenario": "mirror", "dimensions": {"partitions": [2], "replication_factor": [1],
                                             "brokers": [1], "producer_mode": ["sync"]}}


def lags_ms(run_dir: Path, cluster: str = "target") -> list[float]:
    """Acknowledged on the source -> first polled on ``cluster``, per id, in ms."""
    acked = {}
    for line in (run_dir / "sends.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["status"] == "ok":
            acked[row["id"]] = row["complete_ns"]
    first: dict[str, int] = {}
    for line in (run_dir / "polls.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("cluster", "target") == cluster and row["id"] in acked:
            first.setdefault(row["id"], row["time_ns"])
    return sorted((first[i] - acked[i]) / 1e6 for i in first)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def one_run(source, target, messages: int, workdir: Path) -> dict[str, float]:
    from pytest_kreplica.cluster.base import TopicSpec
    from pytest_kreplica.cluster.mirrormaker import create_mirror_maker
    from pytest_kreplica.history import RunWriter
    from pytest_kreplica.matrix import parse_matrix
    from pytest_kreplica.scenarios.mirror import probe
    from pytest_kreplica.scenarios.runner import ClusterWriter
    from pytest_kreplica.workloads.plain import Consumer, ProduceStats, produce

    case = parse_matrix(Path("bench-mirror.yaml"),
                        {**CASE, "dimensions": {**CASE["dimensions"],
                                                "messages": [messages]}}).cases[0]
    topic = f"bench-{time.time_ns() % 10**9}"
    source.create_topics([TopicSpec(topic, case.partitions, 1)])
    mm = create_mirror_maker(source, target, [topic], workdir / "mm")
    with RunWriter(workdir) as writer:
        src, tgt = ClusterWriter(writer, "source"), ClusterWriter(writer, "target")
        try:
            if hasattr(mm, "prepare"):  # docker: image and container exist before the clock
                mm.prepare()
            mm.start()
            probes = probe([topic], source.bootstrap_servers, src)
            first = mm.wait_ready()
            on_source = Consumer([topic], case.partitions, source.live_bootstrap_servers, src,
                                 process=3).start()
            on_target = Consumer([mm.mirrored[topic]], case.partitions,
                                 target.live_bootstrap_servers, tgt).start()
            stats = produce(case, [topic], source.bootstrap_servers, src, ProduceStats())
            on_source.drain(set(stats.acked_ids) | probes, 120)
            on_target.drain(set(stats.acked_ids) | probes, 120)
        finally:
            mm.close()
    target_lag, source_lag = lags_ms(workdir, "target"), lags_ms(workdir, "source")
    return {"start_to_first_record_s": first, "lag_p50_ms": pct(target_lag, 0.5),
            "lag_p99_ms": pct(target_lag, 0.99), "source_p50_ms": pct(source_lag, 0.5),
            "source_p99_ms": pct(source_lag, 0.99), "mirrored": len(target_lag)}


def measure(backends: list[str], runs: int, messages: int) -> dict[str, list[dict[str, float]]]:
    """``runs`` MirrorMaker 2 launches per backend, each between a 1-broker source and target
    of that backend; the backends' runs alternate, so they share the machine's load."""
    from contextlib import ExitStack

    from pytest_kreplica.cluster import create_cluster
    from pytest_kreplica.cluster.base import ClusterSpec

    results: dict[str, list[dict[str, float]]] = {b: [] for b in backends}
    with tempfile.TemporaryDirectory(prefix="bench-mirror-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        pairs = {}
        for backend in backends:
            pair = []
            for role in ("source", "target"):
                cluster = create_cluster(ClusterSpec(brokers=1, role=role, backend=backend),
                                         root / backend / role)
                stack.callback(cluster.close)
                cluster.start(timeout=240)
                pair.append(cluster)
            pairs[backend] = pair
        for i in range(runs):
            for backend in backends:
                source, target = pairs[backend]
                results[backend].append(one_run(source, target, messages,
                                                root / backend / f"run-{i}"))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--backends", nargs="+", choices=("process", "docker"),
                        default=["process"])
    parser.add_argument("--run-dir", type=Path)
    args = parser.parse_args()
    if args.run_dir is not None:
        lag = lags_ms(args.run_dir)
        print(f"{args.run_dir.name}: {len(lag)} mirrored ids, lag p50 {pct(lag, .5):.0f} ms, "
              f"p99 {pct(lag, .99):.0f} ms, max {lag[-1] if lag else float('nan'):.0f} ms")
        return
    medians = {}
    measured = measure(args.backends, args.runs, args.messages)
    for backend, results in measured.items():
        for r in results:
            print(f"{backend} run: " + ", ".join(f"{k} {v:.3f}" for k, v in r.items()))
        med = {k: statistics.median(r[k] for r in results) for k in results[0]}
        medians[backend] = med
        print(f"{backend}, median of {args.runs}: MirrorMaker 2 start -> first mirrored record "
              f"{med['start_to_first_record_s']:.1f} s; mirror lag p50 "
              f"{med['lag_p50_ms']:.0f} ms, p99 {med['lag_p99_ms']:.0f} ms; same-cluster "
              f"baseline p50 {med['source_p50_ms']:.0f} ms, p99 {med['source_p99_ms']:.0f} ms; "
              f"ratio p50 {med['lag_p50_ms'] / max(med['source_p50_ms'], 1e-9):.1f}x",
              flush=True)
    if {"process", "docker"} <= medians.keys():
        ratio = (medians["docker"]["start_to_first_record_s"]
                 / medians["process"]["start_to_first_record_s"])
        print(f"start -> first mirrored record, docker / process: {ratio:.2f}")


if __name__ == "__main__":
    main()
