"""The broker's one-time artefacts per Kafka version: the format template and the class-data
archive, each made once per machine under its own lock (``once``).

The archive build starts a one-node cluster, whose start asks for the format template: the
two have separate locks, so that nested request takes the template's lock (or finds the
template made), never the archive's own; a failed template only means that cluster formats
with the real tool. Both are optimisations: a failure leaves a ``.failed`` marker and brokers
start without them.

The archive build's cluster class comes from the caller (``ProcessCluster``, whose start asks
for the archive): this module sits below the process backend and never imports it.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import once
from ...errors import ClusterError
from ..admin.clients import close_producer
from ..base import ClusterSpec, TopicSpec
from ..launcher import Launcher
from . import config as kconfig
from . import distribution

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
FORMAT_TIMEOUT_S = 120.0
ARCHIVE_BUILD_TIMEOUT_S = 120.0
ARCHIVE_RETRY_AFTER_S = 24 * 3600
#: ``ProcessCluster`` or a subclass: called with (spec, workdir, use_archive=, extra_jvm_flags=)
NewCluster = Callable[..., Any]


def template_path(dist: distribution.Distribution) -> Path:
    return dist.home / "format-template" / "bootstrap.checkpoint"


def prepare_broker(dist: distribution.Distribution, new_cluster: NewCluster) -> bool:
    """Make the format template and the class-data archive of ``dist`` (each once);
    True when the archive exists afterwards."""
    ensure_format_template(dist)
    return ensure_class_data_archive(dist, new_cluster)


# -- format template -----------------------------------------------------------------------

def ensure_format_template(dist: distribution.Distribution, timeout: float = FORMAT_TIMEOUT_S
                           ) -> Path | None:
    """The ``bootstrap.checkpoint`` that ``StorageTool format`` writes for this version (the
    feature levels; nothing node- or cluster-specific), made once under its own lock.
    None if the tool failed (callers then format each node with the tool)."""
    template = template_path(dist)
    done = once.prepare(f"making the Kafka {dist.version} storage format template (once)",
                        template.parent.with_name("format-template.lock"), template.exists,
                        lambda: _make_template(dist, template, timeout),
                        failed_marker=template.with_name("template.failed"),
                        retry_after_s=ARCHIVE_RETRY_AFTER_S)
    return template if done else None


def _make_template(dist: distribution.Distribution, template: Path, timeout: float) -> None:
    work = template.parent / f"work-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "data").mkdir(parents=True)
    addr = kconfig.NodeAddress(1, HOST, 1, 2)
    props = kconfig.server_properties(addr, kconfig.quorum_voters([addr]), str(work / "data"), 1)
    (work / "server.properties").write_text(kconfig.render_properties(props))
    cmd = dist.command("kafka.tools.StorageTool", "format", "-t", kconfig.new_cluster_id(),
                       "-c", str(work / "server.properties"), heap_mb=128)
    with open(work / "format.log", "wb") as out:
        proc = Launcher.get().popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
    try:
        code: int | str = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        code = "timeout"
    made = work / "data" / template.name
    if code != 0 or not made.exists():
        raise ClusterError(f"StorageTool format exited {code} (expected 0 and {made.name}); "
                           f"log: {work / 'format.log'}")
    made.replace(template)
    shutil.rmtree(work, ignore_errors=True)


# -- class-data archive ------------------------------------------------------------------------

def ensure_class_data_archive(dist: distribution.Distribution, new_cluster: NewCluster,
                              timeout: float = ARCHIVE_BUILD_TIMEOUT_S) -> bool:
    """Build the broker class-data archive of ``dist`` once: a one-node cluster
    (``new_cluster``) runs with ``-XX:ArchiveClassesAtExit``, serves a little traffic and is
    stopped. A failure leaves ``classes.failed`` and brokers start without an archive
    (retried a day later)."""
    archive = dist.archive_path
    return once.prepare("building the broker class-data archive (once)",
                        archive.with_name("archive.lock"), archive.exists,
                        lambda: _build_archive(dist, archive, timeout, new_cluster),
                        failed_marker=archive.with_suffix(".failed"),
                        retry_after_s=ARCHIVE_RETRY_AFTER_S)


def _build_archive(dist: distribution.Distribution, archive: Path, timeout: float,
                   new_cluster: NewCluster) -> None:
    build_dir = archive.parent / "archive-build"
    shutil.rmtree(build_dir, ignore_errors=True)
    partial = archive.with_name(f"classes.{os.getpid()}.jsa.tmp")
    cluster = new_cluster(ClusterSpec(brokers=1, kafka_version=dist.version), build_dir,
                          use_archive=False,
                          extra_jvm_flags=(f"-XX:ArchiveClassesAtExit={partial}",))
    try:
        cluster.start(timeout=timeout)
        cluster.create_topics([TopicSpec("kreplica-warmup", 2, 1)], timeout=30)
        _warm_traffic(cluster.bootstrap_servers, "kreplica-warmup")
        cluster.close(timeout=60)
        if not partial.exists() or partial.stat().st_size == 0:
            raise ClusterError(f"the JVM wrote no archive to {partial}; logs in {build_dir}")
        partial.replace(archive)
        shutil.rmtree(build_dir, ignore_errors=True)
    except Exception as exc:
        cluster.close(timeout=10)
        partial.unlink(missing_ok=True)
        log.warning("class-data archive build failed (%s); logs in %s", exc, build_dir)
        raise


def _warm_traffic(bootstrap: str, topic: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    try:
        for i in range(20):
            producer.send(topic, f"warmup-{i}".encode()).get(timeout=30)
    finally:  # a close that gives up is forced and logged: the archive does not need it
        trouble = close_producer(producer, timeout=5)
        if trouble:
            log.warning("class-data archive warm-up: %s", trouble)
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             group_id="kreplica-warmup", consumer_timeout_ms=5000)
    try:
        for seen, _record in enumerate(consumer, start=1):
            if seen >= 20:
                break
    finally:
        consumer.close()
