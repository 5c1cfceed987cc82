"""The ``external`` backend: a Kafka(-compatible) cluster the user started and keeps.

``start`` only checks it answers (bounded); ``close`` never stops it. Roles, topics and the
health gate come from the admin APIs (``AdminCluster``); faults run the shell commands of the
YAML's fault adapter (``config``) and are then verified to have acted, because a
command that exits 0 without hurting anything would let a case pass with no fault at all.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ...errors import ClusterError, InputError, NodeError
from ..admin.cluster import AdminCluster, NotYet, poll_until
from ..admin.probe import answers, api_versions
from ..base import ClusterSpec, Node, NodeState
from . import config as external_config
from .apicheck import judge

ENV = "KREPLICA_CLUSTER"
PROBE_S = 2.0  # a node that sends nothing back to ApiVersions in this long is not answering
OUTPUT_TAIL = 2000


class ExternalCluster(AdminCluster):
    """A cluster declared in ``--kreplica-cluster FILE`` (see module docstring)."""

    def __init__(self, spec: ClusterSpec, workdir: Path | str,
                 config: external_config.ExternalConfig | Path | str | None = None):
        if config is None:
            config = os.environ.get(ENV)
            if not config:
                raise InputError(f"the external backend needs its cluster file: "
                                 f"--kreplica-cluster FILE (or env {ENV})")
        if not isinstance(config, external_config.ExternalConfig):
            config = external_config.load(config)
        self.config = config
        self.spec = spec
        self.workdir = Path(workdir).resolve()
        self.kafka_version: str | None = config.kafka_version
        self.faults_log = self.workdir / "faults.log"
        self._nodes = [Node(n.node_id, n.host, n.port, 0,
                            log_dir=n.log_dir or self.workdir / f"node-{n.node_id}-no-log-dir",
                            log_file=n.log_file or self.faults_log, pid=n.pid)
                       for n in config.nodes]
        self._states = {n.node_id: NodeState.RUNNING for n in self._nodes}
        self._struck: dict[int, str] = {}  # node -> the fault that stopped it
        self._admin_client = None
        self._admin_key: str | None = None
        self._lock = threading.RLock()
        self.api_versions: dict[int, dict[int, tuple[int, int]]] = {}  # node -> its answer

    # -- description -----------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self._nodes)

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def node_state(self, node_id: int) -> NodeState:
        self.node(node_id)
        return self._states[node_id]

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info["kafka_version"] = self.kafka_version
        info["cluster_file"] = str(self.config.path)
        info["failures"] = list(self.config.failures)
        info["api_versions"] = {str(node): {str(k): list(v) for k, v in sorted(apis.items())}
                                for node, apis in self.api_versions.items()}
        return info

    def _logs_hint(self, node_ids: list[int] | None = None) -> str:
        return f"cluster file {self.config.path}; fault commands' output: {self.faults_log}"

    # -- lifecycle: check, never start or stop ------------------------------------------------
    def start(self, timeout: float = 60.0) -> None:
        """Check that every declared node is an unfenced broker and the quorum has a leader."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        wait = min(timeout, self.config.start_timeout)

        def ready() -> None:
            seen = self._registration()
            if seen != "ok":
                raise NotYet(seen)
        poll_until(ready, wait, f"the cluster of {self.config.path} to answer "
                   f"({self.bootstrap_servers})", lambda msg: ClusterError(
                       f"external cluster not reachable: {msg}; check nodes[] in "
                       f"{self.config.path} and that the cluster is running"))
        self._check_api_versions()

    def _check_api_versions(self) -> None:
        """Every node's ApiVersions against the file's capabilities and kafka_version."""
        for node in self._nodes:
            try:
                apis = api_versions(node.host, node.port, PROBE_S * 2)
            except (OSError, ValueError) as exc:
                raise ClusterError(f"ApiVersions of node {node.node_id} at {node.address} "
                                   f"failed: {exc}; cluster file {self.config.path}") from None
            self.api_versions[node.node_id] = apis
            problem = judge(apis, controller=self.config.controller,
                            transactions=self.config.transactions,
                            kafka_version=self.kafka_version, where=str(self.config.path))
            if problem:
                raise ClusterError(f"node {node.node_id}: {problem}")

    def close(self, timeout: float = 30.0) -> None:
        """Forget the admin client; the cluster is the user's and keeps running."""
        self._invalidate_admin()

    def _quorum_leader(self, admin: Any) -> int | None:
        """With ``capabilities.controller: false`` the quorum is not asked for: a broker
        without KRaft (Tansu) has no DescribeQuorum, and DescribeCluster suffices."""
        return super()._quorum_leader(admin) if self.config.controller else 0

    def _check_alive(self, node_ids: list[int] | None = None) -> None:
        """Nothing to watch: the processes are not ours (a dead node shows as unregistered)."""

    @property
    def finds_controller(self) -> bool:
        return self.config.controller

    def active_controller(self, timeout: float = 30.0) -> int:
        if not self.config.controller:
            raise InputError(f"{self.config.path}: capabilities.controller is false, so the "
                             "KRaft controller cannot be found; allowed targets: leader, "
                             "follower")
        return super().active_controller(timeout)

    # -- the fault adapter -------------------------------------------------------------------
    def _run(self, node_id: int, fault: str, part: str) -> str:
        """Run the ``part`` (strike / restore) command of ``fault`` on ``node_id``; its output,
        or ``NodeError`` with the output when it exits non-zero or outlives its timeout."""
        commands = self.config.faults.get(fault)
        if commands is None:
            raise InputError(f"{self.config.path}: faults.{fault} is not declared; declared: "
                             f"{', '.join(self.config.faults) or 'none'}")
        template = getattr(commands, part)
        # a restore after a kill has no pid to look up: ask only a command that uses it
        command = template.format_map(self._placeholders(node_id, "{pid}" in template))
        return self._shell(node_id, command, f"faults.{fault}.{part}")

    def _placeholders(self, node_id: int, want_pid: bool = True) -> dict[str, Any]:
        node = self.node(node_id)
        declared = next(n for n in self.config.nodes if n.node_id == node_id)
        pid: Any = node.pid
        if declared.pid_command and want_pid:
            out = self._shell(node_id, declared.pid_command.format(
                node=node_id, pid="", container=declared.container or "", host=node.host,
                port=node.port), f"nodes[id={node_id}].pid_command").strip()
            if not out.split() or not out.split()[0].isdigit():
                raise NodeError(f"{self.config.path}: pid_command of node {node_id} printed "
                                f"{out!r} (expected a pid)", node_id, str(self.faults_log))
            pid = node.pid = int(out.split()[0])
        return {"node": node_id, "pid": "" if pid is None else pid,
                "container": declared.container or "", "host": node.host, "port": node.port}

    def _shell(self, node_id: int, command: str, key: str) -> str:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(command, shell=True, capture_output=True, text=True,  # noqa: S602
                                  timeout=self.config.command_timeout, stdin=subprocess.DEVNULL)
            code, out = done.returncode, (done.stdout or "") + (done.stderr or "")
        except subprocess.TimeoutExpired as exc:
            code, out = "timeout", str(exc.output or "")
        with open(self.faults_log, "a") as log:
            log.write(f"{time.strftime('%H:%M:%S')} node {node_id} {key}: {command}\n"
                      f"  exit {code}\n{out}\n")
        if code != 0:
            raise NodeError(f"{key} for node {node_id} failed (expected exit 0, got {code}): "
                            f"{command!r}; output: {out[-OUTPUT_TAIL:].strip() or '(none)'}; "
                            f"cluster file {self.config.path}", node_id, str(self.faults_log))
        return out

    def _verify(self, node_id: int, fault: str, *, answering: bool, timeout: float) -> None:
        """Wait until the node does (or no longer does) answer ApiVersions."""
        node = self.node(node_id)

        def check() -> None:
            if answers(node.host, node.port, PROBE_S) != answering:
                raise NotYet(f"node {node_id} at {node.address} "
                             f"{'does not answer' if answering else 'still answers'} ApiVersions")
        what = "answering again" if answering else "no longer answering"
        poll_until(check, timeout, f"node {node_id} {what} after faults.{fault}",
                   lambda msg: NodeError(
                       f"faults.{fault} of {self.config.path} did not act: {msg}; "
                       f"commands' output: {self.faults_log}", node_id, str(self.faults_log)))

    def _strike(self, node_id: int, fault: str, state: NodeState) -> None:
        if self._states[node_id] is not NodeState.RUNNING:
            raise NodeError(f"cannot strike node {node_id} with faults.{fault}: it is "
                            f"{self._states[node_id].value} (expected running)", node_id,
                            str(self.faults_log))
        self._run(node_id, fault, "strike")
        with self._lock:
            self._states[node_id] = state
            self._invalidate_admin()
        self._verify(node_id, fault, answering=False, timeout=self.config.command_timeout)
        if state is NodeState.STOPPED:
            self._struck[node_id] = fault

    def terminate(self, node_id: int, timeout: float | None = None) -> str | None:
        """The operator's ``terminate`` command (it owns the deadline)."""
        self._strike(node_id, "terminate", NodeState.STOPPED)
        return None

    def kill(self, node_id: int) -> None:
        self._strike(node_id, "kill", NodeState.STOPPED)

    def pause(self, node_id: int) -> None:
        self._strike(node_id, "pause", NodeState.PAUSED)

    def resume(self, node_id: int) -> None:
        if self._states[node_id] is not NodeState.PAUSED:
            return
        self._run(node_id, "pause", "restore")
        self._verify(node_id, "pause", answering=True, timeout=self.config.command_timeout)
        with self._lock:
            self._states[node_id] = NodeState.RUNNING
            self._invalidate_admin()

    def start_node(self, node_id: int, timeout: float = 60.0) -> None:
        state = self.node_state(node_id)
        if state is NodeState.PAUSED:
            self.resume(node_id)
        elif state is NodeState.STOPPED:
            fault = self._struck.pop(node_id, "kill" if "kill" in self.config.faults
                                     else "terminate")
            self._run(node_id, fault, "restore")
            self._verify(node_id, fault, answering=True, timeout=timeout)
            with self._lock:
                self._states[node_id] = NodeState.RUNNING
                self._invalidate_admin()
        self.wait_registered(node_id, timeout)
