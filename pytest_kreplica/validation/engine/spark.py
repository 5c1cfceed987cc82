"""One SparkSession per process, shared by the history checker and the replica-log verifier.

Local mode (``local[2]``, an in-process driver JVM) by default; ``master`` (or env
``KREPLICA_SPARK_MASTER``) may be ``local[N]``, ``spark://host:port`` (a standalone cluster),
``connect`` (this machine's shared Spark Connect server, started on first use: ``connect.py``),
``auto`` (that server if it runs, else ``local[2]``) or ``sc://host:port`` (a remote one).
Validation code works with both kinds of session: it uses no SparkContext, RDD or Python
broadcast, only DataFrames, ``mapInArrow``, ``default_parallelism`` and ``job_tag`` below.
pyspark is imported here, lazily, never at plugin import time.

Start-up is most of a small check's time, so the driver JVM is tuned as shared/SPARK-NOTES.md
measured: UI off, ParallelGC, a quiet log4j2 file (errors only), C1-only JIT for the plugin's
sessions (``jit.py``), and an application class-data archive (``driver_archive.py``: made
by the first session that finds none, published when ``stop_spark()`` lets that JVM exit).
``KREPLICA_SPARK_DRIVER_MEMORY`` (default 2g) sizes the local driver.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
import warnings
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ...cache import cache_dir
from ...errors import CheckError, InputError, KreplicaError
from . import connect, driver_archive, jit, reuse
from .sparkenv import driver_memory

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

ENV_MASTER = "KREPLICA_SPARK_MASTER"
DEFAULT_MASTER = "local[2]"
CONNECT = "connect"
AUTO = "auto"  # the machine's server if one runs (never started for it), else DEFAULT_MASTER
MASTER_FORMS = "local, local[N], local[*], spark://host:port, connect, auto or sc://host:port"

_lock = threading.Lock()
_session: SparkSession | None = None
_session_url: str | None = None  # the master (or sc:// URL) _session was made for
_archive_making: driver_archive.Making | None = None  # this driver JVM dumps the archive


def log4j_config() -> Path:
    """The quiet log4j2 file shipped with the package."""
    return Path(str(resources.files("pytest_kreplica") / "resources" / "log4j2-spark.properties"))


def resolve_master(master: str | None = None) -> str:
    """Argument > env ``KREPLICA_SPARK_MASTER`` > ``local[2]`` (compared with ``is not None``)."""
    url = master if master is not None else os.environ.get(ENV_MASTER) or DEFAULT_MASTER
    if not (url in (CONNECT, AUTO) or url.startswith(("local", "spark://", "sc://"))):
        source = "the Spark master option" if master is not None else f"env {ENV_MASTER}"
        raise InputError(f"{source}: {url!r} is not a Spark master (expected {MASTER_FORMS})")
    return url


def is_connect(url: str) -> bool:
    return url == CONNECT or url.startswith("sc://")


def local_cores(master: str) -> int:
    """N of ``local[N]`` (the machine's cores for ``local[*]``, 1 for ``local``)."""
    inner = master[len("local["):-1] if master.startswith("local[") else "1"
    return (os.cpu_count() or 2) if inner.startswith("*") else int(inner.split(",")[0])


def default_parallelism(spark: SparkSession) -> int:
    """The session's default parallelism in both kinds of session (a Connect client has no
    SparkContext: it asks the server's configuration, which ``connect_server`` sets)."""
    if not _connect_session(spark):
        return spark.sparkContext.defaultParallelism
    value = spark.conf.get("spark.default.parallelism", None)
    return int(value) if value else os.cpu_count() or 2


def _connect_session(spark: SparkSession) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextlib.contextmanager
def job_tag(spark: SparkSession, tag: str, description: str):
    """Run the block's Spark jobs under ``tag``: the job group of a classic session (a
    listener or its status tracker counts them), the operation tag of a Connect session."""
    if _connect_session(spark):
        spark.addTag(tag)
        try:
            yield
        finally:
            spark.removeTag(tag)
        return
    sc = spark.sparkContext
    sc.setJobGroup(tag, description)
    try:
        yield
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)


SMALL_INPUT_BYTES = 4 << 20  # a history this small is checked in one shuffle partition
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
# no broadcast joins either: each broadcast is a Spark job of its own, and a small check reads
# its tables in one partition (``checker.core``), where a sort-merge join of them needs no
# exchange (a version 2 check ran 25 jobs, now 8: docs/checker.md, "One partition")
SMALL_INPUT_CONF = {SHUFFLE_PARTITIONS: "1", "spark.sql.adaptive.enabled": "false",
                    "spark.sql.codegen.wholeStage": "false",
                    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                    "spark.sql.autoBroadcastJoinThreshold": "-1"}


@contextlib.contextmanager
def kept_frames():
    """A list for the block's ``localCheckpoint`` DataFrames, whose blocks are freed when it
    ends. A classic session's cleaner frees them only once the driver finds them unreachable,
    and measured it never did in a long-lived session: three per small transactional check,
    all 60 still held after 20 checks and two garbage collections. A Connect DataFrame
    releases its server-side copy itself when it is collected (``CachedRemoteRelation``)."""
    kept: list = []
    try:
        yield kept
    finally:
        for df in kept:
            jdf = getattr(df, "_jdf", None)  # classic only
            if jdf is None:
                continue
            plan = jdf.queryExecution().analyzed()
            if plan.getClass().getSimpleName() == "LogicalRDD":
                plan.rdd().unpersist(False)


def small_input(input_bytes: int) -> bool:
    """Whether a history of ``input_bytes`` is checked as a small one (SMALL_INPUT_BYTES)."""
    return input_bytes < SMALL_INPUT_BYTES


def one_off_jit(input_bytes: int | None) -> None:
    """Before a one-off command (``kreplica check`` / ``verify-logs``) starts a local driver:
    C1 alone for a small input (``None``: size unknown, the default stays). Its JVM does one
    small job and exits, so C2 compiles for nothing (``jit.py`` has the figures); the
    process's later sessions are its own, so no other caller is affected."""
    if input_bytes is not None and small_input(input_bytes):
        jit.prefer("quick")


@contextlib.contextmanager
def sized_shuffle(spark: SparkSession, input_bytes: int):
    """Run the block's queries in one shuffle partition, without adaptive execution, generated
    code or broadcast joins, when their input is small (a smoke case's history is about
    0.3 MB): each costs a small check CPU and gains it nothing (docs/checker.md, "A small
    history", has the figures). The session's own values are put back afterwards."""
    with conf_set(spark, SMALL_INPUT_CONF if small_input(input_bytes) else {}):
        yield


@contextlib.contextmanager
def conf_set(spark: SparkSession, settings: dict[str, str]):
    """The block runs with ``settings`` in the session's SQL conf; its own values (or their
    absence) are put back afterwards."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _base_options() -> str:
    return f"-XX:+UseParallelGC -Dlog4j2.configurationFile=file:{log4j_config()}"


def class_data_archive() -> Path | None:
    """Where the local driver's class-data archive for this Java and Spark lives (it may not
    exist yet); None when turned off or the master is not local."""
    if not resolve_master().startswith("local"):
        return None
    return driver_archive.archive_path(_base_options())


def _driver_java_options(local: bool) -> str:
    global _archive_making
    if not local:
        return _base_options()
    options, _archive_making = driver_archive.java_options(_base_options())
    return options


def spark_log() -> Path:
    """The file the driver JVM's stdout and stderr go to (Java warnings, Spark errors), so
    none of it reaches the user's terminal; error messages point here."""
    return cache_dir() / "spark" / "logs" / f"driver-{os.getpid()}.log"


def _prune_logs(directory: Path, keep_seconds: float = 86400.0) -> None:
    now = time.time()
    for old in directory.glob("driver-*.log"):
        with contextlib.suppress(OSError):
            if now - old.stat().st_mtime > keep_seconds:
                old.unlink()


def get_spark(master: str | None = None, extra_conf: dict[str, str] | None = None
              ) -> SparkSession:
    """Return the process-wide session, creating it on first use (a Connect session is
    checked against the machine's server on every call: it may have idled out)."""
    global _session, _session_url
    url = resolve_master(master)
    if url == AUTO and _session is not None:  # chosen once, kept for the process's life
        return _session
    if url in (CONNECT, AUTO):
        url = (connect.ensure_server() if url == CONNECT
               else connect.running_server() or DEFAULT_MASTER)
    with _lock:
        if _session is not None and _session_url == url:
            return _session
        if _session is not None:
            _stop_locked()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # pyspark vs pandas 3 notice
            if is_connect(url):
                from pyspark.sql.connect.session import SparkSession as ConnectSession

                # pyspark.sql.functions build Connect expressions only in this mode: one
                # kind of session per process
                os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
                _session = ConnectSession.builder.remote(url).create()
            else:
                _session = _classic(url, extra_conf or {})
        _session_url = url
        return _session


def _classic(url: str, extra_conf: dict[str, str]) -> SparkSession:
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    local = url.startswith("local")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = (
        SparkConf(loadDefaults=False)
        .setAppName("kreplica")
        .setMaster(url)
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        # 16, not 4: a large history's windows get one topic-partition per task, which
        # balances two cores and spills less (10M + 10M, one run each, twice: 95.9 / 85.4 s
        # with 4, 89.0 / 72.9 s with 16); AQE merges them back for a small history
        .set("spark.sql.shuffle.partitions", "16")
        .set("spark.sql.adaptive.enabled", "true")
        # PySpark's call-site capture costs four py4j round trips per DataFrame function; a
        # small check builds its plan from ~570 of them (measured: 2.0 s -> 1.5 s a check)
        .set("spark.python.sql.dataFrameDebugging.enabled", "false")
        .set("spark.driver.extraJavaOptions",
             f"{_driver_java_options(local)} {jit.java_option() if local else ''}".strip())
    )
    if local:
        conf.set("spark.driver.memory", driver_memory())
    conf.setAll(list(extra_conf.items()))
    gateway = None
    if SparkContext._gateway is None:
        log = spark_log()
        log.parent.mkdir(parents=True, exist_ok=True)
        _prune_logs(log.parent)
        with open(log, "ab") as sink:  # the child keeps its own descriptor
            gateway = launch_gateway(conf, popen_kwargs={"stdout": sink, "stderr": sink})
    context = SparkContext(conf=conf, gateway=gateway)
    context.setLogLevel("ERROR")
    return SparkSession(context)


def stop_spark() -> None:
    """Stop the shared session. When this process's JVM is making the class-data archive,
    let it exit by itself (that is when the archive is written) and publish the archive.
    A Connect session only lets the server go (it stops itself when unused)."""
    with _lock:
        _stop_locked()


def _stop_locked() -> None:
    global _session, _session_url, _archive_making
    if _session is None:
        return
    session, _session = _session, None
    url, _session_url = _session_url, None
    session.stop()
    reuse.forget()  # its Columns belong to the session that stopped
    if url is not None and is_connect(url):
        with contextlib.suppress(Exception):
            connect.release(connect.paths())
        return
    making, _archive_making = _archive_making, None
    if making is not None:
        driver_archive.finish(making)


@atexit.register
def _stop_at_exit() -> None:
    with contextlib.suppress(Exception):
        stop_spark()


def start_spark(spark_master: str | None = None):
    """The Spark session, or CheckError (one line naming the Spark log) when its JVM cannot
    start: a check that could not run is exit 2, never "invalid"."""
    try:
        return get_spark(spark_master)
    except KreplicaError:
        raise
    except Exception as exc:
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()),
                     type(exc).__name__)
        raise CheckError(f"Spark could not start ({type(exc).__name__}: {first[:300]}); "
                         f"check JAVA_HOME and Java 17+ (Spark log: {spark_log()})") from None
