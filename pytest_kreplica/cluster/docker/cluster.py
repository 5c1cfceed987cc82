"""The docker backend: one container per KRaft node on a network of its own.

Each node is a combined broker+controller with the process backend's settings
(``config.server_properties``). Listeners: PLAINTEXT (inter-broker) and CONTROLLER on the
cluster network under the container's name, plus EXTERNAL, published on 127.0.0.1 only and
advertised as such, so host clients reach every node. The node's log dir and server log are
bind mounts into the cluster's workdir, so the replica-log verifier reads them exactly as for
processes.

Containers and networks carry the owner's identity (pid and start time) as a label: ``close``
removes them, a watcher process removes them as soon as their session dies (a SIGKILLed
session; ``watch``), and every ``start`` first sweeps those whose owner is dead,
never those of a live owner (other sessions run beside this one). The JVMs also
carry the process backend's owner marker, so its reaper kills them as it kills orphan JVMs.

Faults: terminate (SIGTERM, SIGKILL at the deadline), kill (SIGKILL), pause / resume (the
cgroup freezer), restart, partition / heal (``partition``), and those that act
through the node facilities the spec names (``facilities``: e.g. the link faults through a
fault proxy on the network's gateway).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import NodeError
from ...waits import tail
from .. import facilities as kfacilities
from .. import ports, reaper
from ..admin.cluster import AdminCluster
from ..base import ClusterSpec, Node, NodeState
from ..kafka import config, distribution
from .image import engine, ensure_image
from .owner import LABEL_CLUSTER, LABEL_NODE, LABEL_OWNER, sweep
from .partition import IptablesPartitions
from .watch import ensure_watcher

if TYPE_CHECKING:
    import docker

INTERNAL_PORT = 9092
CONTROLLER_PORT = 9093
EXTERNAL_PORT = 19092
MOUNT = "/kreplica"  # node dir inside the container: node.sh, configs, data/, server.log

SIGKILL_STATUS = 128 + 9  # a container's exit status when docker killed its PID 1
_STATES = {"running": NodeState.RUNNING, "paused": NodeState.PAUSED}


class DockerCluster(IptablesPartitions, AdminCluster):
    """Kafka nodes as Docker containers behind the Cluster API."""

    listener_ports = (INTERNAL_PORT, CONTROLLER_PORT)  # what a partition's probes connect to

    def __init__(self, spec: ClusterSpec, workdir: Path):
        self.spec = spec
        self.workdir = Path(workdir)
        self.name = f"kreplica-{uuid.uuid4().hex[:10]}"
        self.cluster_id = config.new_cluster_id()
        self.kafka_version: str | None = spec.kafka_version
        self.dist = None  # distribution.Distribution, resolved at start
        self.image: str | None = None
        self._client: docker.DockerClient | None = None
        self._network = None
        self._containers: dict[int, object] = {}
        self._nodes: list[Node] = []
        self._claimed_ports: list[int] = []
        self._partitioned: dict[int, bool] = {}  # node id -> cut from clients too
        self._stopped: set[int] = set()  # nodes stopped on purpose (terminate / kill)
        self._lock = threading.RLock()  # AdminCluster's cached admin client
        self._admin_client = None
        self._admin_key: str | None = None
        self.attached = kfacilities.Attached()  # spec.facilities, attached at the start

    # -- engine and names ----------------------------------------------------------------
    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = engine()
        return self._client

    def container_name(self, node_id: int) -> str:
        return f"{self.name}-n{node_id}"

    def _container(self, node_id: int):
        self.node(node_id)  # KeyError naming the known nodes
        return self._containers[node_id]

    # -- description ---------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self._nodes)

    @property
    def internal_bootstrap_servers(self) -> str:
        """The brokers' listeners on the cluster's own network (``name``): for containers
        attached to it, e.g. a MirrorMaker 2 container; host clients use ``bootstrap_servers``."""
        return ",".join(f"{self.container_name(n.node_id)}:{INTERNAL_PORT}" for n in self._nodes)

    def node_state(self, node_id: int) -> NodeState:
        import docker

        try:
            container = self._container(node_id)
            container.reload()
        except docker.errors.NotFound:
            return NodeState.STOPPED
        return _STATES.get(container.status, NodeState.STOPPED)

    def live_bootstrap_servers(self) -> str:
        """Running nodes, without those cut off from clients."""
        cut = {i for i, from_clients in self._partitioned.items() if from_clients}
        return ",".join(n.address for n in self._nodes if n.node_id not in cut
                        and self.node_state(n.node_id) is NodeState.RUNNING)

    def _live_nodes(self) -> list[Node]:
        """Running nodes that are not cut off: a partitioned node's view of roles is stale."""
        return [n for n in super()._live_nodes() if n.node_id not in self._partitioned]

    def _cut_off(self) -> bool:
        return bool(self._partitioned)

    def facility(self, name: str) -> Any:
        return self.attached.handle(name)

    def follower_lag_bound_ms(self) -> int | None:
        return config.follower_lag_bound_ms(self.spec.broker_config)

    def describe(self) -> dict:
        out = super().describe()
        out.update({"kafka_version": self.kafka_version, "image": self.image,
                    "network": self.name, "workdir": str(self.workdir),
                    **self.attached.describe(),
                    "containers": {str(i): self.container_name(i) for i in self._containers}})
        return out

    # -- lifecycle -----------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> None:
        """Create the network and containers, start every node at once, wait until ready.

        The image is obtained (built with progress when missing) before the clock starts.
        On any failure everything created so far is removed before the error propagates.
        """
        try:
            self._prepare()
            deadline = time.monotonic() + timeout
            with ThreadPoolExecutor(max_workers=len(self._containers)) as pool:
                list(pool.map(self._start_container, list(self._containers)))
            self._wait_ready(max(1.0, deadline - time.monotonic()))
            self.attached.formatted()  # the format (in the container) is long durable
        except BaseException:
            self.close()
            raise

    def _prepare(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        sweep(self.client)
        self.dist = distribution.resolve(self.spec.kafka_version)
        self.kafka_version = self.dist.version
        self.image = ensure_image(self.kafka_version, self.client)
        self._labels = {LABEL_OWNER: reaper.owner_token(), LABEL_CLUSTER: self.name}
        ensure_watcher(self._labels[LABEL_OWNER])  # removes them if this session is killed
        self._network = self.client.networks.create(self.name, driver="bridge",
                                                    labels=self._labels, check_duplicate=True)
        self._claimed_ports = ports.claim_ports(self.spec.brokers)
        self._nodes = []
        for node_id, port in enumerate(self._claimed_ports, start=1):
            node_dir = self.workdir / f"node-{node_id}"
            (node_dir / "data").mkdir(parents=True, exist_ok=True)
            self._nodes.append(Node(node_id=node_id, host="127.0.0.1", port=port,
                                    controller_port=CONTROLLER_PORT,
                                    log_dir=node_dir / "data",
                                    log_file=node_dir / "server.log"))
        # attached on the host before the bind mounts: a container's bind mount of its node
        # dir takes a disk mounted at its data dir along
        self.attached = kfacilities.attach(self.spec.facilities, kfacilities.Site(
            self.spec.backend, self.workdir, "127.0.0.1", tuple(self._nodes), self._network))
        for node in self._nodes:
            self._write_node_files(node)
            self._containers[node.node_id] = self._create_container(node)

    def _addresses(self) -> list[config.NodeAddress]:
        return [config.NodeAddress(node_id=n.node_id, host="0.0.0.0", port=INTERNAL_PORT,
                                   controller_port=CONTROLLER_PORT,
                                   advertised_host=self.container_name(n.node_id))
                for n in self._nodes]

    def _write_node_files(self, node: Node) -> None:
        """node.sh, server.properties and the log config into the node's (mounted) dir."""
        node_dir = node.log_dir.parent
        script = resources.files("pytest_kreplica").joinpath("resources", "docker", "node.sh")
        (node_dir / "node.sh").write_bytes(script.read_bytes())
        addresses = self._addresses()
        voters = self.attached.voters(config.quorum_voters(addresses))
        props = config.server_properties(addresses[node.node_id - 1], voters, f"{MOUNT}/data",
                                         self.spec.brokers, extra=self.spec.broker_config)
        props = self.attached.node_properties(node.node_id, props)
        # one more listener, published on the host's loopback and advertised as such
        props["listeners"] += f",EXTERNAL://0.0.0.0:{EXTERNAL_PORT}"
        props["advertised.listeners"] += f",EXTERNAL://{node.host}:{node.port}"
        props["listener.security.protocol.map"] += ",EXTERNAL:PLAINTEXT"
        (node_dir / "server.properties").write_text(config.render_properties(props))
        log_config = distribution.resource_path(self._log_config_name())
        (node_dir / log_config.name).write_bytes(log_config.read_bytes())

    def _log_config_name(self) -> str:
        return ("log4j2-broker.properties" if self.dist.uses_log4j2
                else "log4j-broker.properties")

    def _jvm_options(self) -> list[str]:
        """The process backend's flags, with the log config at its path in the container
        and no class-data archive (it belongs to the host's JDK)."""
        host_logging = self.dist.logging_flags()
        heap = {"heap_mb": self.spec.heap_mb} if self.spec.heap_mb else {}
        flags = [f for f in self.dist.jvm_flags(archive=False, **heap) if f not in host_logging]
        return flags + self.dist.logging_flags(Path(MOUNT) / self._log_config_name())

    def _create_container(self, node: Node):
        flags = self._jvm_options()
        extra = self.attached.container(node.node_id, MOUNT)  # what the facilities add
        owner = reaper.owner_flags(str(self.workdir))  # the reaper's marker, broker only
        return self.client.containers.create(
            self.image,
            command=["sh", f"{MOUNT}/node.sh"],
            name=self.container_name(node.node_id),
            hostname=self.container_name(node.node_id),
            user=f"{os.getuid()}:{os.getgid()}",  # files in the workdir stay the user's
            environment={
                "KREPLICA_NODE_ID": str(node.node_id),
                "KREPLICA_CLUSTER_ID": self.cluster_id,
                "KREPLICA_LOG_DIR": f"{MOUNT}/data",
                "KREPLICA_JVM_OPTS": shlex.join([*flags, *owner]),
                "KREPLICA_TOOL_OPTS": shlex.join(flags),
                "HOME": "/tmp",
                **extra.environment,
            },
            volumes={str(node.log_dir.parent): {"bind": MOUNT, "mode": "rw"},
                     **extra.volumes},
            ports={f"{EXTERNAL_PORT}/tcp": ("127.0.0.1", node.port), **extra.ports},
            network=self._network.name,
            cap_add=["NET_ADMIN"],
            labels={**self._labels, LABEL_NODE: str(node.node_id)},
            detach=True,
        )

    def _start_container(self, node_id: int) -> None:
        import docker

        try:
            self._containers[node_id].start()
        except docker.errors.APIError as exc:
            node = self.node(node_id)
            raise NodeError(f"container {self.container_name(node_id)} of node {node_id} did "
                            f"not start: {exc.explanation or exc}; server log {node.log_file}",
                            node_id, str(node.log_file)) from exc
        container = self._containers[node_id]
        container.reload()  # PID 1 execs the JVM: its host pid is the container's
        self.node(node_id).pid = container.attrs["State"]["Pid"] or None

    def _check_alive(self, node_ids: list[int] | None = None) -> None:
        """Raise ``NodeError`` with the log tail when a container exited unasked."""
        for node in self._nodes:
            node_id = node.node_id
            if node_ids is not None and node_id not in node_ids or node_id in self._stopped:
                continue
            if self.node_state(node_id) is NodeState.STOPPED:
                container = self._containers[node_id]
                code = container.attrs.get("State", {}).get("ExitCode")
                raise NodeError(
                    f"node {node_id} (container {container.name}) exited with status {code} "
                    f"(expected: running); last lines of {node.log_file}:\n"
                    f"{tail(node.log_file)}", node_id, str(node.log_file))

    def close(self, timeout: float = 30.0) -> None:
        """Stop all nodes at once (SIGTERM, SIGKILL at the deadline), then remove the
        containers, the network and the port claims. Idempotent."""
        import docker

        self._invalidate_admin()

        def remove(container) -> None:
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                container.reload()
                if container.status == "paused":
                    container.unpause()
                if container.status in ("running", "paused"):
                    container.stop(timeout=max(1, int(timeout)))
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)

        containers = list(self._containers.values())
        if containers:
            with ThreadPoolExecutor(max_workers=len(containers)) as pool:
                list(pool.map(remove, containers))
        self._containers.clear()
        if self._network is not None:
            with contextlib.suppress(docker.errors.NotFound):
                self._network.remove()
            self._network = None
        ports.release_ports(self._claimed_ports)
        self._claimed_ports = []
        # after every container: no node talks through a proxy or holds a disk now
        self.attached.close()
        self._partitioned.clear()
        self._stopped.clear()
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- faults --------------------------------------------------------------------------
    def terminate(self, node_id: int, timeout: float | None = None) -> str | None:
        """SIGTERM the broker (PID 1 of its container); SIGKILL at the deadline (docker's
        own), seen as the exit status 137."""
        deadline = self.stop_deadline(node_id) if timeout is None else timeout
        self._stopped.add(node_id)
        self._invalidate_admin()
        self._container(node_id).stop(timeout=max(1, int(deadline)))
        status = self._wait_exited(node_id, deadline + 10)
        return self.killed_at_deadline(node_id, deadline) if status == SIGKILL_STATUS else None

    def kill(self, node_id: int) -> None:
        import docker

        self._stopped.add(node_id)
        self._invalidate_admin()
        with contextlib.suppress(docker.errors.APIError):  # already exited: nothing to kill
            self._container(node_id).kill(signal="SIGKILL")
        self._wait_exited(node_id, 30)

    def _wait_exited(self, node_id: int, timeout: float) -> int | None:
        """Wait until the container exited; its exit status (None: not reported)."""
        container = self._container(node_id)
        try:
            return container.wait(timeout=timeout).get("StatusCode")
        except Exception as exc:  # requests' ReadTimeout / ConnectionError
            raise NodeError(f"node {node_id} (container {container.name}) still runs "
                            f"{timeout:.0f} s after it was stopped; server log "
                            f"{self.node(node_id).log_file}", node_id,
                            str(self.node(node_id).log_file)) from exc

    def pause(self, node_id: int) -> None:
        """Soft failure: the cgroup freezer stops every thread of the node at once."""
        self._container(node_id).pause()
        self._invalidate_admin()

    def resume(self, node_id: int) -> None:
        if self.node_state(node_id) is NodeState.PAUSED:
            self._container(node_id).unpause()
        self._invalidate_admin()

    def start_node(self, node_id: int, timeout: float = 60.0) -> None:
        """Resume a paused node, or start a stopped node's container again on its old log
        dir (its partition rules went with its old network namespace); wait until it is
        registered."""
        state = self.node_state(node_id)
        if state is NodeState.PAUSED:
            self.resume(node_id)
        elif state is NodeState.STOPPED:
            self._partitioned.pop(node_id, None)
            self._stopped.discard(node_id)
            self._start_container(node_id)
            self._invalidate_admin()
        self.wait_registered(node_id, timeout)
