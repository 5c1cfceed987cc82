"""The half of the Cluster API that Kafka's own admin APIs answer, shared by every backend.

Roles (leader, ISR, active controller), topics and the health gate come from
DescribeCluster / DescribeQuorum / Metadata (metadata and offsets of many partitions at once:
``offsets.OffsetsMixin``) through one cached kafka-python admin client bootstrapped from
running nodes, polled with bounded waits; so the process and docker backends report them
identically. Moved here from the process backend. A backend supplies lifecycle, node
states and faults, and implements
``_check_alive(node_ids)`` (raise ``NodeError`` with the log when a node died unasked) and,
where it can cut links, narrows ``_live_nodes`` to the nodes whose view is current.
A subclass sets ``_lock`` (an RLock), ``_admin_client = None``, ``_admin_key = None``,
``_nodes``, ``workdir`` and ``kafka_version`` in its constructor.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterator
from typing import Any

from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from ...errors import ClusterError, NodeError
from ..base import Cluster, Node, NodeState, PartitionState, TopicSpec
from ..kafka import config as kconfig
from .clients import connection_manager
from .offsets import NotYet, OffsetsMixin

POLL_S = 0.1
ADMIN_REQUEST_TIMEOUT_MS = 5000


def poll_until(check: Callable[[], Any], timeout: float, what: str,
                describe_failure: Callable[[str], Exception]) -> Any:
    """Poll ``check`` until it returns without raising ``NotYet`` and return its value; raise
    the exception built by ``describe_failure(last_seen)`` at the deadline. Unlike
    ``waits.wait_for`` it hands back what ``check`` fetched, lets any other error end the wait,
    and lets the caller choose the error (a node's ``NodeError``, a ``ClusterError``)."""
    last: list[str] = ["nothing observed yet"]

    def attempt() -> Any:
        try:
            return check()
        except NotYet as exc:
            last[0] = str(exc)
            raise

    try:
        for retry in Retrying(stop=stop_after_delay(max(timeout, 0.0)), wait=wait_fixed(POLL_S),
                              retry=retry_if_exception_type(NotYet), reraise=False):
            with retry:
                return attempt()
    except RetryError:
        raise describe_failure(f"waited {timeout:.0f} s for {what}; last seen: {last[0]}") \
            from None
    raise AssertionError("unreachable")  # pragma: no cover


def _transient(exc: BaseException) -> bool:
    """Client errors worth a retry with a fresh admin client."""
    from kafka.errors import KafkaError, UnknownBrokerIdError

    if isinstance(exc, UnknownBrokerIdError):  # stale metadata right after a node restart
        return True
    if isinstance(exc, KafkaError):
        return bool(exc.retriable or exc.invalid_metadata)
    return isinstance(exc, (OSError, TimeoutError))


def _port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


class AdminCluster(OffsetsMixin, Cluster):
    """Roles, topics, offsets and health through the admin APIs (see module docstring)."""

    _admin_nodes: list[int] = []  # the nodes the cached admin client was built from
    _ask_turn = -1  # whose turn it is among them, while a node is cut off

    def _check_alive(self, node_ids: list[int] | None = None) -> None:
        """Raise ``NodeError`` when one of ``node_ids`` (default: all) died unasked."""
        raise NotImplementedError

    def _logs_hint(self, node_ids: list[int] | None = None) -> str:
        chosen = [n for n in self._nodes if node_ids is None or n.node_id in node_ids]
        return "logs: " + ", ".join(f"node {n.node_id} {n.log_file}" for n in chosen)

    def _wait_ready(self, timeout: float) -> None:
        expected = len(self._nodes)

        def ready() -> None:
            self._check_alive()
            seen = self._registration()
            if seen != "ok":
                raise NotYet(seen)

        try:
            poll_until(ready, timeout, f"{expected} unfenced brokers and a quorum leader",
                        lambda msg: ClusterError(f"cluster in {self.workdir} not ready: {msg}; "
                                                 f"{self._logs_hint()}"))
        except NodeError as exc:
            raise ClusterError(f"cluster in {self.workdir} did not start: {exc}; "
                               f"{self._logs_hint()}") from None

    def _registration(self, node_ids: list[int] | None = None) -> str:
        """'ok' when the given (default: all) nodes are unfenced brokers and the quorum has a
        leader; otherwise a description of what was seen."""
        wanted = {n.node_id for n in self._nodes} if node_ids is None else set(node_ids)
        try:
            from kafka.protocol.admin import DescribeClusterRequest

            admin = self._admin()
            cluster = self._ask(admin, DescribeClusterRequest(
                include_cluster_authorized_operations=False, include_fenced_brokers=True))
            if cluster.error_code:
                return f"DescribeCluster error code {cluster.error_code}"
            cluster = cluster.to_dict()
            unfenced = {b["broker_id"] for b in cluster.get("brokers", [])
                        if not b.get("is_fenced", False)}
            if not wanted <= unfenced:
                return f"unfenced brokers {sorted(unfenced)}, expected {sorted(wanted)}"
            leader = self._quorum_leader(admin)
            if leader is None or leader < 0:
                return "no quorum leader yet"
            return "ok"
        except NotYet as exc:
            return str(exc)
        except Exception as exc:  # client errors while the cluster forms: keep polling
            self._invalidate_admin()
            return f"admin client error: {type(exc).__name__}: {exc}"

    def _live_nodes(self) -> list[Node]:
        return [n for n in self._nodes if self.node_state(n.node_id) is NodeState.RUNNING]

    def _invalidate_admin(self) -> None:
        with self._lock:
            client, self._admin_client, self._admin_key = self._admin_client, None, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def _admin(self):
        """An admin client bootstrapped only from running nodes (never a paused one: a
        request to a SIGSTOPped broker hangs until its timeout)."""
        from kafka import KafkaAdminClient

        with self._lock:
            live = self._live_nodes()
            listening = [n for n in live if _port_open(n.host, n.port)]
            if not listening:
                raise NotYet(f"no running node accepts connections yet "
                             f"(running: {[n.node_id for n in live]})")
            key = ",".join(n.address for n in listening)
            self._admin_nodes = [n.node_id for n in listening]
            if self._admin_client is not None and self._admin_key == key:
                return self._admin_client
            self._invalidate_admin()
            client = KafkaAdminClient(
                bootstrap_servers=key, client_id="kreplica-cluster",
                request_timeout_ms=ADMIN_REQUEST_TIMEOUT_MS, bootstrap_timeout_ms=5000,
                reconnect_backoff_ms=50, reconnect_backoff_max_ms=500,
                metadata_max_age_ms=1000)
            self._admin_client, self._admin_key = client, key
            return client

    @contextlib.contextmanager
    def _admin_call(self, what: str) -> Iterator[Any]:
        """An admin client for one call; transient client errors (connection lost, timeout,
        stale metadata) become ``NotYet`` and are retried with a fresh client."""
        try:
            yield self._admin()
        except NotYet:
            raise
        except Exception as exc:
            if not _transient(exc):
                raise
            self._invalidate_admin()
            raise NotYet(f"{what}: {type(exc).__name__}: {exc}") from exc

    def _cut_off(self) -> bool:
        """Whether some running node is cut off from its peers (a backend that can cut links
        overrides this)."""
        return False

    def _ask(self, admin: Any, request: Any, node_id: int | None = None) -> Any:
        """Send one request through the admin client's connections to ``node_id``. Without
        one the client picks a broker, except while some node is cut off from its peers
        (such a broker answers with its own stale view: a leader it no longer is) or paused
        (the client still counts it as connected, and a request to it waits out the whole
        request timeout): then the request goes to the live nodes the client was built
        from, in turn."""
        if node_id is None and (self._cut_off() or any(
                self.node_state(n.node_id) is NodeState.PAUSED for n in self._nodes)):
            nodes = self._admin_nodes or [None]
            self._ask_turn += 1
            node_id = nodes[self._ask_turn % len(nodes)]
        manager = connection_manager(admin)

        async def send() -> Any:
            return await manager.send(request, node_id=node_id)
        return manager.run(send)

    def _describe_quorum(self, admin: Any) -> dict[str, Any]:
        """DescribeQuorum's partition of ``__cluster_metadata`` (routed as ``_ask`` does)."""
        from kafka.errors import for_code
        from kafka.protocol.admin import DescribeQuorumRequest

        _Topic = DescribeQuorumRequest.TopicData
        request = DescribeQuorumRequest(topics=[_Topic(
            topic_name="__cluster_metadata", partitions=[_Topic.PartitionData(partition_index=0)])])
        response = self._ask(admin, request)
        if response.error_code:
            raise NotYet(f"DescribeQuorum: {for_code(response.error_code).__name__}")
        partition = response.to_dict()["topics"][0]["partitions"][0]
        if partition.get("error_code"):
            raise NotYet(f"DescribeQuorum error: {for_code(partition['error_code']).__name__}")
        return partition

    def _quorum_leader(self, admin: Any) -> int | None:
        return self._describe_quorum(admin).get("leader_id")

    def _retrying(self, what: str, fetch: Callable[[], Any], timeout: float) -> Any:
        return poll_until(fetch, timeout, what, lambda msg: ClusterError(
            f"{msg}; {self._logs_hint()}"))

    def active_controller(self, timeout: float = 30.0) -> int:
        def fetch() -> int:
            with self._admin_call("DescribeQuorum") as admin:
                leader = self._quorum_leader(admin)
            if leader is None or leader < 0:
                raise NotYet("no quorum leader")
            if self.node_state(leader) is not NodeState.RUNNING:
                raise NotYet(f"quorum leader {leader} is not running (stale answer)")
            return leader
        return self._retrying("a KRaft quorum leader (DescribeQuorum)", fetch, timeout)

    def quorum(self, timeout: float = 30.0) -> dict[str, Any]:
        """The raw DescribeQuorum answer (leader, epoch, voters with log end offsets). The
        request is idempotent: a transient client error or an error code is asked again,
        within ``timeout`` s; then ``ClusterError`` says what was waited for and seen."""
        def fetch() -> dict[str, Any]:
            with self._admin_call("DescribeQuorum") as admin:
                return self._describe_quorum(admin)
        return self._retrying("a DescribeQuorum answer (voters, observers, leader)", fetch,
                              timeout)

    def wait_for_leader(self, topic: str, partition: int, *, not_in: set[int] = frozenset(),
                        timeout: float = 30.0) -> PartitionState:
        def fetch() -> PartitionState:
            state = self.partition_state(topic, partition, timeout=timeout)
            if state.leader is None or state.leader in not_in:
                raise NotYet(f"leader {state.leader} (epoch {state.leader_epoch}), "
                             f"isr {list(state.isr)}")
            return state
        excluded = f" outside {sorted(not_in)}" if not_in else ""
        return self._retrying(f"a leader of {topic}-{partition}{excluded}", fetch, timeout)

    def create_topics(self, topics: list[TopicSpec], timeout: float = 30.0) -> None:
        from kafka.admin import NewTopic
        from kafka.errors import KafkaError, TopicAlreadyExistsError

        assert self.kafka_version is not None
        new = [NewTopic(t.name, t.partitions, t.replication_factor,
                        topic_configs=kconfig.topic_configs(self.kafka_version, t.config))
               for t in topics]
        attempts = [0]

        def create() -> None:
            attempts[0] += 1
            with self._admin_call("create_topics") as admin:
                try:
                    admin.create_topics(new, timeout_ms=int(timeout * 1000))
                except TopicAlreadyExistsError:
                    if attempts[0] == 1:  # a retry finds what the lost first answer made
                        raise
        try:
            self._retrying(f"topics {[t.name for t in topics]} created", create, timeout)
        except KafkaError as exc:
            raise ClusterError(
                f"creating topics {[t.name for t in topics]} failed: {type(exc).__name__}: "
                f"{exc}; {self._logs_hint()}") from None
        self.wait_healthy([t.name for t in topics], timeout=timeout)
        # a new partition's ISR is full in metadata before its followers have created it
        # locally (seen 6 s apart on a loaded machine): wait until every replica answers
        def answered() -> None:
            states = self.partition_states([t.name for t in topics], timeout)
            ends = self.replica_log_end_offsets(states)
            errors = {f"{t}-{p}": e for (t, p), by_node in ends.items()
                      for e in by_node.values() if isinstance(e, str)}
            if errors:
                raise NotYet(f"replicas not answering yet: {errors}")
        self._retrying("every replica of the new partitions answering", answered, timeout)

    def delete_topics(self, names: list[str], timeout: float = 30.0) -> None:
        from kafka.errors import KafkaError, UnknownTopicOrPartitionError

        def delete() -> None:
            with self._admin_call("delete_topics") as admin, \
                    contextlib.suppress(UnknownTopicOrPartitionError):
                admin.delete_topics(names, timeout_ms=int(timeout * 1000))

        def gone() -> None:
            with self._admin_call("list_topics") as admin:
                left = set(admin.list_topics()) & set(names)
            if left:
                raise NotYet(f"topics still listed: {sorted(left)}")
        try:
            self._retrying(f"topics {names} deleted", delete, timeout)
        except KafkaError as exc:
            raise ClusterError(f"deleting topics {names} failed: {type(exc).__name__}: {exc}; "
                               f"{self._logs_hint()}") from None
        self._retrying(f"topics {names} deleted", gone, timeout)

    def wait_healthy(self, topics: list[str] | None = None, timeout: float = 60.0) -> None:
        not_running = {n.node_id: self.node_state(n.node_id).value for n in self._nodes
                       if self.node_state(n.node_id) is not NodeState.RUNNING}
        if not_running:
            raise ClusterError(f"cluster in {self.workdir} cannot become healthy: nodes "
                               f"{not_running} are not running (expected all running; call "
                               f"heal() or start_node()); {self._logs_hint()}")

        def healthy() -> None:
            self._check_alive()
            seen = self._registration()
            if seen != "ok":
                raise NotYet(seen)
            names = topics
            if names is None:
                with self._admin_call("list_topics") as admin:
                    names = [t for t in admin.list_topics() if not t.startswith("__")]
            if names:
                self._every_broker_agrees(list(names))
        poll_until(healthy, timeout, "every node registered and every ISR full as every "
                   "broker sees it",
                    lambda msg: ClusterError(f"cluster in {self.workdir} not healthy: {msg}; "
                                             f"{self._logs_hint()}"))

    def _every_broker_agrees(self, names: list[str]) -> None:
        """``NotYet`` until every broker the admin client reaches shows each partition of
        ``names`` with a leader and a full ISR, and all show the same leader and epoch. One
        broker's answer is not enough: a broker still replaying the metadata log answers
        with an older ISR (CI runs read [1, 2] right after one broker had shown it full).
        Every running node must be among them: a restarted broker listens only once its new
        incarnation is registered, and until then the ISR may still hold its old one (a
        killed follower's ISR read full, then shrank once it came back)."""
        # checked first: while a restarted node is silent, the brokers' views are not asked
        # (``_admin_nodes`` is fresh: the caller's ``_registration`` built the client)
        unheard = sorted({n.node_id for n in self._live_nodes()} - set(self._admin_nodes))
        if unheard:
            raise NotYet(f"nodes {unheard} run but do not accept connections yet")
        seen: dict[tuple[str, int], tuple[int | None, int]] = {}
        for node in list(self._admin_nodes) or [None]:
            where = f" (node {node}'s metadata)" if node is not None else ""
            for name, states in self._describe_topics(names, node).items():
                for state in states:
                    part = f"{name}-{state.partition}"
                    if state.leader is None:
                        raise NotYet(f"{part} has no leader{where}")
                    if not state.isr_full:
                        raise NotYet(f"{part} isr {list(state.isr)} of replicas "
                                     f"{list(state.replicas)}{where}")
                    view = seen.setdefault((name, state.partition),
                                           (state.leader, state.leader_epoch))
                    if view != (state.leader, state.leader_epoch):
                        raise NotYet(f"{part}: leader {state.leader} epoch "
                                     f"{state.leader_epoch}{where}, another broker shows "
                                     f"leader {view[0]} epoch {view[1]}")

    def wait_registered(self, node_id: int, timeout: float) -> None:
        """Wait until ``node_id`` is an unfenced broker again (after a start or resume)."""
        node = self.node(node_id)

        def registered() -> None:
            self._check_alive([node_id])
            seen = self._registration([node_id])
            if seen != "ok":
                raise NotYet(seen)
        poll_until(registered, timeout, f"node {node_id} registered unfenced",
                    lambda msg: NodeError(f"node {node_id} did not rejoin: {msg}; "
                                          f"log: {node.log_file}", node_id, str(node.log_file)))
