"""The ``process`` backend: N combined broker+controller KRaft nodes as local JVMs.

Every JVM is forked by one long-lived launcher thread with the parent-death signal set
(``PR_SET_PDEATHSIG`` fires when the *forking thread* exits: a short-lived thread would kill
its children early), runs in its own process group and carries an owner marker the reaper
finds if all else failed. Roles and readiness come from the admin APIs, polled with bounds.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from ...errors import ClusterError, NodeError
from ...waits import last_error_line
from .. import facilities as kfacilities
from .. import ports as kports
from .. import reaper
from ..admin.cluster import POLL_S, AdminCluster, NotYet, poll_until
from ..base import ClusterSpec, Node, NodeState
from ..kafka import config as kconfig
from ..kafka import distribution, prepared
from ..launcher import Launcher
from . import formatting as kformat

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
STATE_FILE = "cluster.json"
KILL_WAIT_S = 15.0
QUORUMLESS_GRACE_S = 5.0  # Raft's own shutdown wait is 5 s


class ProcessCluster(AdminCluster):
    """A KRaft cluster of local JVMs on 127.0.0.1 (see module docstring)."""

    def __init__(self, spec: ClusterSpec, workdir: Path | str, *, detached: bool = False,
                 use_archive: bool = True, heap_mb: int = 256, tuned: bool = True,
                 extra_jvm_flags: tuple[str, ...] = (), fast_format: bool = True):
        if spec.brokers < 1:
            raise ClusterError(f"a cluster needs at least 1 broker, got brokers={spec.brokers}")
        self.spec = spec
        self.workdir = Path(workdir).resolve()
        self.detached = detached
        self.use_archive = use_archive
        self.heap_mb = spec.heap_mb or heap_mb  # a spec's own (the production shape's) wins
        self.tuned = tuned
        self.extra_jvm_flags = tuple(extra_jvm_flags)
        self.fast_format = fast_format
        self.dist: distribution.Distribution | None = None
        self.kafka_version: str | None = spec.kafka_version
        self.cluster_id: str | None = None
        self._nodes: list[Node] = []
        self._procs: dict[int, subprocess.Popen] = {}
        self._states: dict[int, NodeState] = {}
        self._ports: list[int] = []
        self._admin_client, self._admin_key = None, None
        self._lock = threading.RLock()
        self.timings: dict[str, float] = {}
        self.attached = kfacilities.Attached()  # spec.facilities, attached at the start

    # -- description ---------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self._nodes)

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def node_state(self, node_id: int) -> NodeState:
        self.node(node_id)
        proc = self._procs.get(node_id)
        if proc is None or proc.poll() is not None:
            self._states[node_id] = NodeState.STOPPED
        return self._states.get(node_id, NodeState.STOPPED)

    def facility(self, name: str) -> Any:
        return self.attached.handle(name)

    def follower_lag_bound_ms(self) -> int | None:
        return kconfig.follower_lag_bound_ms(self.spec.broker_config, self.tuned)

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        info.update(kafka_version=self.kafka_version, cluster_id=self.cluster_id,
                    workdir=str(self.workdir), **self.attached.describe())
        for n in self._nodes:
            info["nodes"][str(n.node_id)]["pid"] = n.pid
        return info

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> None:
        """Resolve jars, claim ports, format storage and start every node in parallel; return
        when every broker is registered unfenced and the quorum has a leader."""
        started = time.monotonic()
        if not self.detached:
            reaper.reap_orphans()
            kfacilities.sweep_leftovers()
        self.dist = distribution.resolve(self.spec.kafka_version)
        self.kafka_version = self.dist.version
        self.timings["resolve"] = time.monotonic() - started
        if self.use_archive:
            prepared.ensure_class_data_archive(self.dist, ProcessCluster)
        self.timings["archive"] = time.monotonic() - started - self.timings["resolve"]
        t0 = time.monotonic()
        try:
            self._prepare()
            self.timings["prepare"] = time.monotonic() - t0
            t1 = time.monotonic()
            assert self.cluster_id is not None
            tool_args = self.attached.storage_tool_args()
            if not (self.fast_format and tool_args is None and kformat.from_template(
                    self.dist, self.spec, self.cluster_id, self._nodes)):
                kformat.with_tool(lambda main, args: self._jvm_command(None, main, *args),
                                  self._popen, self._kill_proc, self.cluster_id,
                                  self._nodes, tool_args or [])
            self.attached.formatted()  # durable, as a format done long before a fault is
            self.timings["format"] = time.monotonic() - t1
            t1 = time.monotonic()
            for node in self._nodes:
                self._launch(node)
            self.timings["launch"] = time.monotonic() - t1
            self._wait_ready(timeout - (time.monotonic() - t0))
            self.timings["launch_to_ready"] = time.monotonic() - t1
        except BaseException:
            self.close()
            raise
        if self.detached:
            self._hand_over_ports()
            self.write_state()

    def _prepare(self) -> None:
        n = self.spec.brokers
        if self.workdir.exists() and any(self.workdir.glob("node-*")):
            raise ClusterError(f"{self.workdir} already holds a cluster (node-* folders); "
                               "use an empty directory")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._ports = kports.claim_ports(2 * n, HOST)
        addresses = [kconfig.NodeAddress(i + 1, HOST, self._ports[2 * i], self._ports[2 * i + 1])
                     for i in range(n)]
        self.cluster_id = kconfig.new_cluster_id()
        for addr in addresses:
            home = self.workdir / f"node-{addr.node_id}"
            (home / "data").mkdir(parents=True, exist_ok=True)
            self._nodes.append(Node(addr.node_id, HOST, addr.port, addr.controller_port,
                                    log_dir=home / "data", log_file=home / "server.log"))
            self._states[addr.node_id] = NodeState.STOPPED
        # before anything is written into a node's directory (a disk is mounted at its data)
        self.attached = kfacilities.attach(self.spec.facilities, kfacilities.Site(
            self.spec.backend, self.workdir, HOST, tuple(self._nodes),
            kafka_version=self.kafka_version or ""))
        voters = self.attached.voters(kconfig.quorum_voters(addresses))
        for addr, node in zip(addresses, self._nodes, strict=True):
            props = kconfig.server_properties(addr, voters, str(node.log_dir), n,
                                              self.spec.broker_config, tuned=self.tuned)
            props = self.attached.node_properties(addr.node_id, props)
            (node.log_file.parent / "server.properties").write_text(
                kconfig.render_properties(props))

    def _jvm_command(self, node: Node | None, main_class: str, *args: str) -> list[str]:
        assert self.dist is not None
        marks = reaper.owner_flags(str(self.workdir), detached=self.detached)
        if node is not None:
            marks.append(f"-Dkreplica.node={node.node_id}")
        return self.dist.command(main_class, *args, heap_mb=self.heap_mb,
                                 archive=self.use_archive,
                                 extra_flags=[*marks, *self.extra_jvm_flags])

    def _popen(self, cmd: list[str], log_path: Path, env: dict | None = None) -> subprocess.Popen:
        with open(log_path, "ab") as out:
            return Launcher.get().popen(cmd, die_with_parent=not self.detached, env=env,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=str(log_path.parent))

    def _launch(self, node: Node) -> None:
        with open(node.log_file, "ab") as out:
            out.write(f"\n=== kreplica: starting node {node.node_id} at "
                      f"{time.strftime('%H:%M:%S')} ===\n".encode())
        props = str(node.log_file.with_name("server.properties"))
        extra = self.attached.environment(node.node_id)
        env = {**os.environ, **extra} if extra else None
        proc = self._popen(self._jvm_command(node, "kafka.Kafka", props), node.log_file, env)
        with self._lock:
            self._procs[node.node_id] = proc
            node.pid = proc.pid
            self._states[node.node_id] = NodeState.RUNNING
            self._invalidate_admin()

    def _check_alive(self, node_ids: list[int] | None = None) -> None:
        for node in self._nodes:
            if node_ids is not None and node.node_id not in node_ids:
                continue
            proc = self._procs.get(node.node_id)
            if self._states.get(node.node_id) is NodeState.RUNNING and proc is not None \
                    and proc.poll() is not None:
                self._states[node.node_id] = NodeState.STOPPED
                raise NodeError(
                    f"node {node.node_id} exited with code {proc.returncode} (expected: running); "
                    f"last log line: {last_error_line(node.log_file)}; log: {node.log_file}",
                    node.node_id, str(node.log_file))

    # -- faults --------------------------------------------------------------------------------
    def _proc(self, node_id: int) -> subprocess.Popen | None:
        self.node(node_id)
        return self._procs.get(node_id)

    @staticmethod
    def _signal_group(proc: subprocess.Popen, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    def _kill_proc(self, proc: subprocess.Popen) -> None:
        self._signal_group(proc, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(KILL_WAIT_S)

    def terminate(self, node_id: int, timeout: float | None = None) -> str | None:
        proc = self._proc(node_id)
        if proc is None or proc.poll() is not None:
            self._states[node_id] = NodeState.STOPPED
            return None
        deadline = self.stop_deadline(node_id) if timeout is None else timeout
        self._signal_group(proc, signal.SIGTERM)
        self._signal_group(proc, signal.SIGCONT)  # a paused node must run to handle SIGTERM
        killed = None
        try:
            proc.wait(deadline)
        except subprocess.TimeoutExpired:
            killed = self.killed_at_deadline(node_id, deadline)
            log.warning("%s", killed)
            self._kill_proc(proc)
        self._stopped(node_id)
        return killed

    def kill(self, node_id: int) -> None:
        proc = self._proc(node_id)
        if proc is not None and proc.poll() is None:
            self._kill_proc(proc)
        self._stopped(node_id)

    def _stopped(self, node_id: int) -> None:
        proc = self._procs.get(node_id)
        if proc is not None and proc.poll() is None:
            node = self.node(node_id)
            raise NodeError(f"node {node_id} (pid {proc.pid}) still runs after SIGKILL "
                            f"(expected: exited); log: {node.log_file}", node_id,
                            str(node.log_file))
        self._states[node_id] = NodeState.STOPPED
        self._invalidate_admin()

    def pause(self, node_id: int) -> None:
        proc = self._proc(node_id)
        node = self.node(node_id)
        if proc is None or proc.poll() is not None:
            raise NodeError(f"cannot pause node {node_id}: it is not running "
                            f"(state {self.node_state(node_id).value}); log: {node.log_file}",
                            node_id, str(node.log_file))
        self._signal_group(proc, signal.SIGSTOP)
        with self._lock:
            self._states[node_id] = NodeState.PAUSED
            self._invalidate_admin()

        def stopped() -> None:
            status = psutil.Process(proc.pid).status()
            if status != psutil.STATUS_STOPPED:
                raise NotYet(f"process status {status}")
        poll_until(stopped, 10.0, f"node {node_id} stopped by SIGSTOP", lambda msg: NodeError(
            f"{msg}; log: {node.log_file}", node_id, str(node.log_file)))

    def resume(self, node_id: int) -> None:
        proc = self._proc(node_id)
        if proc is None or proc.poll() is not None:
            self._states[node_id] = NodeState.STOPPED
            return
        self._signal_group(proc, signal.SIGCONT)
        with self._lock:
            self._states[node_id] = NodeState.RUNNING
            self._invalidate_admin()

    def start_node(self, node_id: int, timeout: float = 60.0) -> None:
        node = self.node(node_id)
        state = self.node_state(node_id)
        if state is NodeState.PAUSED:
            self.resume(node_id)
        elif state is NodeState.STOPPED:
            self._launch(node)
        self.wait_registered(node_id, timeout)

    def reserve_node(self) -> tuple[int, int]:
        """The next node id and a claimed loopback port for one more node (``join``); the
        port is released with the cluster's others."""
        with self._lock:
            port = kports.claim_ports(1, HOST)[0]
            self._ports.append(port)
            return max(n.node_id for n in self._nodes) + 1, port

    def add_node(self, node: Node, timeout: float = 60.0) -> None:
        """Adopt ``node`` (its storage and server.properties already written) and start it
        like the others, then wait until it is registered unfenced."""
        with self._lock:
            self._nodes.append(node)
            self._states[node.node_id] = NodeState.STOPPED
        self.start_node(node.node_id, timeout)

    # -- teardown ------------------------------------------------------------------------------
    def close(self, timeout: float = 30.0) -> None:
        """SIGTERM every node at once (one after another hangs the last one: its controlled
        shutdown needs a quorum that is gone). Nodes still running ``QUORUMLESS_GRACE_S``
        after a majority has exited, or at ``timeout``, are SIGKILLed."""
        self._invalidate_admin()
        procs = [p for p in self._procs.values() if p.poll() is None]
        for proc in procs:
            self._signal_group(proc, signal.SIGTERM)
            self._signal_group(proc, signal.SIGCONT)
        majority = len(self._nodes) // 2 + 1
        deadline = time.monotonic() + timeout
        quorum_lost_at: float | None = None
        while True:
            alive = [p for p in procs if p.poll() is None]
            now = time.monotonic()
            if not alive:
                break
            if quorum_lost_at is None and len(alive) < majority:
                quorum_lost_at = now
            if now >= deadline or (quorum_lost_at is not None
                                   and now - quorum_lost_at >= QUORUMLESS_GRACE_S):
                log.info("killing %d node(s) past the quorum or the deadline", len(alive))
                for proc in alive:
                    self._kill_proc(proc)
                break
            time.sleep(POLL_S)  # polling child exit codes; bounded by the deadline above
        for proc in procs:  # strays left in a node's process group
            self._signal_group(proc, signal.SIGKILL)
        self._states.update(dict.fromkeys(self._procs, NodeState.STOPPED))
        self.attached.close()  # the facilities (a fault proxy, the disks): after every JVM
        if not self.detached:
            kports.release_ports(self._ports)
            self._ports = []

    # -- detached clusters ---------------------------------------------------------------------
    def _hand_over_ports(self) -> None:
        for i, node in enumerate(self._nodes):
            if node.pid is not None:
                kports.reassign_ports(self._ports[2 * i:2 * i + 2],
                                      kports.process_identity(node.pid))

    def write_state(self) -> Path:
        state = {"bootstrap_servers": self.bootstrap_servers, "ports": self._ports,
                 **self.describe()}
        path = self.workdir / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(path)
        return path


def stop_detached(workdir: Path | str, timeout: float = 30.0) -> list[int]:
    """Stop a cluster started with ``detach``: SIGTERM its JVMs (found by their marker and
    the state file) at once, SIGKILL at the deadline, release its ports."""
    workdir = Path(workdir).resolve()
    state_path = workdir / STATE_FILE
    if not state_path.exists():
        raise ClusterError(f"no detached cluster in {workdir}: {STATE_FILE} not found "
                           "(expected one written by 'kreplica cluster up --detach')")
    state = json.loads(state_path.read_text())
    procs = reaper.marked_processes(str(workdir))
    for proc in procs:
        with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
    _gone, alive = psutil.wait_procs(procs, timeout=timeout)
    for proc in alive:
        reaper.kill_process_tree(proc)
    psutil.wait_procs(alive, timeout=KILL_WAIT_S)
    kports.release_ports(state.get("ports", []))
    state_path.unlink(missing_ok=True)
    return [p.pid for p in procs]
