"""Partition metadata and offsets for many partitions at once, through the cached admin
client (a mixin of ``AdminCluster``).

One Metadata request names every topic; log end offsets take one ListOffsets per running
broker for every partition it replicates, high watermarks one ListOffsets per leader for
every partition it leads, and the requests to different brokers are in flight together.
A snapshot of a case's topics then costs a handful of round trips instead of one client
and several round trips per partition. Errors stay per partition: a partition whose
leader moved or answers ``OFFSET_NOT_AVAILABLE`` is asked again (with leadership read
again) while the others keep their answers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ...errors import ClusterError
from ..base import NodeState, PartitionState
from .clients import connection_manager

DEBUG_REPLICA_ID = -2  # ListOffsets from a debugging client: followers answer with their LEO
CONSUMER_REPLICA_ID = -1  # ListOffsets as a consumer: only the leader answers, with the HW

Part = tuple[str, int]


class NotYet(ClusterError):
    """An observed state is not the expected one yet (tenacity retries on it). A
    ``ClusterError`` for everyone outside the cluster package: a one-attempt call such as
    ``replica_log_end_offsets`` lets it out, and a caller's own wait retries it as it
    retries any cluster error (a snapshot just after a resumed node, whose id the admin
    client's metadata did not know yet, failed a CI run when it was a bare Exception)."""


class OffsetsMixin:
    """``partition_states``, ``topic_views``, ``replica_log_end_offsets`` and
    ``high_watermarks`` for many partitions, plus the one-partition forms built on them.
    Needs ``AdminCluster``'s ``_admin_call``, ``_ask``, ``_retrying``, ``_admin_nodes`` and
    ``node_state``."""

    def _describe_topics(self, topics: list[str], node_id: int | None = None
                         ) -> dict[str, list[PartitionState]]:
        """Every partition of ``topics`` from one Metadata request, to ``node_id`` when
        given (``NotYet`` while a topic is missing or has no partitions)."""
        from kafka.protocol.metadata import MetadataRequest

        request = MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False)
        with self._admin_call(f"Metadata({', '.join(topics)})") as admin:
            described = self._ask(admin, request, node_id).to_dict()["topics"]
        by_name = {entry["name"]: entry for entry in described}
        result: dict[str, list[PartitionState]] = {}
        for topic in topics:
            entry = by_name.get(topic)
            if entry is None:
                raise NotYet(f"topic {topic} not in metadata")
            if entry.get("error_code", 0) not in (0, None):
                raise NotYet(f"topic {topic}: error code {entry['error_code']}")
            states = [_state(topic, p) for p in entry.get("partitions", [])]
            if not states:
                raise NotYet(f"topic {topic} has no partitions in metadata yet")
            result[topic] = sorted(states, key=lambda s: s.partition)
        return result

    def _describe_partitions(self, topic: str) -> list[PartitionState]:
        return self._describe_topics([topic])[topic]

    def partition_states(self, topics: list[str], timeout: float = 30.0
                         ) -> dict[Part, PartitionState]:
        """Leader, epoch, replicas and ISR of every partition of ``topics`` (one Metadata
        request per attempt, retried within ``timeout``)."""
        def fetch() -> dict[Part, PartitionState]:
            return {(s.topic, s.partition): s
                    for states in self._describe_topics(list(topics)).values() for s in states}
        return self._retrying(f"metadata of {list(topics)}", fetch, timeout)

    def partition_state(self, topic: str, partition: int, timeout: float = 30.0
                        ) -> PartitionState:
        def fetch() -> PartitionState:
            for state in self._describe_partitions(topic):
                if state.partition == partition:
                    return state
            raise NotYet(f"partition {topic}-{partition} not in metadata")
        return self._retrying(f"metadata of {topic}-{partition}", fetch, timeout)

    def partition_views(self, topic: str, partition: int, timeout: float = 30.0
                        ) -> dict[int | None, PartitionState]:
        """The partition in each reachable broker's metadata (``topic_views`` of its
        topic); at least one broker must show it."""
        def fetch() -> dict[int | None, PartitionState]:
            views = {node: states[(topic, partition)]
                     for node, states in self._views_once([topic]).items()
                     if (topic, partition) in states}
            if not views:
                raise NotYet(f"no broker shows {topic}-{partition} in its metadata")
            return views
        return self._retrying(f"every broker's metadata of {topic}-{partition}", fetch,
                              timeout)

    def topic_views(self, topics: list[str], timeout: float = 30.0
                    ) -> dict[int | None, dict[Part, PartitionState]]:
        """Every partition of ``topics`` in each reachable broker's own metadata: one
        Metadata request to each broker for all of them, retried within ``timeout`` while
        no broker answers."""
        return self._retrying(f"every broker's metadata of {list(topics)}",
                              lambda: self._views_once(topics), timeout)

    def _views_once(self, topics: list[str]) -> dict[int | None, dict[Part, PartitionState]]:
        """One look for ``topic_views``. A broker is asked twice, the second time through a
        fresh admin client (a restarted broker breaks the cached connection); one that still
        does not answer is left out, and at least one must answer."""
        def ask(node: int) -> dict[str, list[PartitionState]]:
            try:
                return self._describe_topics(list(topics), node)
            except ClusterError:  # a transient error already dropped the cached client
                return self._describe_topics(list(topics), node)

        with self._admin_call("the nodes the admin client reaches"):
            pass  # builds or reuses the client, refreshing ``_admin_nodes``: no request
        views: dict[int | None, dict[Part, PartitionState]] = {}
        for node in list(self._admin_nodes):
            try:
                described = ask(node)
            except ClusterError:
                continue  # moving, cut off or behind: the other brokers' views stand
            views[node] = {(s.topic, s.partition): s
                           for states in described.values() for s in states}
        if not views:
            raise NotYet(f"no broker answered Metadata({', '.join(topics)})")
        return views

    def _list_offsets_many(self, asks: dict[int, dict[Part, int]], replica_id: int
                           ) -> dict[int, dict[Part, int | str]]:
        """ListOffsets(latest) to several brokers at once: ``asks`` maps a node to the
        partitions to ask it (with the leader epoch to fence, -1 for none). Each answer is
        an offset or the name of the partition's error; a broker that did not answer at
        all raises ``NotYet`` (through ``_admin_call``)."""
        from kafka.errors import for_code
        from kafka.protocol.consumer import ListOffsetsRequest

        _Topic = ListOffsetsRequest.ListOffsetsTopic
        requests = {}
        for node, parts in asks.items():
            by_topic: dict[str, list[Any]] = defaultdict(list)
            for (topic, partition), epoch in sorted(parts.items()):
                by_topic[topic].append(_Topic.ListOffsetsPartition(
                    partition_index=partition, timestamp=-1, current_leader_epoch=epoch))
            requests[node] = ListOffsetsRequest(
                replica_id=replica_id, isolation_level=0,
                topics=[_Topic(name=t, partitions=ps) for t, ps in by_topic.items()])
        with self._admin_call(f"ListOffsets to nodes {sorted(asks)}") as admin:
            responses = self._ask_many(admin, requests)
        answers: dict[int, dict[Part, int | str]] = {}
        for node, response in responses.items():
            answers[node] = {
                (t.name, p.partition_index): (for_code(p.error_code).__name__ if p.error_code
                                              else p.offset)
                for t in response.topics for p in t.partitions}
        return answers

    def _ask_many(self, admin: Any, requests: dict[int, Any]) -> dict[int, Any]:
        """Send one request to each node, all in flight together; wait for every answer."""
        manager = connection_manager(admin)

        async def send() -> dict[int, Any]:
            futures = {node: manager.send(request, node_id=node)
                       for node, request in requests.items()}
            return {node: await future for node, future in futures.items()}
        return manager.run(send)

    def _running(self, nodes: Iterable[int]) -> list[int]:
        return [n for n in nodes if self.node_state(n) is NodeState.RUNNING]

    def replica_log_end_offsets(self, states: dict[Part, PartitionState]
                                ) -> dict[Part, dict[int, int | str]]:
        """Each running replica's log end offset (or its error's name) for every partition
        of ``states``: one ListOffsets as a debugging client per running broker, for every
        partition it replicates. One attempt: the caller decides what to wait for."""
        asks: dict[int, dict[Part, int]] = defaultdict(dict)
        for part, state in states.items():
            for node in self._running(state.replicas):
                asks[node][part] = -1
        result: dict[Part, dict[int, int | str]] = {part: {} for part in states}
        for node, answers in self._list_offsets_many(dict(asks), DEBUG_REPLICA_ID).items():
            for part, answer in answers.items():
                result[part][node] = answer
        return result

    def log_end_offsets(self, topic: str, partition: int, timeout: float = 30.0
                        ) -> dict[int, int]:
        """Each running replica's log end offset, asked of that broker itself (ListOffsets
        as a debugging client, which followers answer too)."""
        def fetch() -> dict[int, int]:
            state = self.partition_state(topic, partition, timeout)
            ends = self.replica_log_end_offsets({(topic, partition): state})[(topic, partition)]
            errors = {n: e for n, e in ends.items() if isinstance(e, str)}
            if errors:
                raise NotYet(f"{topic}-{partition}: {errors}")
            return ends
        return self._retrying(f"log end offsets of {topic}-{partition}", fetch, timeout)

    def high_watermarks(self, parts: list[Part], timeout: float = 30.0) -> dict[Part, int]:
        """Every partition's high watermark, asked of its current leader: per attempt one
        Metadata request and one ListOffsets as a consumer per leader, fenced by the leader
        epoch. Leadership is read again on every attempt: right after a restart the
        preferred-leader election moves leaders, and a new leader answers
        OFFSET_NOT_AVAILABLE until its high watermark reaches its epoch's start (KIP-207);
        both are waited out for the partitions concerned, within ``timeout``."""
        found: dict[Part, int] = {}

        def ask() -> dict[Part, int]:
            wanted = [p for p in parts if p not in found]
            topics = sorted({t for t, _ in wanted})
            states = {k: v for k, v in self._describe_topics_all(topics).items()
                      if k in wanted}
            asks: dict[int, dict[Part, int]] = defaultdict(dict)
            waiting = []
            for part in wanted:
                state = states.get(part)
                if state is None or state.leader is None or \
                        self.node_state(state.leader) is not NodeState.RUNNING:
                    waiting.append(f"{part[0]}-{part[1]} has no running leader (leader "
                                   f"{None if state is None else state.leader})")
                    continue
                asks[state.leader][part] = state.leader_epoch
            if asks:
                for node, answers in self._list_offsets_many(dict(asks),
                                                             CONSUMER_REPLICA_ID).items():
                    for part, answer in answers.items():
                        if isinstance(answer, str):
                            waiting.append(f"{part[0]}-{part[1]} on node {node}: {answer}")
                        else:
                            found[part] = answer
            if waiting:
                raise NotYet("; ".join(waiting[:5]) + (f" (+{len(waiting) - 5} more)"
                                                       if len(waiting) > 5 else ""))
            return {p: found[p] for p in parts}
        return self._retrying(f"high watermarks of {len(parts)} partitions", ask, timeout)

    def readable_ends(self, parts: list[Part]) -> dict[Part, int]:
        """Where a consumer that has read everything there is stands, per partition: the
        high watermark, once nothing more can become readable without new writes. One
        attempt (one Metadata, then ListOffsets as a consumer and as a debugging client to
        each leader); ``NotYet`` while a partition has no running leader or its leader holds
        records above the high watermark (acknowledged with acks=1, not yet replicated)."""
        states = self._describe_topics_all(sorted({t for t, _ in parts}))
        asks: dict[int, dict[Part, int]] = defaultdict(dict)
        for part in parts:
            state = states.get(part)
            if state is None or state.leader is None or \
                    self.node_state(state.leader) is not NodeState.RUNNING:
                raise NotYet(f"{part[0]}-{part[1]} has no running leader")
            asks[state.leader][part] = state.leader_epoch
        hws = self._list_offsets_many(dict(asks), CONSUMER_REPLICA_ID)
        leos = self._list_offsets_many(dict(asks), DEBUG_REPLICA_ID)
        ends: dict[Part, int] = {}
        for node, answers in hws.items():
            for part, hw in answers.items():
                leo = leos.get(node, {}).get(part)
                if isinstance(hw, str) or isinstance(leo, str) or leo is None:
                    raise NotYet(f"{part[0]}-{part[1]} on node {node}: high watermark "
                                 f"{hw}, log end offset {leo}")
                if leo > hw:
                    raise NotYet(f"{part[0]}-{part[1]}: leader {node} holds offsets {hw}.."
                                 f"{leo - 1} above the high watermark")
                ends[part] = hw
        return ends

    def _describe_topics_all(self, topics: list[str]) -> dict[Part, PartitionState]:
        return {(s.topic, s.partition): s
                for states in self._describe_topics(topics).values() for s in states}

    def high_watermark(self, topic: str, partition: int, timeout: float = 30.0) -> int:
        """The partition's high watermark, asked of its current leader (``high_watermarks``)."""
        return self.high_watermarks([(topic, partition)], timeout)[(topic, partition)]


def _state(topic: str, p: dict[str, Any]) -> PartitionState:
    leader = p.get("leader_id")
    return PartitionState(
        topic=topic, partition=p["partition_index"],
        leader=None if leader is None or leader < 0 else leader,
        leader_epoch=p.get("leader_epoch", -1),
        replicas=tuple(p.get("replica_nodes", ())), isr=tuple(p.get("isr_nodes", ())))
