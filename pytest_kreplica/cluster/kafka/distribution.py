"""Kafka from Maven Central: pick a version, resolve its jars once into a cache, find Java.

Maven itself does the resolving (a generated ``pom.xml`` and ``copy-dependencies``), so
mirrors and proxies in ``~/.m2/settings.xml`` apply and nothing here re-implements
dependency mediation. Each component (broker, tools, mirror) gets its own ``libs`` folder so
a broker JVM keeps a small classpath. A folder is complete only when its marker file,
written last, exists; every Maven run holds the machine-wide ``resolve.lock`` (``once``), so
parallel pytest-xdist workers and concurrent sessions resolve a version once, and say so.

Cache layout (``$KREPLICA_CACHE`` or ``~/.cache/kreplica``)::

    m2/                              Maven's local repository (offline once warm)
    default-version.json             the last default pick, refreshed daily
    kafka/<version>/<component>/     pom.xml, libs/*.jar, .complete
    kafka/<version>/broker/classes.jsa   class-data archive (``cluster.prepared``)
"""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ... import once
from ...cache import cache_dir
from ...errors import ClusterError, EnvironmentProblem, InputError
from ..launcher import Launcher
from . import maven

GROUP = "org.apache.kafka"
# every artifact the suite needs; the default version is the newest that has all of them
REQUIRED_ARTIFACTS = ("kafka_2.13", "kafka-tools", "connect-mirror")
COMPONENTS = {
    "broker": ("kafka_2.13",),
    "tools": ("kafka-tools",),
    "mirror": ("connect-mirror",),
}
SLF4J_RELOAD4J = "org.slf4j:slf4j-reload4j:1.7.36"  # 3.x: log4j 1 API via reload4j
DEFAULT_PICK_MAX_AGE_S = 24 * 3600
MARKER = ".complete"


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def is_release(version: str) -> bool:
    return re.fullmatch(r"\d+\.\d+\.\d+", version) is not None


def major(version: str) -> int:
    return version_key(version)[0]


def versions_from_metadata(xml_text: str) -> list[str]:
    """Release versions listed in a ``maven-metadata.xml`` document, oldest first."""
    root = ET.fromstring(xml_text)
    found = {v.text.strip() for v in root.iter("version") if v.text}
    return sorted((v for v in found if is_release(v)), key=version_key)


def pick_default_version(available: dict[str, list[str]]) -> str:
    """Newest release that every required artifact publishes.

    ``available`` maps artifact id -> its versions. Raises ``EnvironmentProblem`` when no
    version is common to all (a broken mirror, most likely).
    """
    common = None
    for artifact in REQUIRED_ARTIFACTS:
        versions = set(available.get(artifact, ()))
        common = versions if common is None else common & versions
    if not common:
        raise EnvironmentProblem(
            f"no Kafka version is published for all of {', '.join(REQUIRED_ARTIFACTS)} "
            f"in the Maven repository; check the mirror in ~/.m2/settings.xml or pass --version")
    return max(common, key=version_key)


# -- version pick ----------------------------------------------------------------------------

def _artifact_versions(artifact: str, offline: bool) -> list[str]:
    """Versions of ``org.apache.kafka:<artifact>`` from the repository's metadata, fetched by
    Maven itself (the ordinary client, with whatever mirror or proxy its settings name)."""
    work = cache_dir() / "work"
    work.mkdir(parents=True, exist_ok=True)
    maven.run_maven([f"{maven.DEPENDENCY_PLUGIN}:get", f"-Dartifact={GROUP}:{artifact}:LATEST:pom",
                "-Dtransitive=false"], cwd=work, offline=offline)
    return _cached_artifact_versions(artifact)


def _cached_artifact_versions(artifact: str) -> list[str]:
    folder = cache_dir() / "m2" / Path(*GROUP.split(".")) / artifact
    versions: set[str] = set()
    for meta in folder.glob("maven-metadata-*.xml"):
        try:
            versions.update(versions_from_metadata(meta.read_text()))
        except ET.ParseError:
            continue
    return sorted(versions, key=version_key)


def available_versions(refresh: bool = True) -> dict[str, list[str]]:
    """artifact -> versions, asking the repository (``refresh``) or Maven's cached metadata."""
    from concurrent.futures import ThreadPoolExecutor

    if not refresh:
        return {a: _cached_artifact_versions(a) for a in REQUIRED_ARTIFACTS}
    found: dict[str, list[str]] = {}
    rest = list(REQUIRED_ARTIFACTS)
    if not maven.plugin_in_local_repository():
        # Maven 3.8 does not lock its local repository: three runs fetching the plugin into an
        # empty one at once can read each other's half-written files, so the first goes alone
        first = rest.pop(0)
        found[first] = _artifact_versions(first, False)
    with ThreadPoolExecutor(len(rest)) as pool:
        futures = {a: pool.submit(_artifact_versions, a, False) for a in rest}
        found.update({a: f.result() for a, f in futures.items()})
    return found


def default_version(refresh: bool = False) -> str:
    """The newest version every required artifact has; the pick is cached for a day, and
    the cached pick is used when the repository cannot be reached."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    pick_file = root / "default-version.json"
    cached = None
    if pick_file.exists():
        try:
            cached = json.loads(pick_file.read_text())
        except (OSError, ValueError):
            cached = None
    fresh = cached and time.time() - cached.get("time", 0) < DEFAULT_PICK_MAX_AGE_S
    if cached and fresh and not refresh:
        return cached["version"]
    with _resolve_lock():
        if not refresh and _read_pick(pick_file, fresh_only=True):  # picked while we waited
            return _read_pick(pick_file, fresh_only=True)
        once.say("kreplica: asking Maven Central for the newest Kafka version…")
        started = time.monotonic()
        try:
            version = pick_default_version(available_versions(refresh=True))
            once.say(f"kreplica: asking Maven Central for the newest Kafka version… "
                     f"{time.monotonic() - started:.0f} s ({version})")
        except maven.MavenFailed as exc:
            if cached:
                return cached["version"]
            complete = _complete_versions()
            if complete:
                return complete[-1]
            raise maven.problem(exc, "the list of Kafka versions") from None
        tmp = pick_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"version": version, "time": time.time()}))
        tmp.replace(pick_file)
        return version


def _read_pick(pick_file: Path, fresh_only: bool) -> str | None:
    try:
        cached = json.loads(pick_file.read_text())
    except (OSError, ValueError):
        return None
    if fresh_only and time.time() - cached.get("time", 0) >= DEFAULT_PICK_MAX_AGE_S:
        return None
    return cached.get("version")


def _complete_versions() -> list[str]:
    kafka = cache_dir() / "kafka"
    found = [p.parent.name for p in kafka.glob(f"*/broker/{MARKER}")] if kafka.exists() else []
    return sorted((v for v in found if is_release(v)), key=version_key)


# -- resolution ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Distribution:
    """A resolved Kafka version: what a JVM needs to run its classes."""

    version: str
    java: str
    home: Path  # kafka/<version>
    classpaths: dict[str, str] = field(default_factory=dict)  # component -> explicit jar list

    @property
    def classpath(self) -> str:
        """The broker classpath (kafka_2.13 and its logging binding)."""
        return self.classpaths["broker"]

    @property
    def uses_log4j2(self) -> bool:
        return major(self.version) >= 4

    @property
    def archive_path(self) -> Path:
        """Where the broker class-data archive lives (it may not exist yet)."""
        return self.home / "broker" / "classes.jsa"

    @property
    def class_data_archive(self) -> Path | None:
        return self.archive_path if self.archive_path.exists() else None

    def logging_flags(self, config: Path | None = None) -> list[str]:
        """JVM flags that point this version's logging backend at ``config``."""
        if config is None:
            name = "log4j2-broker.properties" if self.uses_log4j2 else "log4j-broker.properties"
            config = resource_path(name)
        if self.uses_log4j2:
            return [f"-Dlog4j2.configurationFile={config}"]
        return [f"-Dlog4j.configuration=file:{config}"]

    def jvm_flags(self, heap_mb: int = 256, archive: bool = True) -> list[str]:
        """Small-heap, fast-start flags (KAFKA-NOTES) plus logging, and the archive if built."""
        flags = [f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m", "-XX:+UseSerialGC",
                 "-XX:TieredStopAtLevel=1", "-XX:+ExitOnOutOfMemoryError",
                 "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true",
                 "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
        if archive and self.class_data_archive is not None:
            flags.append(f"-XX:SharedArchiveFile={self.class_data_archive}")
        return flags + self.logging_flags()

    def command(self, main_class: str, *args: str, component: str = "broker",
                extra_flags: list[str] | tuple[str, ...] = (), heap_mb: int = 256,
                archive: bool = True) -> list[str]:
        """A full ``java`` command line running ``main_class`` on a component's classpath."""
        use_archive = archive and component == "broker"
        return [self.java, *self.jvm_flags(heap_mb, use_archive), *extra_flags,
                "-cp", self.classpaths[component], main_class, *args]


def resource_path(name: str) -> Path:
    return Path(str(resources.files("pytest_kreplica") / "resources" / name))


def _resolve_lock():
    """Machine-wide lock around every Maven run on the cache (one resolver at a time)."""
    return once.held(cache_dir() / "resolve.lock", "resolving Kafka jars with Maven")


def _log4j_version(jars: list[Path]) -> str | None:
    for jar in jars:
        match = re.fullmatch(r"log4j-api-(\d+\.\d+\.\d+)\.jar", jar.name)
        if match:
            return match.group(1)
    return None


def _component_coordinates(version: str, component: str, jars: list[Path] | None) -> list[str]:
    coords = [f"{GROUP}:{a}:{version}" for a in COMPONENTS[component]]
    if major(version) < 4:
        return coords + [SLF4J_RELOAD4J]
    if jars is not None:
        log4j = _log4j_version(jars)
        if log4j:  # kafka pins slf4j-api 1.7: the binding for it is log4j-slf4j-impl
            return coords + [f"org.apache.logging.log4j:log4j-slf4j-impl:{log4j}"]
    return coords


def _resolve_component(version: str, component: str) -> None:
    folder = cache_dir() / "kafka" / version / component
    marker = folder / MARKER
    if marker.exists():
        return
    marker.unlink(missing_ok=True)
    coords = _component_coordinates(version, component, None)
    jars = maven.copy_dependencies(folder, version, coords)
    if major(version) >= 4:  # the binding's version is whatever log4j kafka brings
        with_binding = _component_coordinates(version, component, jars)
        if with_binding != coords:
            jars = maven.copy_dependencies(folder, version, with_binding)
    if not jars:
        raise EnvironmentProblem(f"Maven copied no jars for Kafka {version} {component} "
                                 f"into {folder / 'libs'}")
    marker.write_text(json.dumps({"jars": [j.name for j in jars], "time": time.time()}))


def _classpath(version: str, component: str) -> str:
    folder = cache_dir() / "kafka" / version / component
    names = json.loads((folder / MARKER).read_text())["jars"]
    return ":".join(str(folder / "libs" / n) for n in sorted(names))


def _check_version(version: str) -> None:
    if not is_release(version):
        raise InputError(f"Kafka version {version!r} is not a release number like 4.3.1 or 3.9.2")
    known = _cached_artifact_versions("kafka_2.13")
    if not known:
        try:
            known = available_versions(refresh=True)["kafka_2.13"]
        except maven.MavenFailed as exc:
            if exc.unreachable():
                raise maven.problem(exc, f"Kafka {version}") from None
            return  # let copy-dependencies decide
    if version not in known:
        newest = [v for v in known if major(v) >= 3][-8:]
        raise InputError(f"Kafka version {version} is not on Maven Central for "
                         f"{GROUP}:kafka_2.13; recent versions: {', '.join(newest)}")


def resolve(version: str | None = None, components: tuple[str, ...] | list[str] = ("broker",)
            ) -> Distribution:
    """Resolve ``version`` (default: the newest complete one) for ``components`` into the
    cache, once, and describe how to run it."""
    for component in components:
        if component not in COMPONENTS:
            raise InputError(f"unknown Kafka component {component!r}; allowed: "
                             f"{', '.join(COMPONENTS)}")
    java = maven.find_java()
    if version is None:
        version = default_version()
    home = cache_dir() / "kafka" / version
    missing = [c for c in components if not (home / c / MARKER).exists()]
    if missing and (not is_release(version) or _cached_artifact_versions("kafka_2.13")):
        _check_version(version)  # bad input is one line, before any progress line
    if missing:
        def done() -> bool:
            return all((home / c / MARKER).exists() for c in missing)

        def build() -> None:
            still = [c for c in missing if not (home / c / MARKER).exists()]
            _check_version(version)
            for component in still:
                try:
                    _resolve_component(version, component)
                except maven.MavenFailed as exc:
                    if "Could not find artifact" in exc.output and not exc.unreachable():
                        raise InputError(f"Kafka {version} has no {component} artifacts on Maven "
                                         f"Central: {exc.summary()}") from None
                    raise maven.problem(exc, f"Kafka {version} ({component})") from None

        which = "" if missing == ["broker"] else f" ({', '.join(missing)})"
        once.prepare(f"resolving Kafka {version}{which} from Maven Central",
                     cache_dir() / "resolve.lock", done, build,
                     detail=lambda: f"{sum(_jar_count(version, c) for c in missing)} jars")
    classpaths = {c: _classpath(version, c) for c in components}
    return Distribution(version=version, java=java, home=home, classpaths=classpaths)


def _jar_count(version: str, component: str) -> int:
    marker = cache_dir() / "kafka" / version / component / MARKER
    try:
        return len(json.loads(marker.read_text())["jars"])
    except (OSError, ValueError, KeyError):
        return 0


def run_tool(version: str | None, main_class: str, *args: str, what: str,
             timeout: float) -> str:
    """Run one of Kafka's command-line tools (kafka-tools of ``version``, default heap) to
    its end; its stdout, or ClusterError naming ``what`` with the last lines it printed."""
    dist = resolve(version, ("broker", "tools"))
    cmd = [c for c in dist.command(main_class, *args, component="tools")
           if not c.startswith("-Xm")]
    # forked by the launcher: the tool's JVM dies with this process, even a SIGKILLed one
    done = Launcher.get().run(cmd, timeout=timeout, what=what)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ClusterError(f"{what} exited {done.returncode} (expected 0): "
                           f"{' | '.join(tail)}")
    return done.stdout
