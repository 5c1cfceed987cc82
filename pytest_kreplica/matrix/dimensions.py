"""The dimension table: every dimension a matrix may vary, in one row each.

A row says how a YAML value is parsed (and what is allowed when it is not), the default, the
Python type of the ``Case`` attribute, the case-id part and the markers a value puts on a case.
Adding a dimension is one row here plus its typed line in ``case.py`` (a unit test compares
the two), and a use of ``case.<name>`` where it matters.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..cluster import backend_names
from ..faults.registry import (
    COMPOSABLE,
    COMPOSE,
    FAILURE_VALUES,
    FAILURES,
    NONE,
    RANDOM_FAILURES,
    TARGET_VALUES,
    composition_problem,
    is_composed,
    parts_of,
)
from ..history import SEMANTICS
from ..workloads import CLIENTS, DEFAULT_CLIENT

__all__ = ["DIMENSIONS", "FAULT_ONLY", "Dimension", "InvalidValue", "hyphen_free",
           "static_markers"]

_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024 * 1024}
_VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


class InvalidValue(ValueError):
    """A value a dimension rejects; the message lists what is allowed."""


# ---------------------------------------------------------------- value parsers
def _int_at_least(minimum: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InvalidValue(f"an integer >= {minimum}")
        return value

    return parse


def _choice(*allowed: str, aliases: Mapping[Any, str] | None = None) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if aliases and not isinstance(value, bool) and value in aliases:
            return aliases[value]
        if isinstance(value, str) and value in allowed:
            return value
        raise InvalidValue(" | ".join(allowed))

    return parse


def _failure(value: Any) -> str:
    """One failure type, ``none``, ``random``, or a composition ``a+b`` of two composable
    failure types (each part checked; the message says which part and what composes)."""
    if isinstance(value, str) and COMPOSE in value:
        problem = composition_problem(value)
        if problem is not None:
            raise InvalidValue(f"{' | '.join(FAILURE_VALUES)}, or two of "
                               f"{' | '.join(COMPOSABLE)} joined by {COMPOSE!r} ({problem})")
        return value
    return _choice(*FAILURE_VALUES)(value)


def _failure_markers(value: str) -> list[str]:
    if is_composed(value):
        parts = dict.fromkeys(parts_of(value))  # random+random: one failure_random
        return [*(f"failure_{part}" for part in parts), COMPOSED_MARKER]
    return [f"failure_{value}"]


COMPOSED_MARKER = "composed_faults"


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise InvalidValue("true | false")


def _on_off(value: Any) -> str:
    """``off`` / ``on`` (YAML reads a bare on / off as true / false: both spellings count)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value in ("off", "on"):
        return value
    raise InvalidValue("off | on")


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InvalidValue("a number of seconds >= 0")
    return float(value)


def _acks(value: Any) -> int:
    if value == "all" or (isinstance(value, int) and not isinstance(value, bool)
                          and value in (-1, 0, 1)):
        return -1 if value == "all" else int(value)
    if isinstance(value, str) and value.lstrip("-").isdigit() and int(value) in (-1, 0, 1):
        return int(value)
    raise InvalidValue("-1 | all | 1 | 0")


def _flush_messages(value: Any) -> int | None:
    if value is None or value == "default":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise InvalidValue("default | an integer >= 1")


def _segment_bytes(value: Any) -> int | None:
    if value is None or value == "default":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 14:
        return value
    if isinstance(value, str):
        match = re.fullmatch(r"(\d+)\s*([kKmM]?)i?[bB]?", value.strip())
        if match and int(match.group(1)) > 0:
            return int(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]
    raise InvalidValue("default | an integer of bytes >= 14 | a size such as 1K, 2K, 10K, 1M")


def _kafka_version(value: Any) -> str | None:
    if value is None or value == "default":
        return None
    if isinstance(value, str) and _VERSION_RE.match(value):
        return value
    raise InvalidValue("default | a version x.y.z such as 3.9.2 or 4.3.1")


def _bound_seconds(value: Any) -> float | None:
    if value is None or value == "default":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise InvalidValue("default | a number of seconds > 0")
    return float(value)


def _seed(value: Any) -> int | None:
    if value is None or value == "auto":
        return None
    return _int_at_least(0)(value)


# ---------------------------------------------------------------- id parts and markers
def _size_text(size: int) -> str:
    for unit, factor in (("m", 1024 * 1024), ("k", 1024)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def _kafka_markers(version: str | None) -> list[str]:
    if version is None:  # the default: the newest 4.x whose artifacts are all published
        return ["kafka_4_x"]
    major, minor, _ = _VERSION_RE.match(version).groups()
    return [f"kafka_{major}_x", f"kafka_{major}_{minor}"]


def hyphen_free(text: str) -> str:
    """A value or matrix name as a marker name (markers are identifiers)."""
    return text.replace("-", "_")


def _no_markers(value: Any) -> list[str]:
    return []


@dataclass(frozen=True)
class Dimension:
    """One row of the table: how a dimension is parsed, typed, named and marked."""

    name: str
    parse: Callable[[Any], Any]
    default: Any
    id_part: Callable[[Any], str]
    markers: Callable[[Any], list[str]] = _no_markers
    marker_values: tuple[Any, ...] = ()  # values whose markers are registered up front
    doc: str = ""
    type: str = "int"  # the ``Case`` attribute's annotation (after defaults are resolved)


_BACKENDS = backend_names()  # built-ins and entry points: one scan of installed packages

DIMENSIONS: dict[str, Dimension] = {d.name: d for d in [
    Dimension("partitions", _int_at_least(1), 1, lambda v: f"p{v}",
              doc="partitions per topic"),
    Dimension("replication_factor", _int_at_least(1), 3, lambda v: f"rf{v}",
              doc="replicas per partition"),
    Dimension("segment_bytes", _segment_bytes, None,
              lambda v: "segdefault" if v is None else f"seg{_size_text(v)}",
              doc="topic segment size (1K/2K/10K use internal.segment.bytes on 4.x)",
              type="int | None"),
    Dimension("flush_messages", _flush_messages, None,
              lambda v: "flushdefault" if v is None else f"flush{v}",
              doc="topic flush.messages: fsync every N appends (default: Kafka's, never; "
                  "what power_loss_all can take)", type="int | None"),
    Dimension("topics", _int_at_least(1), 1, lambda v: f"t{v}", doc="topics per case"),
    Dimension("compression", _choice("none", "gzip", "snappy", "lz4", "zstd"), "none",
              lambda v: v, lambda v: [f"compression_{v}"],
              ("none", "gzip", "snappy", "lz4", "zstd"), doc="producer compression",
              type="str"),
    Dimension("acks", _acks, -1, lambda v: f"acks{v}",
              lambda v: ["acks_all" if v == -1 else f"acks_{v}"], (-1, 0, 1),
              doc="producer acks (-1 = all)"),
    Dimension("producer_mode", _choice("sync", "async"), "sync", lambda v: v,
              lambda v: [f"producer_{v}"], ("sync", "async"),
              doc="sync waits for each send; async batches with callbacks", type="str"),
    Dimension("min_insync_replicas", _int_at_least(1), 1, lambda v: f"minisr{v}",
              doc="topic min.insync.replicas"),
    Dimension("idempotence", _boolean, False, lambda v: "idem" if v else "noidem",
              lambda v: ["idempotence"] if v else [], (True,),
              doc="producer enable.idempotence (needs acks -1)", type="bool"),
    Dimension("brokers", _int_at_least(1), None, lambda v: f"b{v}",
              doc="cluster size (default: max(3, replication_factor))"),
    Dimension("messages", _int_at_least(1), 1000, lambda v: f"m{v}",
              doc="messages sent (sync ≈ 340 msg/s here)"),
    Dimension("message_bytes", _int_at_least(0), 0, lambda v: f"mb{v}",
              doc="record value size: id, then a space and padding"),
    Dimension("workload", _choice("plain", "txn", "txn_pipeline"), "plain", lambda v: v,
              lambda v: {"txn": ["txn"], "txn_pipeline": ["txn", "txn_pipeline"]}.get(v, []),
              ("txn", "txn_pipeline"),
              doc="plain = one producer and a consumer (C.1); txn = transactions that commit "
                  "or abort, a read_committed consumer group and a read_uncommitted observer "
                  "(history version 2); txn_pipeline = txn plus an exactly-once "
                  "read-process-write pipeline copying the other topics into the last "
                  "(topics >= 2)", type="str"),
    Dimension("isolation", _choice("read_committed", "read_uncommitted"), None,
              lambda v: {None: "isodefault", "read_committed": "rc",
                         "read_uncommitted": "ru"}[v],
              lambda v: [f"isolation_{v}"] if v else [], ("read_committed", "read_uncommitted"),
              doc="isolation.level of a txn workload's consumer group (default read_committed;"
                  " read_uncommitted, Kafka's consumer default, shows what such readers see "
                  "of aborted and open transactions)", type="str | None"),
    Dimension("client", _choice(*CLIENTS), DEFAULT_CLIENT,
              lambda v: "" if v == DEFAULT_CLIENT else v,  # default ids stay as they were
              lambda v: [f"client_{hyphen_free(v)}"], tuple(CLIENTS),
              doc="the Kafka client driving the plain workload: kafka-python; java = Kafka's "
                  "VerifiableProducer / VerifiableConsumer of the case's Kafka version; "
                  "librdkafka = confluent-kafka, in a child process (docs/clients.md)",
              type="str"),
    Dimension("kafka_version", _kafka_version, None,
              lambda v: "kdefault" if v is None else f"k{v}", _kafka_markers,
              (None, "3.9.0"), doc="default = newest 4.x with every artifact published",
              type="str | None"),
    # two-cluster and version dimensions (mirrored runs, version compatibility)
    Dimension("target_kafka_version", _kafka_version, None,
              lambda v: "tkdefault" if v is None else f"tk{v}", _kafka_markers,
              doc="the second version: the mirror target's, or the version a rolling upgrade "
                  "goes to (default = newest 4.x with every artifact published)",
              type="str | None"),
    Dimension("replication_policy", _choice("default", "identity"), "default",
              lambda v: f"policy-{v}", lambda v: [f"policy_{v}"], ("default", "identity"),
              doc="MirrorMaker 2 topic names on the target: default prefixes the source "
                  "alias (source.t), identity keeps t", type="str"),
    Dimension("mirror_semantics", _choice("at-least-once", "exactly-once"), "at-least-once",
              lambda v: {"at-least-once": "mm-alo", "exactly-once": "mm-eo"}[v],
              lambda v: ["mirror_exactly_once"] if v == "exactly-once" else [],
              ("at-least-once", "exactly-once"),
              doc="MirrorMaker 2 delivery: exactly-once runs its worker with "
                  "exactly.once.source.support=enabled (KIP-618, Kafka >= 3.5) and reads the "
                  "target read_committed; the case then expects exactly-once", type="str"),
    Dimension("target_brokers", _int_at_least(1), None,
              lambda v: "" if v is None else f"tb{v}",  # the default names no part
              doc="mirror: the target cluster's size (default: brokers); a target smaller "
                  "than a large source keeps a two-cluster case on one machine",
              type="int | None"),
    Dimension("target_replication_factor", _int_at_least(1), None,
              lambda v: "" if v is None else f"trf{v}",
              doc="mirror: replicas per mirrored partition on the target (default: up to "
                  "3, at most target_brokers, as MirrorMaker 2 sets); the faults strike the "
                  "source, the target only has to hold what MirrorMaker 2 wrote",
              type="int | None"),
    Dimension("compat", _choice("mirror-pair", "upgrade"), "mirror-pair", lambda v: v,
              lambda v: ["upgrade"] if v == "upgrade" else [],
              ("mirror-pair", "upgrade"),
              doc="version-compat form: a mirrored pair of two versions, or a rolling "
                  "upgrade of one cluster from kafka_version to target_kafka_version",
              type="str"),
    Dimension("backend", _choice(*_BACKENDS), "process", lambda v: v,
              lambda v: [f"backend_{v}"], _BACKENDS, doc="cluster backend", type="str"),
    Dimension("tiered", _on_off, "off", lambda v: f"tiered-{v}",
              lambda v: ["tiered"] if v == "on" else [], ("on",),
              doc="tiered storage (KIP-405, Kafka >= 3.9, process backend): on = topics "
                  "with remote.storage.enable and a small local hotset on Kafka's "
                  "LocalTieredStorage, a final read from offset 0 across the tier boundary "
                  "and the remote segments checked (docs/tiered.md)", type="str"),
    # failure dimensions (the faults drive them; validated here)
    Dimension("failure", _failure, NONE,
              lambda v: "nofail" if v == NONE else "-plus-".join(parts_of(v)),
              _failure_markers,
              (*FAILURE_VALUES, "hard+soft"),
              doc="; ".join(f"{n} = {f.doc}" for n, f in FAILURES.items())
              + f"; random = one of {'/'.join(RANDOM_FAILURES)} per fault, from the seed"
              + f"; a{COMPOSE}b = two of {'/'.join(COMPOSABLE)} overlapping in time, the "
                "second struck while the first holds, each on its own victim; a part "
                f"random is drawn per fault (random{COMPOSE}random: the soak's composed "
                "nemesis)",
              type="str"),
    Dimension("target", _choice(*TARGET_VALUES),
              "leader", lambda v: v, lambda v: [f"target_{hyphen_free(v)}"],
              TARGET_VALUES,
              doc="role of the node hurt, resolved at the moment of the fault; random = "
                  "leader/follower/controller per fault, from the seed", type="str"),
    Dimension("failures", _int_at_least(1), 1, lambda v: f"x{v}", doc="faults in sequence"),
    Dimension("duration", _seconds, None, lambda v: "durdefault" if v is None else f"dur{v:g}s",
              doc="soak: produce and inject faults for this many seconds (C.8); "
                  "overrides messages and failures", type="float | None"),
    Dimension("downtime", _seconds, 5.0, lambda v: f"down{v:g}s",
              doc="seconds a node stays down / paused", type="float"),
    Dimension("fault_timing", _choice("produce", "consume"), "produce",
              lambda v: f"during-{v}", doc="the phase the faults hit", type="str"),
    Dimension("unclean_leader_election", _boolean, False,
              lambda v: "unclean" if v else "nounclean",
              lambda v: ["unclean_leader_election"] if v else [], (True,),
              doc="topic unclean.leader.election.enable", type="bool"),
    Dimension("semantics", _choice(*SEMANTICS), None,
              lambda v: {"at-least-once": "alo", "exactly-once": "eo",
                         "at-most-once": "amo"}[v],
              lambda v: [f"semantics_{hyphen_free(v)}"], SEMANTICS,
              doc="expected delivery semantics (default derived, see derive_semantics)",
              type="str"),
    Dimension("seed", _seed, None, lambda v: "seedauto" if v is None else f"seed{v}",
              doc="seed of the fault schedule (default: derived from the case id)"),
    Dimension("max_unavailable_s", _bound_seconds, None,
              lambda v: "unavaildefault" if v is None else f"unavail{v:g}s",
              doc="the longest stretch allowed with neither an acknowledgement nor a poll "
                  "progressing (default: each failure type's allowance; a case without "
                  "faults is then not judged)", type="float | None"),
]}

FAULT_ONLY = ("target", "failures", "downtime", "fault_timing")  # meaningless without faults


def static_markers() -> dict[str, str]:
    """Every marker a case can carry whatever the matrices say, with its help line."""
    markers = {
        "kreplica": "a case expanded from a kreplica matrix",
        "ci": "cases small enough for CI",
        "soak": "long runs (C.8 soaks, the log model's soak and teeth), selected only when "
                "asked for (-m soak)",
        "kafka_3_x": "Kafka 3.x brokers", "kafka_4_x": "Kafka 4.x brokers",
        "kafka_3_9": "Kafka 3.9.x brokers",
    }
    for dim in DIMENSIONS.values():
        for value in dim.marker_values:
            for name in dim.markers(value):
                markers.setdefault(name, f"cases with {dim.name} = {value}")
    return markers
