"""One SparkSession per process, shared by the history checker and the replica-log verifier.

Local mode by default; ``master`` (or env ``KREPLICA_SPARK_MASTER``) points at a real
Spark cluster. Spark's own logging is kept at ERROR so a user sees only our output.
pyspark is imported here, lazily, never at plugin import time.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

ENV_MASTER = "KREPLICA_SPARK_MASTER"
DEFAULT_MASTER = "local[2]"

_lock = threading.Lock()
_session: SparkSession | None = None


def get_spark(master: str | None = None) -> SparkSession:
    """Return the process-wide session, creating it on first use."""
    global _session
    with _lock:
        if _session is not None:
            return _session
        from pyspark.sql import SparkSession

        # Python workers (mapInArrow tasks) must run this interpreter: it has our deps
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        url = master if master is not None else os.environ.get(ENV_MASTER) or DEFAULT_MASTER
        builder = (
            SparkSession.builder.appName("kreplica")
            .master(url)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
        )
        _session = builder.getOrCreate()
        _session.sparkContext.setLogLevel("ERROR")
        return _session


def stop_spark() -> None:
    """Stop the shared session (its JVM exits with it)."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
