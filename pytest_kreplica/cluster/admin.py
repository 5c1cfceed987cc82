"""The half of the Cluster API that Kafka's own admin APIs answer, for every backend.

Roles (leader, ISR, active controller), topics and the health gate come from
DescribeCluster / Metadata / DescribeQuorum / DescribeLogDirs through kafka-python, never
from log lines, so the process and docker backends report them identically. A backend
supplies lifecycle, node states and faults, and may override ``check_node_alive`` so a
wait fails at once, with the node's log tail, when a node dies instead of timing out.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from tenacity import RetryError, retry, retry_if_exception_type, stop_after_delay, wait_fixed

from ..errors import ClusterError, NodeError
from .base import Cluster, NodeState, PartitionState, TopicSpec

T = TypeVar("T")

POLL_S = 0.25


class _NotYet(Exception):
    """A bounded wait's condition is not met yet; carries what was seen."""


def _port_open(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1.0):
        return True
    return False


class AdminCluster(Cluster):
    """Roles, topics and health through the admin APIs; lifecycle is the backend's."""

    admin_request_timeout_ms = 5000

    # -- hooks for backends -------------------------------------------------------------
    def check_node_alive(self, node_id: int) -> None:
        """Raise ``NodeError`` (with the node's log tail) when the node has died."""

    def admin_nodes(self) -> list[int]:
        """Nodes whose answers about roles are current: running (a backend that can cut
        links also leaves out the nodes it cut off)."""
        return [n.node_id for n in self.nodes if self.node_state(n.node_id) is NodeState.RUNNING]

    # -- admin client --------------------------------------------------------------------
    @contextlib.contextmanager
    def admin(self) -> Iterator[object]:
        """A short-lived admin client bootstrapped from ``admin_nodes`` only (a request to
        a paused or cut-off broker hangs until its timeout)."""
        from kafka.admin import KafkaAdminClient

        servers = ",".join(self.node(i).address for i in self.admin_nodes())
        if not servers:
            raise ClusterError(f"no node of the cluster in {self.workdir} is reachable")
        client = KafkaAdminClient(bootstrap_servers=servers, client_id="kreplica-admin",
                                  request_timeout_ms=self.admin_request_timeout_ms,
                                  reconnect_backoff_max_ms=500)
        try:
            yield client
        finally:
            client.close()

    def _poll(self, what: str, timeout: float, probe: Callable[[], T]) -> T:
        """Call ``probe`` until it returns without ``_NotYet``/Kafka errors, or time out
        with a message naming what was expected, what was last seen and the logs."""
        from kafka.errors import KafkaError

        seen: list[str] = ["nothing yet"]

        @retry(stop=stop_after_delay(timeout), wait=wait_fixed(POLL_S), reraise=False,
               retry=retry_if_exception_type((_NotYet, KafkaError, OSError, ValueError)))
        def attempt() -> T:
            for node in self.nodes:
                self.check_node_alive(node.node_id)
            try:
                return probe()
            except Exception as exc:
                seen[0] = str(exc) or type(exc).__name__
                raise

        try:
            return attempt()
        except RetryError:
            logs = ", ".join(str(p) for p in self.log_files().values())
            raise ClusterError(f"expected {what} within {timeout:.0f} s; last seen: {seen[0]}; "
                               f"server logs: {logs}") from None

    # -- roles ---------------------------------------------------------------------------
    def registered_brokers(self) -> set[int]:
        """Brokers registered and unfenced, per DescribeCluster."""
        with self.admin() as admin:
            brokers = admin.describe_cluster()["brokers"]
        return {b["broker_id"] for b in brokers if not b.get("is_fenced", False)}

    def active_controller(self) -> int:
        with self.admin() as admin:
            quorum = admin.describe_metadata_quorum()
        leader = quorum["topics"][0]["partitions"][0]["leader_id"]
        if leader is None or leader < 0:
            raise ClusterError(f"no KRaft quorum leader elected; quorum: {quorum}")
        return leader

    def partition_state(self, topic: str, partition: int) -> PartitionState:
        with self.admin() as admin:
            described = admin.describe_topics([topic])
        for t in described:
            if t.get("error_code"):
                raise ValueError(f"topic {topic}: error code {t['error_code']}")
            for p in t["partitions"]:
                if p["partition_index"] == partition:
                    leader = p["leader_id"] if p["leader_id"] >= 0 else None
                    return PartitionState(topic, partition, leader, p["leader_epoch"],
                                          tuple(p["replica_nodes"]), tuple(p["isr_nodes"]))
        raise ValueError(f"partition {topic}-{partition} not in metadata")

    def wait_for_leader(self, topic: str, partition: int, *, not_in: set[int] = frozenset(),
                        timeout: float = 30.0) -> PartitionState:
        def probe() -> PartitionState:
            state = self.partition_state(topic, partition)
            if state.leader is None or state.leader in not_in:
                raise _NotYet(f"leader {state.leader}, isr {state.isr}")
            return state

        excluded = f" outside {sorted(not_in)}" if not_in else ""
        return self._poll(f"a leader{excluded} for {topic}-{partition}", timeout, probe)

    # -- readiness -----------------------------------------------------------------------
    def wait_ready(self, timeout: float = 60.0) -> None:
        """Every node's port open, every broker registered and unfenced, a quorum leader."""
        deadline = time.monotonic() + timeout
        expected = {n.node_id for n in self.nodes}

        def ports() -> None:
            closed = [n.node_id for n in self.nodes if not _port_open(n.host, n.port)]
            if closed:
                raise _NotYet(f"ports of nodes {closed} closed")

        def registered() -> None:
            brokers = self.registered_brokers()
            if brokers != expected:
                raise _NotYet(f"registered unfenced brokers {sorted(brokers)}")
            self.active_controller()

        self._poll("every node listening", timeout, ports)
        self._poll(f"brokers {sorted(expected)} registered and a quorum leader",
                   max(1.0, deadline - time.monotonic()), registered)

    def wait_node_registered(self, node_id: int, timeout: float = 60.0) -> None:
        node = self.node(node_id)

        def probe() -> None:
            if not _port_open(node.host, node.port):
                raise _NotYet(f"port {node.port} closed")
            if node_id not in self.registered_brokers():
                raise _NotYet(f"node {node_id} not registered or fenced")

        try:
            self._poll(f"node {node_id} registered again", timeout, probe)
        except ClusterError as exc:
            raise NodeError(str(exc), node_id, str(node.log_file)) from None

    def wait_healthy(self, topics: list[str] | None = None, timeout: float = 60.0) -> None:
        expected = {n.node_id for n in self.nodes}

        def probe() -> None:
            down = [i for i in expected if self.node_state(i) is not NodeState.RUNNING]
            if down:
                raise _NotYet(f"nodes {down} not running")
            brokers = self.registered_brokers()
            if brokers != expected:
                raise _NotYet(f"registered unfenced brokers {sorted(brokers)}")
            with self.admin() as admin:
                described = admin.describe_topics(topics)
            for t in described:
                if t.get("is_internal") or (topics is None and t["name"].startswith("__")):
                    continue
                for p in t["partitions"]:
                    if p["leader_id"] < 0 or set(p["isr_nodes"]) != set(p["replica_nodes"]):
                        raise _NotYet(f"{t['name']}-{p['partition_index']}: leader "
                                      f"{p['leader_id']}, isr {p['isr_nodes']} of "
                                      f"{p['replica_nodes']}")

        self._poll("every node registered and every partition with a leader and a full ISR",
                   timeout, probe)

    # -- topics --------------------------------------------------------------------------
    def create_topics(self, topics: list[TopicSpec], timeout: float = 30.0) -> None:
        from . import config

        version = self.spec.kafka_version or self.describe().get("kafka_version") or "4"
        request = {t.name: {"num_partitions": t.partitions,
                            "replication_factor": t.replication_factor,
                            "configs": config.topic_configs(str(version), t.config)}
                   for t in topics}
        with self.admin() as admin:
            admin.create_topics(request, timeout_ms=int(timeout * 1000))
        self.wait_healthy([t.name for t in topics], timeout)

    def delete_topics(self, names: list[str], timeout: float = 30.0) -> None:
        with self.admin() as admin:
            admin.delete_topics(names, timeout_ms=int(timeout * 1000))

        def gone() -> None:
            with self.admin() as admin:
                left = set(names) & set(admin.list_topics())
            if left:
                raise _NotYet(f"topics {sorted(left)} still listed")

        self._poll(f"topics {names} deleted", timeout, gone)

    def log_end_offsets(self, topic: str, partition: int) -> dict[int, int]:
        """Per replica: the high watermark minus the lag each broker reports for its log
        (DescribeLogDirs), i.e. the log end offset of every replica at or below the HW."""
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        state = self.partition_state(topic, partition)
        tp = TopicPartition(topic, partition)
        reachable = set(self.admin_nodes())
        with self.admin() as admin:
            high = admin.list_partition_offsets({tp: OffsetSpec.LATEST})[tp].offset
            dirs = admin.describe_log_dirs({topic: [partition]},
                                           brokers=[b for b in state.replicas if b in reachable])
        out: dict[int, int] = {}
        for entry in dirs:
            for log_dir in entry["log_dirs"]:
                for t in log_dir.get("topics", []):
                    for p in t.get("partitions", []):
                        if t.get("name") == topic and p.get("partition_index") == partition \
                                and not p.get("is_future_key"):
                            out[entry["broker"]] = high - max(0, p.get("offset_lag", 0))
        return out
