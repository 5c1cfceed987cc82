"""``kreplica cluster up|down``: a cluster by hand, e.g. to reproduce a failed case.

``up`` runs in the foreground until Ctrl-C (or SIGTERM) and then stops every node;
``up --detach`` leaves the nodes running (they are started without the parent-death
signal, marked as detached so the reaper leaves them alone) and records them in
``<dir>/cluster.json`` for ``down``. ``kreplica fetch`` warms the cache and makes the
broker's one-time artefacts.
"""

from __future__ import annotations

import logging
import signal
import tempfile
import threading
import time
from pathlib import Path

from ..cache import cache_dir
from ..errors import InputError
from .base import ClusterSpec, NodeState
from .kafka import prepared
from .kafka.distribution import COMPONENTS, default_version, resolve

NODE_WATCH_S = 1.0


def run_cluster(args) -> int:
    # the admin client logs every refused connection while nodes start: not news here
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    if args.cluster_command == "up":
        return _up(args)
    return _down(args)


def _spec(args) -> ClusterSpec:
    if args.brokers < 1:
        raise InputError(f"--brokers must be 1 or more, got {args.brokers}")
    return ClusterSpec(brokers=args.brokers, kafka_version=args.kafka_version)


def _workdir(args) -> Path:
    if args.directory:
        return Path(args.directory).expanduser()
    return Path(tempfile.mkdtemp(prefix="kreplica-cluster-"))


def _print_cluster(cluster, elapsed: float) -> None:
    print(f"Kafka {cluster.kafka_version}: {len(cluster.nodes)} node(s) in {cluster.workdir} "
          f"(ready in {elapsed:.1f} s)")
    print(f"bootstrap servers: {cluster.bootstrap_servers}", flush=True)
    for node in cluster.nodes:
        print(f"  node {node.node_id}: {node.address} (pid {node.pid}) log {node.log_file}")


def _up(args) -> int:
    from .process.cluster import ProcessCluster

    spec = _spec(args)
    resolve(spec.kafka_version)  # a bad version or missing Java fails before any file is made
    workdir = _workdir(args)
    cluster = ProcessCluster(spec, workdir, detached=args.detach)
    started = time.monotonic()
    if args.detach:
        cluster.start(timeout=120)
        _print_cluster(cluster, time.monotonic() - started)
        print(f"detached; stop it with: kreplica cluster down --dir {cluster.workdir}",
              flush=True)
        return 0

    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        cluster.start(timeout=120)
    except BaseException:
        signal.signal(signal.SIGTERM, previous)
        raise
    try:
        _print_cluster(cluster, time.monotonic() - started)
        print("Ctrl-C stops the cluster.", flush=True)
        reported: set[int] = set()
        while not stop.wait(NODE_WATCH_S):
            for node in cluster.nodes:
                if node.node_id not in reported and \
                        cluster.node_state(node.node_id) is NodeState.STOPPED:
                    reported.add(node.node_id)
                    print(f"node {node.node_id} exited; see {node.log_file}", flush=True)
            if len(reported) == len(cluster.nodes):
                print("every node exited", flush=True)
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        print("stopping...", flush=True)
        cluster.close()
        print(f"stopped; logs kept in {cluster.workdir}", flush=True)
    return 0


def _down(args) -> int:
    from .process.cluster import stop_detached

    workdir = Path(args.directory).expanduser()
    pids = stop_detached(workdir)
    print(f"stopped {len(pids)} node processes of {workdir.resolve()}")
    return 0


def run_fetch(args) -> int:
    """``kreplica fetch [--version V]``: warm the cache for every component, and build the
    broker's one-time artefacts (format template, class-data archive) with a line per step."""
    from .process.cluster import ProcessCluster

    version = getattr(args, "kafka_version", None)
    if version is None:
        version = default_version(refresh=True)
    started = time.monotonic()
    dist = resolve(version, tuple(COMPONENTS))
    prepared.prepare_broker(dist, ProcessCluster)
    elapsed = time.monotonic() - started
    for component, cp in dist.classpaths.items():
        print(f"kafka {dist.version} {component}: {len(cp.split(':'))} jars")
    print(f"cache: {cache_dir()} ({elapsed:.1f} s)")
    return 0
