"""The system under test: one partition of a topic on a real cluster, reached only through
the Kafka protocol (kafka-python's producer, consumer and admin client) plus the Cluster
API for node restarts.

Clients are expensive to start (metadata bootstrap, connections), so one ``LogSystem`` keeps
them for the whole session and every example's topic reuses them. Every wait is bounded and
says what it waited for.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..cluster.admin import idempotence
from ..cluster.base import TopicSpec
from ..errors import ClusterError
from ..waits import wait_for
from .model import Record

if TYPE_CHECKING:  # pragma: no cover
    from ..cluster.base import Cluster

PARTITION = 0
REPLICATION = 3
ISOLATIONS = ("read_uncommitted", "read_committed")
COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
REQUEST_TIMEOUT_MS = 10000
RETRY_S = 15.0


class OutOfRange(Exception):
    """The broker answered OFFSET_OUT_OF_RANGE."""


class SystemFailure(AssertionError):
    """The system failed an operation the model expects to succeed (expected / seen);
    ``last_error``: a retried call's last exception, if any."""

    last_error: BaseException | None = None


class DeleteRecordsUnanswered(SystemFailure):
    """Every DeleteRecords attempt within the bound timed out (RequestTimedOut): the broker
    waits for a replica's log start that never reaches the offset (docs/log-model.md)."""


def retrying(call: Callable[[], Any], what: str, timeout: float = RETRY_S,
             on_stale: Callable[[], None] | None = None) -> Any:
    """``call()``, retried (bounded) while Kafka answers with a retriable error, such as
    OFFSET_NOT_AVAILABLE from a new leader whose high watermark has not caught up yet.

    UnknownBrokerIdError is the client's own metadata lagging (the admin client's cached
    controller is a node that was down at its last metadata refresh): ``on_stale`` drops the
    client so that the next attempt asks afresh, and the call is retried like the others."""
    from kafka.errors import KafkaError, UnknownBrokerIdError

    answer: list[Any] = []
    ruled_out: list[str] = []  # ends the wait at once (wait_for retries through exceptions)
    last: list[BaseException | None] = [None]  # the last attempt's Kafka error, if any

    def attempt() -> str | None:
        last[0] = None
        try:
            answer[:] = [call()]
        except UnknownBrokerIdError as exc:
            last[0] = exc
            if on_stale is not None:
                on_stale()
            return f"{type(exc).__name__}: {exc} (the client's metadata)"
        except KafkaError as exc:
            last[0] = exc
            if not (exc.retriable or exc.invalid_metadata):  # an answer the model rules out
                ruled_out.append(f"{what}: expected an answer, seen {type(exc).__name__}: "
                                 f"{exc}")
                return None
            return f"{type(exc).__name__}: {exc}"
        return None
    try:
        wait_for(attempt, timeout, what, poll=0.1)
    except ClusterError as exc:
        failure = SystemFailure(str(exc))
        failure.last_error = last[0]
        raise failure from None
    if ruled_out:
        raise SystemFailure(ruled_out[0])
    return answer[0]


class LogSystem:
    """Kafka clients for one cluster, shared by every example of a session."""

    def __init__(self, cluster: Cluster, read_timeout_s: float = 10.0,
                 retry_s: float = RETRY_S):
        self.cluster = cluster
        self.read_timeout_s = read_timeout_s
        self.retry_s = retry_s  # how long a retriable error may last before it is a failure
        self._producers: dict[tuple[str, str], Any] = {}
        self._consumers: dict[str, Any] = {}
        self._admin: Any = None

    # -- clients --------------------------------------------------------------------------
    def admin(self) -> Any:
        if self._admin is None:
            from kafka import KafkaAdminClient

            self._admin = KafkaAdminClient(
                bootstrap_servers=self.cluster.bootstrap_servers, client_id="kreplica-logmodel",
                request_timeout_ms=REQUEST_TIMEOUT_MS, reconnect_backoff_max_ms=500,
                metadata_max_age_ms=1000)
        return self._admin

    def _drop_admin(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            with contextlib.suppress(Exception):
                admin.close()

    def _controller_call(self, call: Callable[[Any], Any], what: str) -> Any:
        """An admin request the client sends to the controller it cached, retried through
        the client's stale metadata after a restart (a harness hiccup, not an answer)."""
        return retrying(lambda: call(self.admin()), what, timeout=self.retry_s,
                        on_stale=self._drop_admin)

    def _producer(self, acks: str, compression: str) -> Any:
        key = (acks, compression)
        if key not in self._producers:
            from kafka import KafkaProducer

            idempotence.install()
            self._producers[key] = KafkaProducer(
                bootstrap_servers=self.cluster.bootstrap_servers,
                acks="all" if acks == "all" else 1,
                enable_idempotence=acks == "all",
                compression_type=None if compression == "none" else compression,
                linger_ms=60000, batch_size=1 << 20, max_request_size=4 << 20,
                request_timeout_ms=REQUEST_TIMEOUT_MS, max_in_flight_requests_per_connection=1,
                reconnect_backoff_max_ms=500, metadata_max_age_ms=1000)
        return self._producers[key]

    def _consumer(self, isolation: str) -> Any:
        if isolation not in self._consumers:
            from kafka import KafkaConsumer

            self._consumers[isolation] = KafkaConsumer(
                bootstrap_servers=self.cluster.bootstrap_servers, group_id=None,
                enable_auto_commit=False, auto_offset_reset="none",
                isolation_level=isolation, fetch_max_wait_ms=100,
                request_timeout_ms=REQUEST_TIMEOUT_MS, reconnect_backoff_max_ms=500,
                metadata_max_age_ms=1000, max_poll_records=500)
        return self._consumers[isolation]

    def close(self) -> None:
        clients = [*self._producers.values(), *self._consumers.values(), self._admin]
        self._producers, self._consumers, self._admin = {}, {}, None
        for client in clients:
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close(timeout=2) if hasattr(client, "flush") else client.close()

    @staticmethod
    def _tp(topic: str) -> Any:
        from kafka import TopicPartition

        return TopicPartition(topic, PARTITION)

    # -- topics ---------------------------------------------------------------------------
    def create_topic(self, topic: str, segment_bytes: int,
                     extra: dict[str, str] | None = None) -> None:
        """One partition, replication 3, min ISR 2, ``segment_bytes`` segments, plus
        ``extra`` topic settings (a tiered topic's)."""
        self.cluster.create_topics([TopicSpec(topic, 1, REPLICATION, {
            "segment.bytes": str(segment_bytes), "min.insync.replicas": "2", **(extra or {})})])

    def set_config(self, topic: str, settings: dict[str, str | None]) -> None:
        """Alter topic configs incrementally; None resets a key to the broker default."""
        from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

        configs = {k: (AlterConfigOp.DELETE, None) if v is None else (AlterConfigOp.SET, v)
                   for k, v in settings.items()}
        result = self.admin().alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)],
            raise_on_unknown=False)
        status = result.get("topic", {}).get(topic)
        if status != "OK":
            raise SystemFailure(f"altering {topic} configs {settings}: expected OK, seen {status}")

    # -- the log --------------------------------------------------------------------------
    def produce(self, topic: str, records: list[tuple[bytes | None, bytes | None, int]],
                compression: str, acks: str) -> list[int]:
        """Send the records as one batch; returns their acknowledged offsets."""
        producer = self._producer(acks, compression)
        futures = [producer.send(topic, key=k, value=v, partition=PARTITION, timestamp_ms=ts)
                   for k, v, ts in records]
        producer.flush(timeout=REQUEST_TIMEOUT_MS / 1000 * 3)
        offsets = []
        for i, future in enumerate(futures):
            try:
                offsets.append(future.get(timeout=REQUEST_TIMEOUT_MS / 1000).offset)
            except Exception as exc:
                raise SystemFailure(f"produce to {topic} (acks={acks}, {compression}): record "
                                   f"#{i} expected acknowledged, seen {type(exc).__name__}: "
                                   f"{exc}") from exc
        return offsets

    def list_offset(self, topic: str, spec: str | int, isolation: str = "read_uncommitted"
                    ) -> int | None:
        """ListOffsets: ``earliest``, ``earliest-local`` (the leader's local log start under
        tiered storage, KIP-405's timestamp -4), ``latest`` or a timestamp; None when no
        record has a timestamp at or after it."""
        from kafka.protocol.consumer.offsets import IsolationLevel, OffsetSpec, OffsetTimestamp

        tp = self._tp(topic)
        wire = {"earliest": OffsetSpec.EARLIEST, "latest": OffsetSpec.LATEST,
                "earliest-local": OffsetSpec.EARLIEST_LOCAL}.get(
            spec, OffsetTimestamp(spec) if isinstance(spec, int) else None)
        level = IsolationLevel.READ_COMMITTED if isolation == "read_committed" \
            else IsolationLevel.READ_UNCOMMITTED
        answer = retrying(lambda: self.admin().list_partition_offsets(
            {tp: wire}, isolation_level=level), f"ListOffsets {spec} of {topic}",
            timeout=self.retry_s)
        offset = answer[tp].offset
        return None if offset < 0 else offset

    def read(self, topic: str, offset: int, count: int, isolation: str) -> list[Record]:
        """Fetch from ``offset`` until ``count`` records came back (or the read timeout);
        with ``count`` 0, one short poll that must return nothing."""
        from kafka.errors import KafkaError, OffsetOutOfRangeError

        consumer = self._consumer(isolation)
        tp = self._tp(topic)
        if consumer.assignment() != {tp}:
            consumer.assign([tp])
        consumer.seek(tp, offset)
        seen: list[Record] = []
        deadline = time.monotonic() + (0.3 if count == 0 else self.read_timeout_s)
        while time.monotonic() < deadline and (count == 0 or len(seen) < count):
            try:
                polled = consumer.poll(timeout_ms=100, max_records=500)
            except OffsetOutOfRangeError as exc:
                raise OutOfRange(str(exc)) from None
            except KafkaError as exc:  # the broker failed the fetch (a remote read, ...)
                raise SystemFailure(f"read {isolation} of {topic} from offset {offset}: "
                                    f"expected records, seen {type(exc).__name__}: "
                                    f"{exc}") from None
            for rec in polled.get(tp, []):
                seen.append(Record(rec.offset, rec.key, rec.value, rec.timestamp))
        return seen

    def delete_records(self, topic: str, offset: int) -> int:
        """DeleteRecords up to ``offset``; returns the low watermark (OutOfRange past HW)."""
        from kafka.errors import OffsetOutOfRangeError, RequestTimedOutError

        tp = self._tp(topic)

        def call() -> Any:
            try:
                return self.admin().delete_records({tp: offset}, timeout_ms=REQUEST_TIMEOUT_MS)
            except OffsetOutOfRangeError as exc:  # an answer, not an error to retry
                return exc

        # retried (bounded) like ListOffsets: a CI run's DeleteRecords met ECONNREFUSED from a
        # node restarted two steps before, and the test ended in Hypothesis' "inconsistent
        # data generation" instead of a verdict; deleting up to an offset again is the same
        try:
            answer = retrying(call, f"DeleteRecords {topic} up to offset {offset}",
                              timeout=self.retry_s)
        except SystemFailure as exc:
            if isinstance(exc.last_error, RequestTimedOutError):
                raise DeleteRecordsUnanswered(str(exc)) from None
            raise
        if isinstance(answer, OffsetOutOfRangeError):
            raise OutOfRange(str(answer))
        return answer[tp]["low_watermark"]

    # -- nodes ----------------------------------------------------------------------------
    def replicas(self, topic: str) -> tuple[int | None, tuple[int, ...]]:
        state = self.cluster.partition_state(topic, PARTITION)
        return state.leader, state.replicas

    def restart(self, topic: str, role: str, hard: bool, timeout: float = 90.0) -> int:
        """Stop the partition's leader or first follower (SIGKILL when ``hard``), start it
        on its old log dir, and wait until it is back in the ISR. Returns the node id."""
        leader, replicas = self.replicas(topic)
        node = leader if role == "leader" else next(r for r in replicas if r != leader)
        if hard:
            self.cluster.kill(node)
        else:
            self.cluster.terminate(node)
        self.cluster.start_node(node, timeout=timeout)
        self.cluster.wait_healthy([topic], timeout=timeout)
        return node

    def move_leader(self, topic: str, follower: int, timeout: float = 30.0) -> int:
        """Make a follower the preferred replica (a reassignment that only reorders the
        replicas) and run a preferred election; returns the new leader."""
        leader, replicas = self.replicas(topic)
        followers = [r for r in replicas if r != leader]
        target = followers[follower % len(followers)]
        order = [target] + [r for r in replicas if r != target]
        tp = self._tp(topic)
        errors = self._controller_call(lambda admin: admin.alter_partition_reassignments(
            {tp: order}), f"reordering {topic} replicas to {order}")
        if errors.get(tp) is not None:
            raise SystemFailure(f"reordering {topic} replicas to {order}: expected accepted, "
                               f"seen {errors[tp].__name__}")

        def reordered() -> str | None:
            pending = self._controller_call(
                lambda admin: admin.list_partition_reassignments([tp]),
                f"listing the reassignments of {topic}")
            _, now = self.replicas(topic)
            if pending or list(now) != order:
                return f"replicas {list(now)}, pending reassignments {pending}"
            return None
        wait_for(reordered, timeout, f"{topic} replicas reordered to {order}")

        def elected() -> str | None:  # the controller refuses while the target is out of
            from kafka.errors import PreferredLeaderNotAvailableError, UnknownBrokerIdError

            try:  # the ISR (load), or the client's cached controller is stale (a restart)
                self.admin().elect_leaders(0, {topic: [PARTITION]})
            except PreferredLeaderNotAvailableError as exc:
                return f"{type(exc).__name__}; ISR {list(self.cluster.isr(topic, PARTITION))}"
            except UnknownBrokerIdError as exc:
                self._drop_admin()
                return f"{type(exc).__name__}: {exc} (the client's metadata)"
            return None
        wait_for(elected, timeout, f"a preferred election of {topic} onto node {target}")
        state = self.cluster.wait_for_leader(topic, PARTITION, not_in=set(replicas) - {target},
                                             timeout=timeout)
        self.cluster.wait_healthy([topic], timeout=timeout)
        return state.leader
