"""A first run on an empty cache: two processes prepare the same Kafka version at once (jars,
format template, class-data archive, each under its own lock) and both finish and agree.

Maven's local repository is seeded from the current cache when it has one (a copy: Maven
writes into it), so the test exercises the locks and builds without downloading 80 MB again;
with no warm repository it downloads from Maven Central."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_kreplica.cluster.kafka import distribution

ROOT = Path(__file__).resolve().parents[2]

PREPARE = textwrap.dedent("""
    import json, sys
    from pytest_kreplica.cluster.kafka import distribution
    from pytest_kreplica.cluster.kafka import prepared
    from pytest_kreplica.cluster.process.cluster import ProcessCluster
    dist = distribution.resolve(sys.argv[1])
    has_archive = prepared.prepare_broker(dist, ProcessCluster)
    print(json.dumps({"classpath": dist.classpath, "archive": has_archive,
                      "template": str(prepared.template_path(dist))}))
""")


def test_two_processes_prepare_an_empty_cache_once(tmp_path):
    version = distribution.default_version()
    cache = tmp_path / "cache"
    cache.mkdir()
    warm_m2 = distribution.cache_dir() / "m2"
    if warm_m2.is_dir():
        shutil.copytree(warm_m2, cache / "m2")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KREPLICA_CACHE": str(cache)}
    procs = [subprocess.Popen([sys.executable, "-c", PREPARE, version], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    docs = [json.loads(out.strip().splitlines()[-1]) for out, _err in outs]
    assert docs[0] == docs[1], docs
    assert docs[0]["archive"] is True, outs
    home = cache / "kafka" / version / "broker"
    assert (home / "classes.jsa").stat().st_size > 0
    assert not (home / "classes.failed").exists()
    assert Path(docs[0]["template"]).exists()
    err = "".join(e for _o, e in outs)
    for step in (f"resolving Kafka {version} from Maven Central",
                 "building the broker class-data archive (once)",
                 f"making the Kafka {version} storage format template (once)"):
        finished = [line for line in err.splitlines() if line.startswith(f"kreplica: {step}… ")]
        assert len(finished) == 1, (step, err)  # done once, by one of the two


def test_spark_archive_made_alongside_on_an_empty_cache(tmp_path, monkeypatch):
    from pytest_kreplica import once
    from pytest_kreplica.plugin import firstrun
    from pytest_kreplica.validation.engine import spark

    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KREPLICA_SPARK_MASTER", raising=False)
    monkeypatch.delenv("KREPLICA_SPARK_CDS", raising=False)
    lines: list[str] = []
    previous = once.set_say(lines.append)
    try:
        job = firstrun._start_spark_archive()
        assert job is not None
        firstrun._finish_spark_archive(*job)
        assert firstrun._start_spark_archive() is None  # made: nothing to do next time
    finally:
        once.set_say(previous)
    archive = spark.class_data_archive()
    assert archive is not None and archive.stat().st_size > 0
    assert lines[0] == f"kreplica: {firstrun.SPARK_STEP}…"
    assert lines[1].startswith(f"kreplica: {firstrun.SPARK_STEP}… ") and lines[1].endswith(" s")


DRIVER_CLASS = "org.apache.spark.deploy.SparkSubmit"

KILLED_WHILE_ARCHIVING = """
import os, time
os.environ["KREPLICA_CACHE"] = {cache!r}
os.environ["TMPDIR"] = {tmp!r}  # the check's work directory, removed with the test's
for name in ("KREPLICA_SPARK_MASTER", "KREPLICA_SPARK_CDS"):
    os.environ.pop(name, None)
from pytest_kreplica.plugin import firstrun
proc, _, _ = firstrun._start_spark_archive()
print(proc.pid, flush=True)
time.sleep(300)
"""


def test_a_killed_run_takes_its_archive_check_and_its_jvm_with_it(tmp_path):
    """The archive's ``kreplica check`` runs for a minute or more; a run SIGKILLed meanwhile
    takes it down at once, and its Spark JVM with it (before, the check ran on, orphaned)."""
    import psutil

    from pytest_kreplica.waits import wait_until
    from tests.killed import child_session, gone

    def jvm_of(pid: int) -> int | None:
        """The driver JVM, not the short-lived ``launcher.Main`` java that spark-class runs
        first to build its command line (the first version of this test caught that one,
        which had exited by the time the test looked again)."""
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(pid).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    if child.name() == "java" and DRIVER_CLASS in child.cmdline():
                        return child.pid
        return None

    found: list[int] = []

    def driver_started() -> bool:
        jvm = jvm_of(pid)
        if jvm is not None:
            found.append(jvm)
        return jvm is not None

    script = KILLED_WHILE_ARCHIVING.format(cache=str(tmp_path / "cache"), tmp=str(tmp_path))
    with child_session(script) as (pid, sigkill):
        wait_until(driver_started, 120, "the archive check's Spark driver JVM to start",
                   lambda: f"{gone(pid) or f'pid {pid} gone'}, no {DRIVER_CLASS} java child")
        jvm = found[0]
        assert gone(jvm) is not None, f"driver JVM {jvm} ended before the kill: nothing to prove"
        sigkill(15, "the archive's kreplica check")
        wait_until(lambda: gone(jvm) is None, 15, "its Spark JVM gone after the SIGKILL",
                   lambda: gone(jvm) or "")
