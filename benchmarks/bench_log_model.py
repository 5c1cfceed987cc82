"""Wall time of the log model's ci profile (50 examples x 20 steps) on one started cluster.

    python benchmarks/bench_log_model.py [--profile ci] [--runs 1]

Prints examples, steps and seconds per run (cluster start excluded), and the median.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pytest_kreplica.cluster import create_cluster
from pytest_kreplica.logmodel.runner import cluster_spec, run_log_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--kafka-version", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-log-model-") as tmp:
        cluster = create_cluster(cluster_spec(args.kafka_version, "process"), Path(tmp) / "c")
        started = time.monotonic()
        cluster.start(timeout=180)
        print(f"cluster started in {time.monotonic() - started:.1f} s")
        seconds = []
        try:
            for i in range(args.runs):
                run = run_log_model(cluster, Path(tmp) / f"run-{i}", profile=args.profile,
                                    topic_prefix=f"bench{i}")
                seconds.append(run.seconds)
                print(f"run {i + 1}: {run.examples} examples, {run.steps} steps, "
                      f"{run.seconds:.1f} s ({run.seconds / max(run.steps, 1) * 1000:.0f} ms "
                      f"a step)")
        finally:
            cluster.close()
        print(f"median {statistics.median(seconds):.1f} s over {len(seconds)} runs "
              f"(profile {args.profile})")


if __name__ == "__main__":
    main()
