"""Start a pytest worker's Spark session in the background while its first cluster starts.

A worker's first validation used to start the session inside its first case, after the
cluster's cold start and the workload: 9-10 s of that case's replica phase with ``-n 2``
(smoke matrix, run.json phases). And the first replica check that ran two tasks started a
second Python worker for them: about 0.9 s more for that case's replica phase (1.07 s against
0.20 s for the next one, one session). Both are needed anyway, so the thread here starts the
session and, when the run checks replicas, verifies a tiny two-partition snapshot (two
tasks) as the worker's first case begins, while that case starts its cluster and runs its
workload. Nothing waits for it: the case's first validation takes the session when it is up
(``spark.get_spark`` holds its lock while it starts), and a warm-up that fails is only
logged; the case's own validation then tries again and reports the cause.
"""

from __future__ import annotations

import json
import logging
import tempfile
import threading
import time
from pathlib import Path

from .engine.spark import start_spark
from .replicas.verify import verify_logs

log = logging.getLogger(__name__)

_lock = threading.Lock()
_thread: threading.Thread | None = None


def _process_ending() -> bool:
    """The main thread is done: the interpreter's exit is stopping the session and deleting
    the snapshot's folder under the warm-up (its ``atexit`` hooks and finalizers)."""
    return not threading.main_thread().is_alive()


def start(spark_master: str | None = None, verify: bool = True) -> threading.Thread:
    """Start the warm-up in a daemon thread, once per process (later calls return it).
    ``verify``: also verify the tiny snapshot. Without replica checks, the only Spark work of
    a case that runs Python workers, the session alone is warmed."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_start, args=(spark_master, verify), daemon=True,
                                       name="kreplica-spark-warmup")
            _thread.start()
        return _thread


def _start(spark_master: str | None, verify: bool) -> None:
    started = time.monotonic()
    try:
        start_spark(spark_master)
        if verify:  # the snapshot's folder only when there is one to verify
            with tempfile.TemporaryDirectory(prefix="kreplica-spark-warmup-",
                                             ignore_cleanup_errors=True) as work:
                write_tiny_snapshot(Path(work))
                verify_logs(Path(work), spark_master=spark_master)
    except Exception as exc:  # the cases' own validation reports what is wrong
        if _process_ending():  # a run that ended first: nothing is wrong, nothing waits
            log.debug("warm-up stopped by the process's exit: %s", exc)
            return
        log.warning("warming Spark up in the background failed after %.1f s: %s",
                    time.monotonic() - started, exc)
    else:
        log.info("Spark warmed up in the background in %.1f s", time.monotonic() - started)


def write_tiny_snapshot(run_dir: Path) -> None:
    """Two partitions of topic ``t`` on two replicas each, one batch of three records per
    replica, and their ``replicas.json`` (HISTORY.md "Replica logs")."""
    from .replicas.synth import build_batch, message_values, write_partition

    partitions = []
    for partition in (0, 1):
        batch = build_batch(0, message_values([f"p{partition}-{i}" for i in range(3)]))
        for node in (1, 2):
            write_partition(run_dir / "replicas" / str(node) / f"t-{partition}", [batch], 1)
        partitions.append({"topic": "t", "partition": partition, "leader": 1,
                           "replicas": [1, 2], "isr": [1, 2], "high_watermark": 3})
    (run_dir / "replicas.json").write_text(json.dumps({
        "nodes": {"1": "replicas/1", "2": "replicas/2"}, "partitions": partitions,
        "at_rest": True}))
