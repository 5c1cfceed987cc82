"""A node's clock read from the node itself: the ``LogAppendTime`` of a record it appended.

The probe topic has one partition per node, each with that node as its only replica, and
``message.timestamp.type=LogAppendTime``: the broker stamps each record with its own wall
clock (``System.currentTimeMillis``, which libfaketime moves) and returns the stamp in the
produce answer. A node's skew is that stamp minus the middle of the send's round trip on
this machine's true clock, so its error is at most half a round trip (milliseconds here).
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from ..cluster.admin.clients import close_producer
from ..errors import ClusterError
from ..waits import wait_for

log = logging.getLogger(__name__)

PROBE_TOPIC = "kreplica-clock-probe"
SEND_TIMEOUT_S = 5.0
CLOSE_TIMEOUT_S = 2.0
CREATE_TIMEOUT_S = 60.0  # after a skewed quorum leader fenced brokers, they re-register first


class ClockProbe:
    """Reads the clocks of ``cluster``'s nodes; ``close`` when done."""

    def __init__(self, cluster: Any):
        self.cluster = cluster
        self.ids = sorted(n.node_id for n in cluster.nodes)
        self._ensure_topic()
        from kafka import KafkaProducer

        self.producer = KafkaProducer(bootstrap_servers=cluster.live_bootstrap_servers(),
                                      acks=1, linger_ms=0, retries=0,
                                      request_timeout_ms=int(SEND_TIMEOUT_S * 1000))

    def _ensure_topic(self) -> None:
        """The probe topic, partition i on the i-th node only (made once per cluster)."""
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import KafkaTimeoutError, RequestTimedOutError, TopicAlreadyExistsError

        admin = KafkaAdminClient(bootstrap_servers=self.cluster.live_bootstrap_servers())
        try:
            # a timed-out CreateTopics may still have made the topic (CI: a restore's timed
            # out at 30 s under load): the bounded wait for its leaders below decides
            with contextlib.suppress(TopicAlreadyExistsError, RequestTimedOutError,
                                     KafkaTimeoutError):
                admin.create_topics([NewTopic(
                    PROBE_TOPIC, replica_assignments={i: [n] for i, n in enumerate(self.ids)},
                    topic_configs={"message.timestamp.type": "LogAppendTime"})])
        finally:
            admin.close()

        def led() -> str | None:
            leaders = {n: self.cluster.partition_state(PROBE_TOPIC, i).leader
                       for i, n in enumerate(self.ids)}
            wrong = {n: lead for n, lead in leaders.items() if lead != n}
            return f"leaders (node: leader) {wrong}" if wrong else None
        wait_for(led, CREATE_TIMEOUT_S, f"each partition of {PROBE_TOPIC} led by its node",
                 self._logs_hint())

    def _logs_hint(self) -> str:
        return "broker logs: " + ", ".join(str(p) for p in self.cluster.log_files().values())

    def skew(self, node: int) -> float:
        """Seconds the node's clock is ahead of this machine's (negative: behind)."""
        before = time.time()
        meta = self.producer.send(PROBE_TOPIC, b"clock", partition=self.ids.index(node)
                                  ).get(timeout=SEND_TIMEOUT_S)
        after = time.time()
        if meta.timestamp is None or meta.timestamp < 0:
            raise ClusterError(f"node {node} answered without a LogAppendTime (timestamp "
                               f"{meta.timestamp}; expected the broker's clock)")
        return meta.timestamp / 1000 - (before + after) / 2

    def wait_skew(self, node: int, expected: float, tolerance: float, timeout: float,
                  what: str) -> float:
        """Read the node's skew until it is within ``tolerance`` of ``expected``; returns
        the reading, raises ``ClusterError`` with the last one after ``timeout``."""
        seen: list[float] = []

        def near() -> str | None:
            seen.append(self.skew(node))
            if abs(seen[-1] - expected) <= tolerance:
                return None
            return f"skew {seen[-1]:+.3f} s"
        wait_for(near, timeout, f"{what}: node {node}'s clock {expected:+.1f} s "
                 f"± {tolerance:.1f} s off this machine's", self._logs_hint())
        return seen[-1]

    def samples(self, node: int, seconds: float, every: float) -> list[float]:
        """The node's skew read every ``every`` s for ``seconds`` (failed reads skipped)."""
        out: list[float] = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with contextlib.suppress(Exception):  # a lost read is only a missing sample
                out.append(self.skew(node))
            time.sleep(every)
        return out

    def close(self) -> None:
        """Close the probe's producer, forced when the close gives up (``close_producer``):
        its records are no part of the history, so a failed close is logged, not raised."""
        trouble = close_producer(self.producer, timeout=CLOSE_TIMEOUT_S)
        if trouble:
            log.warning("clock probe: %s", trouble)
