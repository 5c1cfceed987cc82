"""Java and Maven for the Kafka cache: find a JDK 17+, run Maven offline first (online when a
jar is missing) with the cache's own local repository, and turn its failures into one line
(an unreachable repository, a missing artifact).

Maven itself resolves (a generated ``pom.xml`` and ``copy-dependencies``), so the mirrors and
proxies in ``~/.m2/settings.xml`` apply and nothing here re-implements dependency mediation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from ... import once
from ...cache import cache_dir
from ...errors import EnvironmentProblem

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MAVEN_TIMEOUT_S = 600.0
ONLINE_ATTEMPTS = 3  # a download that failed once is tried twice more, 5 s and 10 s later


@lru_cache(maxsize=1)
def find_java() -> str:
    """The ``java`` executable (``$JAVA_HOME/bin/java`` first), checked to be 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not os.access(candidate, os.X_OK):
        raise EnvironmentProblem(
            "Java 17 or newer not found: install a JDK (e.g. apt-get install "
            "openjdk-17-jdk-headless) or set JAVA_HOME")
    release = Path(candidate).resolve().parent.parent / "release"  # saves a JVM start
    try:
        out = release.read_text().replace("JAVA_VERSION=", "version ")
    except OSError:
        out = ""
    try:
        if not re.search(r'version "\d', out):
            out = subprocess.run([candidate, "-version"], capture_output=True, text=True,
                                 timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentProblem(f"cannot run {candidate} -version ({exc}): fix or set JAVA_HOME") \
            from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    feature = int(match.group(1)) if match else 0
    if feature == 1 and match and match.group(2):  # "1.8.0" style
        feature = int(match.group(2))
    if feature < 17:
        raise EnvironmentProblem(
            f"{candidate} is Java {feature or 'of unknown version'}; Kafka needs Java 17 or newer: "
            "install one and set JAVA_HOME")
    return candidate


def find_maven() -> str:
    mvn = shutil.which("mvn")
    if not mvn:
        raise EnvironmentProblem(
            "Maven (mvn) not found and the Kafka jars are not cached yet: install Maven "
            "(e.g. apt-get install maven) or point KREPLICA_CACHE at a warm cache")
    return mvn


def run_maven(args: list[str], cwd: Path, offline: bool) -> None:
    """Run Maven with the cache's local repository. Online, a run that could not download is
    tried again (``ONLINE_ATTEMPTS`` in all, each attempt said): a repository that drops one
    request in a first run must not cost the user the whole run."""
    if offline:
        _run_maven_once(args, cwd, offline=True)
        return
    for attempt in Retrying(stop=stop_after_attempt(ONLINE_ATTEMPTS),
                            wait=wait_exponential(multiplier=5, max=20),
                            retry=retry_if_exception(_worth_retrying),
                            before_sleep=_say_retry, reraise=True):
        with attempt:
            _run_maven_once(args, cwd, offline=False)


def _worth_retrying(exc: BaseException) -> bool:
    return isinstance(exc, MavenFailed) and exc.unreachable()


def _say_retry(state) -> None:
    exc = state.outcome.exception()
    once.say(f"kreplica: Maven could not download (attempt {state.attempt_number} of "
             f"{ONLINE_ATTEMPTS}, trying again in {state.next_action.sleep:.0f} s): "
             f"{exc.summary()}")


def _run_maven_once(args: list[str], cwd: Path, offline: bool) -> None:
    cmd = [find_maven(), "-B", "-q", "-Dstyle.color=never",
           f"-Dmaven.repo.local={cache_dir() / 'm2'}"]
    if offline:
        cmd.append("-o")
    env = dict(os.environ)
    java = find_java()
    env.setdefault("JAVA_HOME", str(Path(java).resolve().parent.parent))
    try:
        proc = subprocess.run(cmd + args, cwd=cwd, capture_output=True, text=True,
                              timeout=MAVEN_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentProblem(
            f"Maven did not finish within {MAVEN_TIMEOUT_S:.0f} s in {cwd}: check the network "
            "or the mirror in ~/.m2/settings.xml") from exc
    if proc.returncode != 0:
        raise MavenFailed(proc.stdout + proc.stderr)


class MavenFailed(Exception):
    """Maven exited non-zero; ``output`` is what it printed."""

    def __init__(self, output: str):
        super().__init__(output)
        self.output = output

    def summary(self) -> str:
        for line in re.sub(r"\x1b\[[0-9;]*m", "", self.output).splitlines():
            if "[ERROR]" in line and line.strip() != "[ERROR]":
                return line.replace("[ERROR]", "").strip()[:300]
        return (self.output.strip().splitlines() or ["(no output)"])[-1][:300]

    def unreachable(self) -> bool:
        text = self.output
        return any(s in text for s in ("Could not transfer", "UnknownHost", "Connection refused",
                                       "Network is unreachable", "timed out", "offline mode",
                                       "Connect to ", "PKIX"))


def problem(exc: MavenFailed, what: str) -> EnvironmentProblem:
    if exc.unreachable():
        return EnvironmentProblem(
            f"cannot download {what} from Maven Central: check the network "
            f"or set a reachable mirror in ~/.m2/settings.xml; Maven said: {exc.summary()}")
    return EnvironmentProblem(f"Maven failed to resolve {what}: {exc.summary()}")


def pom(version: str, coordinates: list[str]) -> str:
    deps = []
    for coord in coordinates:
        group, artifact, ver = coord.split(":")
        deps.append(f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
                    f"<version>{ver}</version></dependency>")
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n"
            "  <modelVersion>4.0.0</modelVersion>\n"
            "  <groupId>kreplica.cache</groupId>\n"
            f"  <artifactId>kafka-{version.replace('.', '-')}</artifactId>\n"
            "  <version>1</version>\n  <packaging>pom</packaging>\n"
            "  <dependencies>\n" + "\n".join(deps) + "\n  </dependencies>\n</project>\n")


def copy_dependencies(folder: Path, version: str, coordinates: list[str]) -> list[Path]:
    """Run Maven's copy-dependencies into ``folder/libs`` (offline first, then online)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pom.xml").write_text(pom(version, coordinates))
    libs = folder / "libs"
    if libs.exists():
        shutil.rmtree(libs)
    args = [f"{DEPENDENCY_PLUGIN}:copy-dependencies", "-DoutputDirectory=libs",
            "-DincludeScope=runtime"]
    if not all_in_local_repository(coordinates):  # offline would fail: spare a JVM
        run_maven(args, cwd=folder, offline=False)
        return sorted(libs.glob("*.jar"))
    try:
        run_maven(args, cwd=folder, offline=True)
    except MavenFailed:
        run_maven(args, cwd=folder, offline=False)
    return sorted(libs.glob("*.jar"))


def plugin_in_local_repository() -> bool:
    """The dependency plugin's jar is in the local repository (a first run has to fetch it
    with its dependencies before anything else can be asked)."""
    _, artifact, version = DEPENDENCY_PLUGIN.split(":")
    return (_local_folder(DEPENDENCY_PLUGIN) / f"{artifact}-{version}.jar").is_file()


def _local_folder(coordinate: str) -> Path:
    """Where Maven's local repository keeps ``group:artifact:version``."""
    group, artifact, version = coordinate.split(":")
    return cache_dir() / "m2" / Path(*group.split(".")) / artifact / version


def all_in_local_repository(coordinates: list[str]) -> bool:
    """Every coordinate's folder is in Maven's local repository (its dependencies may still
    be missing: then the offline attempt fails and the online one runs)."""
    return all(_local_folder(coord).is_dir() for coord in coordinates)
