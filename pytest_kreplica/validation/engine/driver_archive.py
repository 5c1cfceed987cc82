"""The local Spark driver's application class-data archive (AppCDS): where it lives, who
makes it, and how it is published.

Start-up is most of a small check's time, and an archive of the classes a driver loads
takes it from 6–7 s to about 3.4 s (shared/SPARK-NOTES.md). It is made once, by the first
session that finds none: that JVM runs with ``-XX:ArchiveClassesAtExit`` and, when its
session stops, is asked to exit by itself (the JVM writes the archive only then; PySpark
would kill it first), and the dump is renamed into place. Later sessions map it with
``-XX:SharedArchiveFile``. It lives under ``$KREPLICA_CACHE/spark``, keyed by Java, Spark
and option versions; env ``KREPLICA_SPARK_CDS=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ... import once
from ...cache import cache_dir

ENV_CDS = "KREPLICA_SPARK_CDS"
# -Xlog:cds off: a stale or mismatched archive must not print to the user's terminal
QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off"


@dataclass
class Making:
    """An archive this process's driver JVM is dumping, and the lock held until it is
    published (``finish``)."""

    dump: Path
    archive: Path
    claim: contextlib.ExitStack


def java_version() -> str:
    java = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if os.environ.get("JAVA_HOME") else "java"
    try:
        out = subprocess.run(
            [str(java), "-XshowSettings:properties", "-version"],
            capture_output=True, text=True, timeout=30, check=False,
        ).stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""
    for line in out.splitlines():
        if "java.runtime.version" in line:
            return line.split("=", 1)[1].strip()
    return ""


def archive_path(base_options: str) -> Path | None:
    """The archive for this Java + Spark + option set, or None when turned off."""
    if os.environ.get(ENV_CDS, "1") == "0":
        return None
    import pyspark

    java = java_version()
    if not java:
        return None
    key = hashlib.sha256(f"{java}|{pyspark.__version__}|{base_options}".encode()).hexdigest()
    return cache_dir() / "spark" / f"spark-{pyspark.__version__}-java{java}-{key[:12]}.jsa"


def java_options(base_options: str) -> tuple[str, Making | None]:
    """The driver's Java options with the archive mapped, or with this JVM dumping it (and
    what ``finish`` then needs) when none exists and no other process is making it."""
    archive = archive_path(base_options)
    if archive is None:
        return base_options, None
    if archive.is_file():
        return f"{base_options} {QUIET} -XX:SharedArchiveFile={archive}", None
    archive.parent.mkdir(parents=True, exist_ok=True)
    claim = _claim(archive)
    if claim is None:  # another process is making it: run without, do not wait
        return base_options, None
    prune_dead_dumps(archive.parent)
    dump = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
    return (f"{base_options} {QUIET} -XX:ArchiveClassesAtExit={dump}",
            Making(dump, archive, claim))


def _claim(archive: Path) -> contextlib.ExitStack | None:
    """The archive's machine-wide lock (``once``), held until ``finish`` publishes it;
    None when another process holds it."""
    stack = contextlib.ExitStack()
    if stack.enter_context(once.held(archive.with_name(archive.name + ".lock"),
                                     "making Spark's class-data archive", blocking=False)):
        once.say("kreplica: making Spark's class-data archive (once, written when this "
                 "Spark session stops)")
        return stack
    stack.close()
    return None


def prune_dead_dumps(directory: Path) -> None:
    """Half-written archives of killed processes (``.<archive>.<pid>.tmp``, ~170 MB each)."""
    for dump in directory.glob(".spark-*.jsa.*.tmp"):
        try:
            pid = int(dump.name.rsplit(".", 2)[-2])
            os.kill(pid, 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                dump.unlink()
        except (ValueError, PermissionError):
            continue


def finish(making: Making) -> None:
    """Let the stopped session's driver JVM exit by itself, which writes the dump, publish
    it, and release the lock."""
    with making.claim:
        _exit_and_publish(making.dump, making.archive)


def _exit_and_publish(dump: Path, archive: Path) -> None:
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:
        return
    with contextlib.suppress(Exception):  # the connection drops as the JVM exits
        gateway.jvm.java.lang.System.exit(0)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    SparkContext._gateway = None
    SparkContext._jvm = None
    if proc.returncode == 0 and dump.is_file() and dump.stat().st_size > 0:
        os.replace(dump, archive)  # atomic: a concurrent maker's archive is equivalent
    else:
        dump.unlink(missing_ok=True)
