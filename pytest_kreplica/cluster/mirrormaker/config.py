"""MirrorMaker 2's configuration: the dedicated-mode properties of one flow source->target
for a case's topics, the mirrored topic names under a replication policy, and the classpath.

With ``exactly_once`` the flow's Connect worker runs KIP-618 exactly-once source support
(records and source offsets in one transaction on the target; needs the KIP-710 internal
REST server of dedicated mode, on a loopback port) and reads the source read_committed; the
target's readers must then read read_committed too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError

if TYPE_CHECKING:
    from ..kafka.distribution import Distribution

POLICIES = ("default", "identity")
IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
SOURCE_ALIAS, TARGET_ALIAS = "source", "target"
NODE_NAME = "mirror-maker"  # the ``node`` of its events
ROLE = "mirror-maker"  # the ``role`` of its events and its nemesis target
# exactly-once: a SIGKILLed task leaves its transaction (records + source offsets) open on
# the target; the restarted worker reads its offsets topic read_committed and so waits until
# the coordinator aborts it at transaction.timeout.ms (60 s by default, seen: restore to
# mirroring again 63 s). A task commits every poll, far within this.
EOS_TRANSACTION_TIMEOUT_MS = 15_000


def mirrored_name(topic: str, policy: str = "default", alias: str = SOURCE_ALIAS) -> str:
    """The topic's name on the target under a replication policy."""
    if policy not in POLICIES:
        raise InputError(f"replication_policy {policy!r} is unknown; allowed: "
                         f"{', '.join(POLICIES)}")
    return topic if policy == "identity" else f"{alias}.{topic}"


def mm2_properties(source_bootstrap: str, target_bootstrap: str, topics: list[str], *,
                   policy: str = "default", source_brokers: int = 3,
                   target_brokers: int = 3, instance: str = "kreplica",
                   exactly_once: bool = False, rest_port: int | None = None,
                   replication_factor: int | None = None,
                   refresh_s: int = 1) -> dict[str, str]:
    """The dedicated-mode configuration (KAFKA-NOTES "MirrorMaker 2"): one flow
    source->target for exactly ``topics``, internal topics sized to the clusters and named
    per ``instance``, topics and groups refreshed every ``refresh_s`` seconds, and no delay
    before a restarted worker takes its tasks back (Connect waits
    ``scheduled.rebalance.max.delay.ms``, 5 min by default, for a departed member, which
    would stall mirroring after a hard failure). The mirrored topics get
    ``replication_factor`` replicas on the target (default: up to 3, as the internal ones).

    ``exactly_once`` (Kafka >= 3.5): the target's worker gets
    ``exactly.once.source.support=enabled`` (KIP-618), which needs the internal REST server
    of KIP-710 (``dedicated.mode.enable.internal.rest``, listening on ``rest_port`` of
    127.0.0.1); the source is read ``read_committed`` (MirrorSourceConnector declares
    exactly-once support only then, and never copies aborted records)."""
    if not topics:
        raise InputError("mirror: no topics to mirror; allowed: one or more topic names")
    if exactly_once and rest_port is None:
        raise InputError("mirror: exactly_once needs rest_port (the KIP-710 internal REST "
                         "server); allowed: a free port on 127.0.0.1")
    mirrored_name(topics[0], policy)  # validates the policy
    rf_source = str(min(3, source_brokers))
    rf_target = str(min(3, target_brokers))
    props = {
        "clusters": f"{SOURCE_ALIAS}, {TARGET_ALIAS}",
        f"{SOURCE_ALIAS}.bootstrap.servers": source_bootstrap,
        f"{TARGET_ALIAS}.bootstrap.servers": target_bootstrap,
        f"{SOURCE_ALIAS}->{TARGET_ALIAS}.enabled": "true",
        f"{SOURCE_ALIAS}->{TARGET_ALIAS}.topics": "|".join(re.escape(t) for t in topics),
        f"{TARGET_ALIAS}->{SOURCE_ALIAS}.enabled": "false",
        "tasks.max": "1",
        "replication.factor": str(replication_factor) if replication_factor else rf_target,
        "offset-syncs.topic.replication.factor": rf_source,
        "heartbeats.topic.replication.factor": rf_target,
        "checkpoints.topic.replication.factor": rf_target,
        "sync.topic.acls.enabled": "false",
        "sync.group.offsets.enabled": "false",
        "refresh.topics.interval.seconds": str(refresh_s),
        "refresh.groups.interval.seconds": str(refresh_s),
        "emit.checkpoints.interval.seconds": "1",
        "emit.heartbeats.interval.seconds": "1",
        # the Connect worker of the flow runs against the target: its state lives there
        f"{TARGET_ALIAS}.group.id": f"{instance}-mm2",
        f"{TARGET_ALIAS}.offset.storage.topic": f"{instance}-mm2-offsets",
        f"{TARGET_ALIAS}.config.storage.topic": f"{instance}-mm2-configs",
        f"{TARGET_ALIAS}.status.storage.topic": f"{instance}-mm2-status",
        f"{TARGET_ALIAS}.offset.storage.replication.factor": rf_target,
        f"{TARGET_ALIAS}.config.storage.replication.factor": rf_target,
        f"{TARGET_ALIAS}.status.storage.replication.factor": rf_target,
        f"{TARGET_ALIAS}.scheduled.rebalance.max.delay.ms": "0",
        # the disabled reverse flow would still start a worker on the source for heartbeats
        # (with shared default state topic names, and a slow shutdown): switch it off
        f"{TARGET_ALIAS}->{SOURCE_ALIAS}.emit.heartbeats.enabled": "false",
        f"{SOURCE_ALIAS}.group.id": f"{instance}-mm2-reverse",
        f"{SOURCE_ALIAS}.offset.storage.topic": f"{instance}-mm2-reverse-offsets",
        f"{SOURCE_ALIAS}.config.storage.topic": f"{instance}-mm2-reverse-configs",
        f"{SOURCE_ALIAS}.status.storage.topic": f"{instance}-mm2-reverse-status",
        f"{SOURCE_ALIAS}.offset.storage.replication.factor": rf_source,
        f"{SOURCE_ALIAS}.config.storage.replication.factor": rf_source,
        f"{SOURCE_ALIAS}.status.storage.replication.factor": rf_source,
        f"{SOURCE_ALIAS}.scheduled.rebalance.max.delay.ms": "0",
        "offset.flush.interval.ms": "1000",
    }
    if policy == "identity":
        props["replication.policy.class"] = IDENTITY_POLICY
    if exactly_once:
        props.update({
            f"{TARGET_ALIAS}.exactly.once.source.support": "enabled",
            f"{SOURCE_ALIAS}.consumer.isolation.level": "read_committed",
            f"{TARGET_ALIAS}.producer.transaction.timeout.ms": str(EOS_TRANSACTION_TIMEOUT_MS),
            "dedicated.mode.enable.internal.rest": "true",
            "listeners": f"http://127.0.0.1:{rest_port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(rest_port),
        })
    return props


def render_properties(props: dict[str, str]) -> str:
    return "".join(f"{k} = {v}\n" for k, v in props.items())


def mirror_classpath(dist: Distribution) -> str:
    """``connect-mirror`` jars; on 4.x plus the broker's log4j2 jars and binding, which the
    mirror artifact does not bring (without them MirrorMaker 2 would log nothing)."""
    classpath = dist.classpaths["mirror"]
    if dist.uses_log4j2:
        have = {Path(j).name for j in classpath.split(":")}
        extra = [j for j in dist.classpaths["broker"].split(":")
                 if Path(j).name.startswith("log4j-") and Path(j).name not in have]
        classpath = ":".join([classpath, *extra])
    return classpath


