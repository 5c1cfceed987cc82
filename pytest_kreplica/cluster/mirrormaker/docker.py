"""MirrorMaker 2 as a container between two docker-backend clusters (C.6 / C.7a on docker).

``DockerMirrorMaker`` has ``process.MirrorMaker``'s interface and readiness rule (every
mirrored topic exists on the target and holds a record, observed from the host through the
clusters' published listeners, never slept), but the dedicated MirrorMaker 2 JVM runs as
PID 1 of a container:

- image ``kreplica/kafka-mirror:V``: the broker image of the docker backend for Kafka V
  plus one layer with the ``connect-mirror`` classpath in ``/opt/kafka/mirror-libs`` (the
  broker image holds only the broker's jars, and brokers keep their small classpath);
- attached to **both** clusters' networks and bootstrapping on the brokers' in-network
  listeners; no published ports;
- labelled with the owning session like the clusters' containers, so a later start's
  sweep removes it when that session died, and its JVM carries the reaper's owner marker;
- its ``mm2.properties``, start script, log config and ``mirror-maker.log`` live in the run
  directory, bind-mounted at ``/kreplica``.

Faults: clean = ``docker stop`` (SIGTERM, SIGKILL at the deadline), hard = ``docker kill``
(SIGKILL), soft = ``docker pause`` / ``unpause`` (the cgroup freezer); ``start`` starts the
same container again on the same configuration and state topics.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import InputError, NodeError
from ...waits import last_error_line, wait_until
from .. import reaper
from ..base import NodeState
from ..docker.cluster import LABEL_CLUSTER, LABEL_NODE, LABEL_OWNER, MOUNT, DockerCluster
from ..docker.image import LABEL_VERSION, engine, ensure_image, ensure_layer_image
from ..kafka import distribution
from .config import NODE_NAME, mirror_classpath, mm2_properties, render_properties
from .process import KILL_WAIT_S, STOP_TIMEOUT_S, MirrorMaker

if TYPE_CHECKING:
    import docker

    from ..base import Cluster
    from ..kafka.distribution import Distribution

log = logging.getLogger(__name__)

MIRROR_REPOSITORY = "kreplica/kafka-mirror"
MIRROR_LIBS = "/opt/kafka/mirror-libs"
SCRIPT = "mirror.sh"
CONTAINER_REST_PORT = 8083  # exactly-once's internal REST server, inside the container only
_STATES = {"running": NodeState.RUNNING, "paused": NodeState.PAUSED}


def ensure_mirror_image(dist: Distribution, client: docker.DockerClient) -> str:
    """``kreplica/kafka-mirror:<version>``: the docker backend's broker image of
    ``dist.version`` plus the MirrorMaker 2 classpath; built once (under the image lock)
    and rebuilt only when the broker image changed."""
    base = ensure_image(dist.version, client)
    jars = [Path(jar) for jar in mirror_classpath(dist).split(os.pathsep) if jar]
    return ensure_layer_image(client, base, f"{MIRROR_REPOSITORY}:{dist.version}", jars,
                              MIRROR_LIBS, labels={LABEL_VERSION: dist.version})


class DockerMirrorMaker(MirrorMaker):
    """MirrorMaker 2 in a container between two ``DockerCluster``s (module docstring)."""

    def __init__(self, source: Cluster, target: Cluster, topics: list[str],
                 workdir: Path | str, **kwargs: Any):
        for role, cluster in (("source", source), ("target", target)):
            if not isinstance(cluster, DockerCluster):
                raise InputError(f"a MirrorMaker 2 container needs docker clusters; the "
                                 f"{role} cluster is {type(cluster).__name__}; allowed: "
                                 f"both clusters on --kreplica-backend docker")
        super().__init__(source, target, topics, workdir, **kwargs)
        self.container_name = f"{self.instance}-mm2"
        self.image: str | None = None
        self._client: docker.DockerClient | None = None
        self._container: Any = None

    # -- engine and description ---------------------------------------------------------------
    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = engine()
        return self._client

    def _reload(self) -> dict[str, Any] | None:
        """The container's state from the engine, or None when it does not exist."""
        import docker

        if self._container is None:
            return None
        try:
            self._container.reload()
        except docker.errors.NotFound:
            return None
        return self._container.attrs.get("State", {})

    @property
    def pid(self) -> int | None:
        """Host pid of the container's PID 1 (the JVM) while it runs or is paused."""
        state = self._reload()
        return (state or {}).get("Pid") or None

    @property
    def state(self) -> NodeState:
        if self._reload() is None:
            return NodeState.STOPPED
        return _STATES.get(self._container.status, NodeState.STOPPED)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(backend="docker", container=self.container_name, image=self.image,
                   networks=[self.source.name, self.target.name])
        return out

    def hint(self) -> str:
        return f"MirrorMaker 2 container {self.container_name}, log: {self.log_file}"

    def _fail(self, what: str) -> NodeError:
        return NodeError(f"{what}; {self.hint()}", log_file=str(self.log_file))

    # -- lifecycle ------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Resolve the jars, build the image if missing, write the configuration and create
        the container on both networks (not started). ``start`` does this the first time;
        benchmarks call it first so image builds stay off the clock."""
        if self._container is not None:
            return
        if self.dist is None:
            self.dist = distribution.resolve(self.kafka_version, ("broker", "mirror"))
        self.image = ensure_mirror_image(self.dist, self.client)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(render_properties(self._properties()))
        self._write_support_files()
        self._container = self._create_container()

    def _properties(self) -> dict[str, str]:
        """The process MirrorMaker's configuration, bootstrapping in-network. Exactly-once
        (where ``MirrorMaker`` offers it) needs the internal REST server: it listens on a
        fixed port of the container's own loopback, so no host port is claimed."""
        extra: dict[str, Any] = {}
        if self.exactly_once:
            self.rest_port = CONTAINER_REST_PORT
            extra = {"exactly_once": True, "rest_port": CONTAINER_REST_PORT}
        return mm2_properties(self.source.internal_bootstrap_servers,
                              self.target.internal_bootstrap_servers, self.topics,
                              policy=self.policy, source_brokers=len(self.source.nodes),
                              target_brokers=len(self.target.nodes), instance=self.instance,
                              replication_factor=self.replication_factor,
                              refresh_s=self.refresh_s, **extra)

    def _log_config_name(self) -> str:
        return ("log4j2-broker.properties" if self.dist.uses_log4j2
                else "log4j-broker.properties")

    def _write_support_files(self) -> None:
        from importlib import resources

        script = resources.files("pytest_kreplica").joinpath("resources", "docker", SCRIPT)
        (self.workdir / SCRIPT).write_bytes(script.read_bytes())
        log_config = distribution.resource_path(self._log_config_name())
        (self.workdir / log_config.name).write_bytes(log_config.read_bytes())

    def _jvm_options(self) -> list[str]:
        """The process MirrorMaker's flags, with the log config at its path in the
        container, plus the reaper's owner marker."""
        host_logging = self.dist.logging_flags()
        flags = [f for f in self.dist.jvm_flags(self.heap_mb, archive=False)
                 if f not in host_logging]
        return [*reaper.owner_flags(str(self.workdir)), f"-Dkreplica.node={NODE_NAME}",
                *flags, *self.dist.logging_flags(Path(MOUNT) / self._log_config_name())]

    def _create_container(self) -> Any:
        import docker

        labels = {LABEL_OWNER: reaper.owner_token(), LABEL_CLUSTER: self.target.name,
                  LABEL_NODE: NODE_NAME}
        try:
            container = self.client.containers.create(
                self.image,
                command=["sh", f"{MOUNT}/{SCRIPT}"],
                name=self.container_name,
                hostname=self.container_name,
                user=f"{os.getuid()}:{os.getgid()}",  # files in the run directory stay ours
                environment={"KREPLICA_JVM_OPTS": shlex.join(self._jvm_options()),
                             "KREPLICA_MIRROR_LIBS": MIRROR_LIBS, "HOME": "/tmp"},
                volumes={str(self.workdir): {"bind": MOUNT, "mode": "rw"}},
                network=self.source.name,
                labels=labels,
                detach=True,
            )
        except docker.errors.APIError as exc:
            raise self._fail(f"cannot create the MirrorMaker 2 container from {self.image}: "
                             f"{exc.explanation or exc}") from exc
        try:
            if self.target.name != self.source.name:
                self.client.networks.get(self.target.name).connect(container)
        except docker.errors.APIError as exc:
            with contextlib.suppress(docker.errors.APIError):
                container.remove(force=True)
            raise self._fail(f"cannot attach the MirrorMaker 2 container to the target "
                             f"network {self.target.name}: {exc.explanation or exc}") from exc
        return container

    def start(self) -> None:
        """Create the container the first time, then start it; returns at once: call
        ``wait_ready`` / ``wait_mirroring`` for an observable state."""
        import docker

        if self.state is not NodeState.STOPPED:
            raise self._fail(f"MirrorMaker 2 already runs (state {self.state.value}); "
                             f"expected: stopped")
        self.prepare()
        self._mark_log()
        self.starts.append(time.monotonic())
        try:
            self._container.start()
        except docker.errors.APIError as exc:
            raise self._fail(f"container {self.container_name} did not start: "
                             f"{exc.explanation or exc}") from exc
        self._state = NodeState.RUNNING

    def _wait_exited(self, timeout: float) -> None:
        try:
            self._container.wait(timeout=timeout)
        except Exception as exc:  # requests' ReadTimeout / ConnectionError
            raise self._fail(f"container {self.container_name} still runs {timeout:.0f} s "
                             f"after it was stopped (expected: exited)") from exc
        self._state = NodeState.STOPPED

    def terminate(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Clean failure: ``docker stop`` (SIGTERM; SIGKILL at the deadline)."""
        if self.state is NodeState.STOPPED:
            self._state = NodeState.STOPPED
            return
        if self.state is NodeState.PAUSED:  # a frozen JVM cannot handle SIGTERM
            self._container.unpause()
        self._container.stop(timeout=max(1, int(timeout)))
        self._wait_exited(timeout + 10)

    def kill(self) -> None:
        """Hard failure: ``docker kill`` (SIGKILL to the JVM), wait until it exited."""
        import docker

        if self.state is NodeState.STOPPED:
            self._state = NodeState.STOPPED
            return
        with contextlib.suppress(docker.errors.APIError):  # exited meanwhile: nothing to do
            if self.state is NodeState.PAUSED:
                self._container.unpause()
            self._container.kill(signal="SIGKILL")
        self._wait_exited(KILL_WAIT_S)

    def pause(self) -> None:
        """Soft failure: ``docker pause``; returns once the engine reports it paused."""
        if self.state is not NodeState.RUNNING:
            raise self._fail(f"cannot pause MirrorMaker 2: it is {self.state.value}, "
                             f"expected: running")
        self._container.pause()
        wait_until(lambda: self.state is NodeState.PAUSED, 10.0,
                   f"container {self.container_name} paused",
                   lambda: f"state {self.state.value}",
                   self.hint())
        self._state = NodeState.PAUSED

    def resume(self) -> None:
        if self.state is NodeState.PAUSED:
            self._container.unpause()
            self._state = NodeState.RUNNING

    def close(self) -> None:
        """Stop for good and remove the container (the log stays in the run directory);
        idempotent, never raises."""
        import docker

        try:
            self.terminate()
        except Exception as exc:  # closing goes on: the removal below kills it
            log.warning("stopping MirrorMaker 2 container %s failed: %s",
                        self.container_name, exc)
        if self._container is not None:
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                self._container.remove(force=True)
            self._container = None
        self._state = NodeState.STOPPED
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- observable state -------------------------------------------------------------------------
    def check_running(self) -> None:
        if self._state is NodeState.RUNNING and self.state is NodeState.STOPPED:
            code = (self._reload() or {}).get("ExitCode")
            raise self._fail(f"MirrorMaker 2 container {self.container_name} exited with "
                             f"status {code} (expected: running); last line: "
                             f"{last_error_line(self.log_file)}")


def containers_of_this_session(client: docker.DockerClient) -> list[str]:
    """Names of MirrorMaker 2 containers owned by this process (tests: nothing left)."""
    found = client.containers.list(all=True, filters={
        "label": [f"{LABEL_OWNER}={reaper.owner_token()}", f"{LABEL_NODE}={NODE_NAME}"]},
        ignore_removed=True)
    return [c.name for c in found]
