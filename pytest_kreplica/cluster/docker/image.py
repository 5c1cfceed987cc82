"""Broker images for the docker backend, obtained without a registry when none answers.

Order of preference for Kafka version V:

1. ``$KREPLICA_DOCKER_IMAGE`` when set (any image with Kafka's jars in ``/opt/kafka/libs``
   and ``java`` on the PATH: the backend mounts its own start script and configuration);
2. ``kreplica/kafka:V`` when present (built here earlier);
3. the official ``apache/kafka:V``, present or pulled;
4. otherwise ``kreplica/kafka:V`` is built from the Maven Central jars the process backend
   resolves, on ``kreplica/jre:17`` (Debian's headless JRE), on ``kreplica/debian:bookworm``:
   ``debian:bookworm-slim`` when it can be pulled, else a ``debootstrap --variant=minbase``
   root file system loaded with ``docker import``.

Builds hold the machine-wide ``docker-images.lock`` (``once``: a waiter says who holds it),
so parallel pytest workers build each image once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ... import once
from ...cache import cache_dir
from ...errors import ClusterError, EnvironmentProblem
from ..kafka import distribution

if TYPE_CHECKING:  # the docker SDK is imported lazily: the plugin must stay light
    import docker

BASE_IMAGE = "kreplica/debian:bookworm"
JRE_IMAGE = "kreplica/jre:17"
KAFKA_REPOSITORY = "kreplica/kafka"
OFFICIAL_REPOSITORY = "apache/kafka"
PULLABLE_BASE = "debian:bookworm-slim"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
LABEL_VERSION = "org.kreplica.kafka-version"
LABEL_BASE_IMAGE = "org.kreplica.base-image"  # id of the image a layer image was built on

Progress = Callable[[str], None]


def _stderr_progress(line: str) -> None:

    once.say(f"kreplica image: {line}")  # stderr, or the pytest terminal under the plugin


def engine() -> docker.DockerClient:
    """A client for the engine at ``DOCKER_HOST`` (default socket), or one clear error."""
    import docker

    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException as exc:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise EnvironmentProblem(
            f"no Docker engine answers at {where} ({_first_line(exc)}); start one with "
            "scripts/ensure-docker (as root on Debian) or install Docker Engine") from exc
    return client


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _has_image(client: docker.DockerClient, ref: str) -> bool:
    import docker

    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True


def _try_pull(client: docker.DockerClient, ref: str, progress: Progress) -> bool:
    """Pull ``ref``; False (with one progress line) when no registry serves it."""
    import docker

    if os.environ.get("KREPLICA_DOCKER_PULL", "1") == "0":
        return False
    repository, _, tag = ref.rpartition(":")
    try:
        client.images.pull(repository, tag=tag)
    except docker.errors.APIError as exc:
        progress(f"cannot pull {ref}: {_first_line(exc)}")
        return False
    progress(f"pulled {ref}")
    return True


def _stream_build(client: docker.DockerClient, context: Path, dockerfile: str, tag: str,
                  buildargs: dict[str, str], progress: Progress) -> None:
    """Build with the low-level API so every step is shown as it happens."""
    last: list[str] = []
    for chunk in client.api.build(path=str(context), dockerfile=dockerfile, tag=tag,
                                  buildargs=buildargs, rm=True, forcerm=True, pull=False,
                                  decode=True):
        if "error" in chunk:
            tail = "".join(last[-15:])
            raise ClusterError(f"building {tag} failed: {chunk['error'].strip()}\n{tail}")
        text = chunk.get("stream", "")
        if text:
            last.append(text)
            if text.startswith("Step ") or text.startswith("Successfully"):
                progress(f"{tag}: {text.strip()}")


def _copy_resource(name: str, dest: Path) -> None:
    source = resources.files("pytest_kreplica").joinpath("resources", "docker", name)
    dest.write_bytes(source.read_bytes())


def build_base_image(client: docker.DockerClient, progress: Progress,
                     tag: str = BASE_IMAGE) -> None:
    """``kreplica/debian:bookworm``: pulled when a registry answers, else debootstrapped."""
    if _try_pull(client, PULLABLE_BASE, progress):
        client.images.get(PULLABLE_BASE).tag(*tag.split(":"))
        return
    debootstrap = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if os.path.exists("/usr/sbin/debootstrap") else None)
    if debootstrap is None or os.geteuid() != 0:
        raise EnvironmentProblem(
            f"no registry serves {PULLABLE_BASE} and building the base locally needs "
            "debootstrap run as root (apt-get install debootstrap, or scripts/ensure-docker); "
            "or set KREPLICA_DOCKER_IMAGE to an image with Kafka in /opt/kafka/libs")
    mirror = os.environ.get("KREPLICA_DEBIAN_MIRROR", DEFAULT_MIRROR)
    with tempfile.TemporaryDirectory(prefix="kreplica-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        progress(f"debootstrap --variant=minbase bookworm from {mirror} (about a minute)")
        started = time.monotonic()
        run = subprocess.run([debootstrap, "--variant=minbase", "bookworm", str(rootfs), mirror],
                             capture_output=True, text=True, timeout=900, check=False)
        if run.returncode != 0:
            tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-10:])
            raise EnvironmentProblem(
                f"debootstrap of bookworm from {mirror} failed (exit {run.returncode}); set "
                f"KREPLICA_DEBIAN_MIRROR to a reachable mirror:\n{tail}")
        progress(f"root file system ready in {time.monotonic() - started:.0f} s; importing")
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            for entry in sorted(os.listdir(rootfs)):
                tar.add(rootfs / entry, arcname=entry)
        repository, name = tag.split(":")
        client.api.import_image_from_file(str(archive), repository=repository, tag=name)
    progress(f"imported {tag}")


def build_jre_image(client: docker.DockerClient, progress: Progress, tag: str = JRE_IMAGE,
                    base: str = BASE_IMAGE) -> None:
    if not _has_image(client, base):
        build_base_image(client, progress, base)
    with tempfile.TemporaryDirectory(prefix="kreplica-jre-") as tmp:
        _copy_resource("jre.Dockerfile", Path(tmp) / "Dockerfile")
        _stream_build(client, Path(tmp), "Dockerfile", tag, {"BASE": base}, progress)


def build_kafka_image(client: docker.DockerClient, version: str, jars: Iterable[Path],
                      progress: Progress, tag: str | None = None, jre: str = JRE_IMAGE) -> str:
    """``kreplica/kafka:<version>`` from the given classpath (hard links where possible)."""
    if not _has_image(client, jre):
        build_jre_image(client, progress, jre)
    tag = tag or f"{KAFKA_REPOSITORY}:{version}"
    with tempfile.TemporaryDirectory(prefix="kreplica-kafka-", dir=cache_dir()) as tmp:
        context = Path(tmp)
        libs = context / "libs"
        libs.mkdir()
        count = 0
        for jar in jars:
            target = libs / jar.name
            try:
                os.link(jar, target)
            except OSError:
                shutil.copy2(jar, target)
            count += 1
        if count == 0:
            raise ClusterError(f"the classpath of Kafka {version} is empty; cannot build {tag}")
        _copy_resource("kafka.Dockerfile", context / "Dockerfile")
        progress(f"building {tag} from {count} jars")
        _stream_build(client, context, "Dockerfile", tag,
                      {"JRE": jre, "KAFKA_VERSION": version}, progress)
    return tag


def ensure_layer_image(client: docker.DockerClient, base: str, tag: str, jars: Iterable[Path],
                       libs_dir: str, progress: Progress = _stderr_progress, *,
                       labels: dict[str, str] | None = None) -> str:
    """``tag``: the image ``base`` plus a folder ``libs_dir`` holding ``jars`` (one small layer,
    so the broker image and its small classpath stay as they are). Reused while it was built
    on the current ``base`` (the ``org.kreplica.base-image`` label holds the base's id);
    rebuilt under the image lock otherwise."""
    base_id = client.images.get(base).id
    with once.held(cache_dir() / "docker-images.lock", f"building the Docker image {tag}"):
        if _has_image(client, tag) and \
                client.images.get(tag).labels.get(LABEL_BASE_IMAGE) == base_id:
            return tag
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kreplica-layer-", dir=cache_dir()) as tmp:
            context = Path(tmp)
            libs = context / "libs"
            libs.mkdir()
            for jar in jars:
                target = libs / jar.name
                if target.exists():
                    continue
                try:
                    os.link(jar, target)
                except OSError:
                    shutil.copy2(jar, target)
            if not any(libs.iterdir()):
                raise ClusterError(f"no jars to add to {base}; cannot build {tag}")
            label_lines = "".join(f'LABEL {k}="{v}"\n' for k, v in
                                  {**(labels or {}), LABEL_BASE_IMAGE: base_id}.items())
            (context / "Dockerfile").write_text(
                f"FROM {base}\nCOPY libs/ {libs_dir}/\n{label_lines}")
            progress(f"building {tag} on {base} from {len(list(libs.iterdir()))} jars")
            _stream_build(client, context, "Dockerfile", tag, {}, progress)
        progress(f"{tag} ready in {time.monotonic() - started:.0f} s")
        return tag


def kafka_classpath(version: str | None) -> tuple[str, list[Path]]:
    """The concrete Kafka version and its jars, from the process backend's distribution."""

    dist = distribution.resolve(version)
    return dist.version, [Path(jar) for jar in dist.classpath.split(os.pathsep) if jar]


def ensure_image(version: str | None, client: docker.DockerClient | None = None,
                 progress: Progress = _stderr_progress, *, rebuild: bool = False) -> str:
    """The image reference to run Kafka ``version`` from; builds what is missing."""
    override = os.environ.get("KREPLICA_DOCKER_IMAGE")
    if override and not rebuild:
        return override
    client = client or engine()
    concrete, jars = kafka_classpath(version)
    local = f"{KAFKA_REPOSITORY}:{concrete}"
    official = f"{OFFICIAL_REPOSITORY}:{concrete}"
    if not rebuild and _has_image(client, local):
        return local
    with once.held(cache_dir() / "docker-images.lock", f"the Kafka {concrete} Docker image"):
        if not rebuild:
            if _has_image(client, local):
                return local
            if _has_image(client, official) or _try_pull(client, official, progress):
                return official
        started = time.monotonic()
        once.say(f"kreplica: building the Docker image {local} (once)…")
        tag = build_kafka_image(client, concrete, jars, progress)
        once.say(f"kreplica: building the Docker image {local} (once)… "
                 f"{time.monotonic() - started:.0f} s")
        return tag


def run_image(args) -> int:
    """``kreplica image build [--version V]``: build (or reuse) the broker image, print its tag."""
    tag = ensure_image(args.kafka_version, engine())
    print(tag)
    return 0
