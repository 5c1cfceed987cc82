"""Tiered storage (KIP-405) on a cluster's nodes: Kafka's own test remote store.

``LocalTieredStorage`` (``org.apache.kafka:kafka-storage:<version>:test``) keeps the remote
tier in a directory; it is resolved from Maven Central once into the cache beside the
version's other components (``kafka/<version>/tiered/``) and loaded by each broker through
``remote.log.storage.manager.class.path``, so the broker classpath stays as it is. Every node
of a cluster shares one store directory (``<cluster workdir>/tiered-storage``), as brokers
share an object store. The metadata of remote segments lives in Kafka's topic-based remote
log metadata manager (its internal topic replicated on min(3, brokers) nodes).

Layout of the store, as LocalTieredStorage writes it::

    tiered-storage/kafka-tiered-storage/<topic>-<partition>-<topic id>/
        <start offset, 20 digits>-<segment id>.log   (+ .index, .timeindex, ...)
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .... import once
from ....cache import cache_dir
from ....errors import EnvironmentProblem, InputError
from ...kafka import maven

GROUP = "org.apache.kafka"
ARTIFACT = "kafka-storage"
CLASSIFIER = "test"
STORAGE_CLASS = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
MIN_VERSION = (3, 9, 0)  # tiered storage production-ready (KIP-405 early access before)
STORE_DIR = "tiered-storage"  # below a cluster's workdir
ROOT_NAME = "kafka-tiered-storage"  # LocalTieredStorage's own folder inside its ``dir``
MARKER = ".complete"
TASK_INTERVAL_MS = 500  # remote log manager: copy / expire / clean tasks this often
RETENTION_CHECK_MS = 1000  # local (hotset) retention enforced this often


def check_version(version: str) -> None:
    """One line when ``version`` has no production-ready tiered storage."""
    if tuple(int(x) for x in version.split(".")) < MIN_VERSION:
        raise InputError(f"tiered: on needs Kafka >= 3.9.0, got Kafka {version}; allowed: "
                         "tiered off, or --kreplica-kafka-version 3.9.0 or newer")


def store_dir(workdir: str | Path) -> Path:
    """The remote tier of the cluster in ``workdir`` (LocalTieredStorage's root folder)."""
    return Path(workdir) / STORE_DIR / ROOT_NAME


def store_jar(version: str) -> Path:
    """The test jar holding LocalTieredStorage for ``version``, resolved once into the cache
    with Maven (one line naming the artifact when it cannot be)."""
    check_version(version)
    folder = cache_dir() / "kafka" / version / "tiered"
    coordinate = f"{GROUP}:{ARTIFACT}:{version}:jar:{CLASSIFIER}"
    jar = folder / "libs" / f"{ARTIFACT}-{version}-{CLASSIFIER}.jar"

    def done() -> bool:
        return (folder / MARKER).exists() and jar.is_file()

    def build() -> None:
        folder.mkdir(parents=True, exist_ok=True)
        args = [f"{maven.DEPENDENCY_PLUGIN}:copy", f"-Dartifact={coordinate}",
                "-DoutputDirectory=libs"]
        try:
            try:
                maven.run_maven(args, cwd=folder, offline=True)
            except maven.MavenFailed:
                maven.run_maven(args, cwd=folder, offline=False)
        except maven.MavenFailed as exc:
            if "Could not find artifact" in exc.output and not exc.unreachable():
                raise InputError(f"tiered: on needs {coordinate} (LocalTieredStorage) on Maven "
                                 f"Central, which does not have it: {exc.summary()}") from None
            raise maven.problem(exc, f"{coordinate} (LocalTieredStorage)") from None
        if not jar.is_file():
            raise EnvironmentProblem(f"Maven copied no {jar.name} into {folder / 'libs'}")
        (folder / MARKER).write_text(json.dumps({"jars": [jar.name], "time": time.time()}))

    if not done():
        once.prepare(f"resolving Kafka {version}'s LocalTieredStorage ({ARTIFACT}:{CLASSIFIER}) "
                     "from Maven Central", cache_dir() / "resolve.lock", done, build)
    return jar


def broker_config(version: str, brokers: int, workdir: str | Path) -> dict[str, str]:
    """server.properties lines of a node with the remote tier on (the jar resolved first)."""
    jar = store_jar(version)
    root = store_dir(workdir)
    root.parent.mkdir(parents=True, exist_ok=True)
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": STORAGE_CLASS,
        "remote.log.storage.manager.class.path": str(jar),
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "rsm.config.dir": str(root.parent),
        "rsm.config.delete.on.close": "false",
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
        "rlmm.config.remote.log.metadata.topic.replication.factor": str(min(3, brokers)),
        "rlmm.config.remote.log.metadata.topic.num.partitions": "5",
        "remote.log.manager.task.interval.ms": str(TASK_INTERVAL_MS),
        "log.retention.check.interval.ms": str(RETENTION_CHECK_MS),
        # the first retention check (local deletion) after a start: 30 s by default
        "log.initial.task.delay.ms": str(RETENTION_CHECK_MS),
    }


def topic_config() -> dict[str, str]:
    """A tiered topic with a small local hotset: a closed segment leaves the local log about
    a second after it reached the remote tier (it is never deleted locally before)."""
    return {"remote.storage.enable": "true", "local.retention.ms": "1000",
            "local.retention.bytes": "1", "retention.ms": "-1", "retention.bytes": "-1"}
