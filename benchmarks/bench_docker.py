"""Docker backend figures: cold start of a 3-node cluster on docker beside the process
backend (same run, alternating, medians), and the one-time image build.

    python benchmarks/bench_docker.py [--runs 3] [--brokers 3] [--version V] [--no-build]

Cold start = ``Cluster.start()`` until every broker is registered and unfenced and a quorum
leader is elected (the health gate both backends share). The image build is timed into
throw-away tags (base root file system, JRE layer, Kafka layer), which are removed after.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_kreplica.cluster import ClusterSpec, create_cluster
from pytest_kreplica.cluster.docker import image as docker_image  # noqa: E402


def cold_start(backend: str, brokers: int, version: str | None) -> float:
    with tempfile.TemporaryDirectory(prefix=f"bench-{backend}-") as tmp:
        cluster = create_cluster(ClusterSpec(brokers=brokers, kafka_version=version,
                                             backend=backend), Path(tmp))
        started = time.monotonic()
        try:
            cluster.start(timeout=300)
            return time.monotonic() - started
        finally:
            cluster.close()


def image_build(version: str | None) -> dict[str, float]:
    """Seconds for each layer of a build from nothing, into throw-away tags."""
    client = docker_image.engine()
    concrete, jars = docker_image.kafka_classpath(version)
    tags = {"base": "kreplica-bench/debian:bookworm", "jre": "kreplica-bench/jre:17",
            "kafka": f"kreplica-bench/kafka:{concrete}"}
    quiet = lambda line: None  # noqa: E731
    out: dict[str, float] = {}
    try:
        t0 = time.monotonic()
        docker_image.build_base_image(client, quiet, tags["base"])
        t1 = time.monotonic()
        docker_image.build_jre_image(client, quiet, tags["jre"], tags["base"])
        t2 = time.monotonic()
        docker_image.build_kafka_image(client, concrete, jars, quiet, tags["kafka"], tags["jre"])
        t3 = time.monotonic()
        out = {"base (debootstrap + import)": t1 - t0, "jre (apt-get)": t2 - t1,
               "kafka (jars)": t3 - t2, "total": t3 - t0}
    finally:
        for tag in reversed(list(tags.values())):
            with contextlib.suppress(Exception):  # a layer that was never built
                client.images.remove(tag, force=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--version", default=None)
    parser.add_argument("--no-build", action="store_true", help="skip the image build timing")
    args = parser.parse_args()

    docker_image.ensure_image(args.version)  # the backend's one-time cost, not a start's
    times: dict[str, list[float]] = {"process": [], "docker": []}
    for run in range(args.runs):
        for backend in times:
            seconds = cold_start(backend, args.brokers, args.version)
            times[backend].append(seconds)
            print(f"run {run + 1}: {backend:7s} cold start {seconds:5.1f} s", flush=True)
    medians = {b: statistics.median(v) for b, v in times.items()}
    print(f"\ncold start of {args.brokers} nodes to ready, median of {args.runs}:")
    for backend, value in medians.items():
        spread = f"{min(times[backend]):.1f}-{max(times[backend]):.1f}"
        print(f"  {backend:7s} {value:5.1f} s  (range {spread})")
    print(f"  docker / process = {medians['docker'] / medians['process']:.2f}")

    if not args.no_build:
        print("\none-time image build from nothing (no registry), seconds:")
        for layer, seconds in image_build(args.version).items():
            print(f"  {layer:28s} {seconds:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
