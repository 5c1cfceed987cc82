"""Our own Java client programs (``resources/java/*.java``), compiled once per Kafka version
into the cache with ``javac`` against that version's ``kafka-tools`` classpath (which holds
``kafka-clients``), and the command line that runs one.

A program is compiled under a machine-wide lock with one progress line (``once.prepare``):
``kreplica: compiling KreplicaTxnProducer.java for Kafka 4.3.1… 3 s``. Its cache folder is
named by the Kafka version and a digest of the source, so an edited source compiles anew.
A missing ``javac`` or a failed compile is a ``ClusterError`` (a harness error of the case)
of one line: what is missing and how to get it, or javac's first error.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from .. import once
from ..cache import cache_dir
from ..cluster.kafka import distribution, maven
from ..cluster.kafka.distribution import Distribution
from ..cluster.launcher import Launcher
from ..errors import ClusterError, EnvironmentProblem

__all__ = ["COMPILE_TIMEOUT_S", "PROGRAMS_PART", "compile_program", "compile_programs",
           "find_javac", "program_command"]

COMPILE_TIMEOUT_S = 300.0
MARKER = "compiled"
PROGRAMS_PART = "java-programs"  # the first run's need: these programs compiled


def find_javac(java: str) -> str:
    """The ``javac`` of the JDK whose ``java`` runs the clients (beside it), else
    ``$JAVA_HOME/bin/javac``, else the one on the PATH."""
    beside = Path(java).resolve().parent / "javac"
    home = os.environ.get("JAVA_HOME")
    for candidate in (str(beside), str(Path(home) / "bin" / "javac") if home else None,
                      shutil.which("javac")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise ClusterError(f"javac not found beside {java}, in JAVA_HOME or on the PATH: the Java "
                       "txn client compiles a program of its own; install a JDK (e.g. apt-get "
                       "install openjdk-17-jdk-headless) or set JAVA_HOME to one")


def compile_program(dist: Distribution, source: Path) -> Path:
    """The folder of ``source``'s classes for ``dist``'s Kafka version, compiled once."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    out = cache_dir() / "java-programs" / f"{dist.version}-{source.stem}-{digest}"

    def build() -> None:
        javac = find_javac(dist.java)
        out.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
        cmd = [javac, "-nowarn", "--release", "17", "-encoding", "UTF-8", "-d", str(work),
               "-cp", dist.classpaths["tools"], str(source)]
        try:
            done = Launcher.get().run(cmd, timeout=COMPILE_TIMEOUT_S, merge_output=True,
                                      what=f"javac compiling {source.name}")
        except ClusterError:
            shutil.rmtree(work, ignore_errors=True)
            raise
        output = done.stdout
        if done.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            first = next((line for line in output.splitlines() if "error" in line),
                         output.strip().splitlines()[0] if output.strip() else "no output")
            raise ClusterError(f"javac could not compile {source.name} against Kafka "
                               f"{dist.version}'s kafka-clients (exit {done.returncode}): "
                               f"{first.strip()}")
        (work / MARKER).write_text(" ".join(cmd[:1] + cmd[-1:]) + "\n")
        shutil.rmtree(out, ignore_errors=True)
        work.rename(out)

    once.prepare(f"compiling {source.name} for Kafka {dist.version}",
                 out.parent / f"{out.name}.lock", lambda: (out / MARKER).exists(), build)
    return out


def compile_programs(dist: Distribution) -> list[Path]:
    """Every program of ``resources/java`` compiled for ``dist`` (the first run's step)."""
    folder = distribution.resource_path("java")
    return [compile_program(dist, source) for source in sorted(folder.glob("*.java"))]


def program_command(version: str | None, name: str, args: list[str],
                    extra_flags: list[str]) -> tuple[list[str], Distribution]:
    """The ``java`` command running program ``name`` (``resources/java/<name>.java``) of
    Kafka ``version`` (None: the default), compiled first if needed, and its distribution."""
    try:  # a missing Java is one line, before any resolve
        maven.find_java()
    except EnvironmentProblem as exc:
        raise ClusterError(str(exc)) from None
    dist = distribution.resolve(version, ("broker", "tools"))
    classes = compile_program(dist, distribution.resource_path(f"java/{name}.java"))
    runnable = dataclasses.replace(
        dist, classpaths={**dist.classpaths,
                          name: f"{classes}:{dist.classpaths['tools']}"})
    cmd = [c for c in runnable.command(name, *args, component=name, extra_flags=extra_flags)
           if not c.startswith("-Xm")]
    return cmd, dist
