"""Start a pytest worker's Spark session in the background while its first cluster starts.

A worker's first validation used to start the session inside its first case, after the
cluster's cold start and the workload: 9-10 s of that case's replica phase with ``-n 2``
(smoke matrix, run.json phases). And the first replica check that ran two tasks started a
second Python worker for them: about 0.9 s more for that case's replica phase (1.07 s against
0.20 s for the next one, one session). Both are needed anyway, so the thread here starts the
session and, when the run checks replicas, verifies a tiny two-partition snapshot (two
tasks) as the worker's first case begins, while that case starts its cluster and runs its
workload. A warm-up that fails is only logged; the case's own validation then tries again
and reports the cause.

The thread then checks a history shaped like a smoke case's (``write_warmup_history``: 500
sends and their polls over five partitions, one record planted lost, so the examples'
read-back runs too). A fresh driver JVM's first check of a 1000-message case took 4.5 s and
5.9 s of JVM CPU, its second 1.6 s and its fourth 1.2 s (one session, ``quick`` JIT):
loading classes and compiling the checker's code paths is work each worker pays once, and
here it is paid while the first case runs.
A case's validation waits for the warm-up to end first (``wait``): two checks at once in one
session would set and restore each other's SQL settings (``spark.sized_shuffle``), and
what is left of the warm-up is the work that validation would have done cold.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import time
from pathlib import Path

from ..history import RunWriter
from .checker import check
from .replicas.verify import verify_logs
from .spark import start_spark

log = logging.getLogger(__name__)

_lock = threading.Lock()
_thread: threading.Thread | None = None
WAIT_TIMEOUT = 300.0  # seconds a case's validation waits for the warm-up before its own
HISTORY_PARTITIONS, HISTORY_PER_PARTITION = 5, 100
PLANTED_LOST = ("t", 0, 10)  # topic, partition, offset never polled (later ones are)


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
    work = Path(tempfile.mkdtemp(prefix="kreplica-spark-warmup-"))
    try:
        start_spark(spark_master)
        if verify:
            write_tiny_snapshot(work)
            verify_logs(work, spark_master=spark_master)
        write_warmup_history(work / "history")
        _expect_planted(check(work / "history", spark_master=spark_master).counts)
    except Exception as exc:  # the cases' own validation reports what is wrong
        log.warning("warming Spark up in the background failed after %.1f s: %s",
                    time.monotonic() - started, exc)
    else:
        log.info("Spark warmed up in the background in %.1f s", time.monotonic() - started)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def running() -> bool:
    """Whether this process's warm-up thread is still at work."""
    thread = _thread
    return thread is not None and thread.is_alive()


def wait(timeout: float = WAIT_TIMEOUT) -> bool:
    """Wait, at most ``timeout`` s, for this process's warm-up to end; True when one was
    still running. A warm-up still running afterwards is logged and left to finish."""
    thread = _thread
    if thread is None or not thread.is_alive():
        return False
    log.info("waiting up to %.0f s for the background Spark warm-up to end", timeout)
    thread.join(timeout)
    if thread.is_alive():
        log.warning("the background Spark warm-up is still running after %.0f s; "
                    "validating beside it", timeout)
    return True


def _expect_planted(counts: dict[str, int]) -> None:
    """The warm-up check must have read the whole history and found what was planted: the
    lost record, and the poll skip over its offset."""
    acked = HISTORY_PARTITIONS * HISTORY_PER_PARTITION
    expected = {"acked": acked, "polled": acked - 1, "lost": 1, "poll_skips": 1}
    seen = {k: counts.get(k, 0) for k in expected}
    if seen != expected:
        raise RuntimeError(f"the warm-up history's check expected {expected}; it counted "
                           f"{seen}")


def write_warmup_history(run_dir: Path) -> None:
    """A smoke case's shape at half its size, through the cases' own writer: producer 0
    acknowledges HISTORY_PER_PARTITION records in each of HISTORY_PARTITIONS partitions of
    topic ``t``, and consumer 1 polls them partition by partition in polls of 50, all but
    PLANTED_LOST."""
    topic, lost_partition, lost_offset = PLANTED_LOST
    with RunWriter(run_dir) as writer:
        t, poll = 1_000_000, 0
        for i in range(HISTORY_PER_PARTITION):
            for p in range(HISTORY_PARTITIONS):
                t += 1000
                writer.send(0, topic, p, f"0-{p}-{i}", i, "ok", invoke_ns=t, complete_ns=t + 500)
        for p in range(HISTORY_PARTITIONS):
            for i in range(HISTORY_PER_PARTITION):
                if i % 50 == 0:
                    poll += 1
                if (p, i) != (lost_partition, lost_offset):
                    t += 1000
                    writer.poll(1, poll, topic, p, i, f"0-{p}-{i}", time_ns=t, index=i % 50)


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
