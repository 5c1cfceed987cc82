"""Prepare what the selected cases need once, before any case runs, where the user sees it.

The jars of every Kafka version the collected cluster-using cases ask for, the broker's
format template and class-data archive (process backend) or its image (docker backend) are
made by the controlling process: without xdist right after collection; under ``-n N`` the
first worker writes what its collected cases need to a file the controller named, and the
controller prepares while xdist waits to schedule (``pytest_xdist_node_collection_finished``
runs before scheduling). Each step prints one terminal line with its duration (``once``).
Only tests that use ``kreplica_pool`` (directly or through ``kreplica_run``) count, so a test
that only looks at matrix cases prepares nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from .. import once
from ..cluster.docker import image as docker_image
from ..cluster.facilities import FACILITIES
from ..cluster.kafka import distribution, prepared
from ..cluster.launcher import Launcher
from ..errors import KreplicaError
from ..faults.registry import facilities_needed
from ..matrix import Case
from ..validation.engine import spark
from ..workloads.java_build import PROGRAMS_PART, compile_programs

NEEDS_KEY = "kreplica_needs_file"

Need = tuple[str | None, str, tuple[str, ...]]  # Kafka version (None: default), backend, parts


def case_needs(case: Case) -> set[Need]:
    """What one case's clusters need prepared."""
    parts = ["broker"]
    if case.scenario == "mirror":
        parts.append("mirror")
    if case.scenario == "upgrade" or case.compat == "upgrade":
        parts.append("tools")
    if getattr(case, "client", None) == "java" and getattr(case, "workload", "plain") != "plain":
        parts.extend(("tools", PROGRAMS_PART))  # our own Java programs, compiled once
    # the node facilities its failures need (a fault proxy, ...), not Kafka components
    parts.extend(sorted(facilities_needed(getattr(case, "failure", None))))
    versions = {case.kafka_version, case.target_kafka_version or case.kafka_version}
    return {(v, case.backend, tuple(parts)) for v in versions}


def items_needs(items: Iterable[pytest.Item]) -> set[Need]:
    needs: set[Need] = set()
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "kreplica_pool" not in getattr(item, "fixturenames", ()):
            continue
        case = callspec.params.get("kreplica_case")
        if isinstance(case, Case):  # not the placeholder of an empty parametrization
            needs |= case_needs(case)
    return needs


def prepare(needs: Iterable[Need]) -> float:
    """Prepare every need (each step once per machine); returns the seconds it took. A
    failure is one line: the cases that need that version report it themselves."""

    started = time.monotonic()
    spark_job = _start_spark_archive()
    merged: dict[tuple[str | None, str], set[str]] = {}
    for version, backend, parts in needs:
        merged.setdefault((version, backend), set()).update(parts)
    try:
        for (version, backend), parts in sorted(merged.items(), key=lambda kv: str(kv[0])):
            _prepare_facilities(parts)
            try:
                dist = distribution.resolve(version, tuple(sorted(
                    parts - set(FACILITIES) - {PROGRAMS_PART})))
                if PROGRAMS_PART in parts:
                    compile_programs(dist)
                if backend == "docker":
                    docker_image.ensure_image(dist.version)
                else:
                    from ..cluster.process.cluster import (
                        ProcessCluster,  # psutil: the plugin stays light
                    )

                    prepared.prepare_broker(dist, ProcessCluster)
            except Exception as exc:  # the cases that need it fail with the full story
                text = str(exc) if isinstance(exc, KreplicaError) else repr(exc)
                once.say(f"kreplica: preparing Kafka {version or '(default)'} for the "
                         f"{backend} backend failed: {text}")
    finally:
        if spark_job is not None:
            _finish_spark_archive(*spark_job)
    return time.monotonic() - started


def _prepare_facilities(parts: set[str]) -> None:
    """The one-time preparation of every node facility named in ``parts``."""
    for facility in FACILITIES.values():
        if facility.name not in parts or facility.prepare is None:
            continue
        try:
            facility.prepare()
        except Exception as exc:  # the cases that need it report it themselves
            once.say(f"kreplica: preparing the {facility.name} facility ({facility.doc}) "
                     f"failed: {exc}")


SPARK_ARCHIVE_TIMEOUT_S = 600.0
SPARK_STEP = "making Spark's class-data archive (once, alongside)"


def _start_spark_archive() -> tuple[subprocess.Popen, float, Path] | None:
    """When the Spark driver's class-data archive is missing, make it alongside the broker
    steps: ``kreplica check`` of a tiny history in a subprocess, whose session dumps the
    archive as it stops. Made inside a case instead, the dump (about 50 s on the loaded
    machine) delayed the end of a first run and every other first session ran without it."""
    archive = spark.class_data_archive()
    if archive is None or archive.exists():
        return None
    work = Path(tempfile.mkdtemp(prefix="kreplica-spark-warmup-"))
    _tiny_history(work)
    once.say(f"kreplica: {SPARK_STEP}…")
    with open(work / "check.log", "wb") as log:  # SIGKILLed when this run dies, even killed
        proc = Launcher.get().popen([sys.executable, "-m", "pytest_kreplica.cli", "check",
                                     str(work)], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
    return proc, time.monotonic(), work


def _finish_spark_archive(proc: subprocess.Popen, started: float, work: Path) -> None:
    try:
        code = proc.wait(max(1.0, SPARK_ARCHIVE_TIMEOUT_S - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait(30)
    took = time.monotonic() - started
    archive = spark.class_data_archive()
    if code == 0 and archive is not None and archive.exists():
        once.say(f"kreplica: {SPARK_STEP}… {took:.0f} s")
        shutil.rmtree(work, ignore_errors=True)
    else:  # a check that passed without dumping: another run held the archive's lock
        why = f"exit {code}" if code else "the check passed but left no archive"
        once.say(f"kreplica: {SPARK_STEP} failed after {took:.0f} s ({why}, log "
                 f"{work / 'check.log'}); the first Spark session of the run makes it")


def _tiny_history(run_dir: Path) -> None:
    """A clean 20-message history in the run-directory format (HISTORY.md)."""
    sends, polls = [], []
    for i in range(20):
        sends.append({"process": 0, "topic": "t", "partition": 0, "id": f"p0-{i}",
                      "offset": i, "status": "ok", "invoke_ns": 1000 + 20 * i,
                      "complete_ns": 1010 + 20 * i, "error": None})
        polls.append({"process": 1, "poll": i // 5, "topic": "t", "partition": 0,
                      "offset": i, "id": f"p0-{i}", "time_ns": 2000 + 10 * i,
                      "index": i % 5})
    (run_dir / "sends.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sends))
    (run_dir / "polls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in polls))
    (run_dir / "events.jsonl").write_text("")
    (run_dir / "run.json").write_text(json.dumps({"case": "spark warm-up",
                                                  "semantics": "at-least-once"}))


class FirstRunPlugin:
    """The hooks above; registered by the plugin on the controller and on workers."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.worker = hasattr(config, "workerinput")
        self.dir: Path | None = None
        self.done = False
        self.previous_say: once.Say | None = None

    def _terminal_say(self) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return

        def say(line: str) -> None:
            reporter.ensure_newline()
            reporter.write_line(line)
            reporter.flush()

        self.previous_say = once.set_say(say)

    def _run(self, needs: set[Need]) -> None:
        if self.done or not needs or self.config.option.collectonly:
            return
        self.done = True
        self._terminal_say()
        prepare(needs)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        if self.dir is None:
            self.dir = Path(tempfile.mkdtemp(prefix="kreplica-needs-"))
        node.workerinput[NEEDS_KEY] = str(self.dir / f"{node.gateway.id}.json")

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        needs = items_needs(session.items)
        if not self.worker:
            self._run(needs)
            return
        target = self.config.workerinput.get(NEEDS_KEY)
        if target:
            tmp = Path(target + ".tmp")
            rows = [[v, b, list(p)] for v, b, p in needs]
            tmp.write_text(json.dumps(sorted(rows, key=json.dumps)))  # None sorts beside str
            tmp.replace(target)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.done or self.dir is None:
            return
        path = self.dir / f"{node.gateway.id}.json"
        try:
            rows = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        self._run({(v, b, tuple(p)) for v, b, p in rows})

    def pytest_unconfigure(self) -> None:
        if self.previous_say is not None:
            once.set_say(self.previous_say)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
