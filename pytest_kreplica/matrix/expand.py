"""Expansion of parsed dimension values into cases: the product (or a pairwise covering
array) minus excludes, the defaults, the cross-dimension checks, the derived semantics and
seed, the case ids and the markers."""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import MatrixError
from ..faults.registry import (
    CLIENT_TARGETS,
    FAILURES,
    GROUP_MEMBER,
    OUTAGE_BROKERS,
    TARGETS,
    WORKLOAD_TARGETS,
    facilities_needed,
    failures_on,
    is_composed,
    parts_of,
    takes_out,
)
from ..workloads import CLIENT_WORKLOADS
from .case import Case
from .dimensions import DIMENSIONS, FAULT_ONLY, hyphen_free

__all__ = ["STRATEGIES", "build_case", "combinations", "complete", "derive_semantics",
           "matrix_error", "matches"]

STRATEGIES = ("product", "pairwise")
_STRENGTH = {"at-most-once": 0, "at-least-once": 1, "exactly-once": 2}


def matrix_error(path: Path, where: str, message: str) -> MatrixError:
    """The one-line error: the file, the key (``where``), then what is wrong and allowed."""
    return MatrixError(f"{path}: {where}: {message}")


def derive_semantics(params: Mapping[str, Any]) -> str:
    """The semantics a case expects when its matrix does not say: exactly-once for an
    idempotent producer with no faults, behind an exactly-once MirrorMaker 2 or for a
    read-process-write pipeline (whatever fails them); else at-least-once. Never
    at-most-once by configuration: a case with acks 1 / 0 or unclean leader election
    under faults still expects every acknowledged record,
    and a loss passes only when the fault evidence explains it (``tradeoffs``,
    docs/failures.md "Loss and its evidence")."""
    if params["idempotence"] and (params["failure"] == "none"
                                  or params["mirror_semantics"] == "exactly-once"):
        return "exactly-once"
    if params["workload"] == "txn_pipeline":  # the pipeline's own claim, whatever fails
        return "exactly-once"
    return "at-least-once"


def matches(entry: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """Whether ``row`` has every value of an exclude / include / marks ``entry``."""
    return all(k in row and row[k] == v for k, v in entry.items())


def combinations(strategy: str, names: list[str], values: list[list[Any]],
                 exclude: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the product (or of a pairwise covering array) that no exclude entry matches."""
    def keep(row: Mapping[str, Any]) -> bool:
        return not any(matches(e, row) for e in exclude)

    if strategy == "product" or len(names) < 2:
        rows = (dict(zip(names, combo, strict=True)) for combo in itertools.product(*values))
        return [row for row in rows if keep(row)]
    from allpairspy import AllPairs  # lazy: only pairwise matrices need it

    # AllPairs asks about partial rows too; an exclude entry only rejects a complete match
    def keep_partial(partial: list[Any]) -> bool:
        return keep(dict(zip(names, partial, strict=False)))

    pairs = AllPairs(values, filter_func=keep_partial)
    return [dict(zip(names, row, strict=True)) for row in pairs]


def complete(raw: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Every dimension's value: the row's, else the caller's default, else the table's.
    Without faults the fault-only dimensions take their defaults, so such rows collapse."""
    params = {n: raw.get(n, defaults.get(n, d.default)) for n, d in DIMENSIONS.items()}
    if params["brokers"] is None:
        params["brokers"] = max(3, params["replication_factor"])
    if params["failure"] == "none":
        params.update({n: defaults.get(n, DIMENSIONS[n].default) for n in FAULT_ONLY})
    return params


def _case_id(varying: set[str], params: Mapping[str, Any]) -> str:
    shown = varying - set(FAULT_ONLY) if params["failure"] == "none" else varying
    parts = (d.id_part(params[n]) for n, d in DIMENSIONS.items() if n in shown)
    return "-".join(p for p in parts if p)  # a default that names no part (client)


# what the java client's tools cannot do (workloads/java_client.py): key -> (refused when,
# why, what is allowed)
_JAVA_LIMITS = {
    "producer_mode": (lambda v: v == "sync", "VerifiableProducer only sends asynchronously",
                      "async"),
    "topics": (lambda v: v > 1, "VerifiableProducer and VerifiableConsumer take one topic",
               "1"),
    "message_bytes": (lambda v: v > 0, "VerifiableProducer's value is its message number",
                      "0"),
}


def _check_client(path: Path, where: str, p: Mapping[str, Any], scenario: str) -> None:
    """The combinations a client other than kafka-python cannot run, refused one line each."""
    client = p["client"]
    if client == "kafka-python":
        return
    workload = p["workload"]
    if workload != "plain" and (client, workload) not in CLIENT_WORKLOADS:
        able = ["plain", *(w for c, w in CLIENT_WORKLOADS if c == client)]
        raise matrix_error(path, f"{where}.workload",
                           f"{workload} does not run on client {client}; allowed with client "
                           f"{client}: {' | '.join(able)}")
    if scenario != "replication":
        raise matrix_error(path, f"{where}.client",
                           f"{client} runs in scenario replication only, got {scenario}; "
                           "allowed: kafka-python")
    if workload != "plain" and p["failure"] != "none" and p["target"] in CLIENT_TARGETS:
        raise matrix_error(path, f"{where}.target",
                           f"{p['target']} needs workload plain on client {client} (the "
                           f"{workload} workload's producers run in one process the nemesis "
                           f"does not restart), got workload {workload}; allowed: leader | "
                           "follower | controller | group_coordinator | txn_coordinator | "
                           "group-member")
    if client != "java" or workload != "plain":
        return
    for key, (refused, why, allowed) in _JAVA_LIMITS.items():
        if refused(p[key]):
            raise matrix_error(path, f"{where}.{key}",
                               f"{p[key]} cannot run on client java ({why}); allowed with "
                               f"client java: {allowed}")


def _check_tiered(path: Path, where: str, p: Mapping[str, Any], scenario: str) -> None:
    """``tiered: on`` needs what Kafka's tiered storage and its test store need, and a
    failure that acts on the remote store needs ``tiered: on``."""
    if p["tiered"] != "on":
        if "tiered_storage" in facilities_needed(p["failure"]):
            raise matrix_error(path, f"{where}.failure",
                               f"{p['failure']} needs tiered: on (it acts on the remote "
                               f"store), got tiered {p['tiered']}; allowed: tiered on, or "
                               "another failure")
        return
    version = p["kafka_version"]
    if version is not None and tuple(int(x) for x in version.split(".")) < (3, 9, 0):
        raise matrix_error(path, f"{where}.tiered",
                           f"on needs Kafka >= 3.9 (production-ready tiered storage), got "
                           f"kafka_version {version}; allowed: off, or kafka_version >= 3.9.0")
    if p["backend"] != "process":
        raise matrix_error(path, f"{where}.tiered",
                           f"on needs backend process (the remote store is a directory on "
                           f"this machine), got backend {p['backend']}; allowed: off, or "
                           "backend process")
    if scenario != "replication" or p["workload"] != "plain":
        raise matrix_error(path, f"{where}.tiered",
                           f"on needs scenario replication and workload plain, got scenario "
                           f"{scenario}, workload {p['workload']}; allowed: off")


def _check_case(path: Path, case_id: str, p: Mapping[str, Any], scenario: str) -> None:
    where = f"case {case_id}"
    _check_client(path, where, p, scenario)
    if p["replication_factor"] > p["brokers"]:
        raise matrix_error(path, f"{where}.replication_factor",
                           f"{p['replication_factor']} is above brokers {p['brokers']}; "
                           f"allowed: 1..brokers")
    if p["min_insync_replicas"] > p["replication_factor"]:
        raise matrix_error(path, f"{where}.min_insync_replicas",
                           f"{p['min_insync_replicas']} is above replication_factor "
                           f"{p['replication_factor']}; allowed: 1..replication_factor")
    if p["idempotence"] and p["acks"] != -1:
        raise matrix_error(path, f"{where}.idempotence",
                           f"true needs acks -1 (all), got acks {p['acks']}; allowed: "
                           f"idempotence false, or acks -1")
    if (p["failure"] != "none" and p["target"] in ("follower", "random")
            and p["replication_factor"] < 2):
        raise matrix_error(path, f"{where}.target",
                           f"{p['target']} needs replication_factor >= 2 (rf 1 has no "
                           "follower); allowed: leader | controller, or replication_factor >= 2")
    for part in parts_of(p["failure"]):
        failure = FAILURES.get(part)
        if failure is not None and not failure.runs_on(p["backend"]):
            needs = " or ".join(failure.backends or ())
            raise matrix_error(path, f"{where}.failure",
                               f"{p['failure']} needs backend {needs} (--kreplica-backend "
                               f"{needs} or backend: [{needs}]), got backend {p['backend']}; "
                               f"allowed on {p['backend']}: "
                               f"{' | '.join(failures_on(p['backend']))}")
    if is_composed(p["failure"]):
        _check_composed(path, where, p, scenario)
    _check_tiered(path, where, p, scenario)
    if p["workload"] == "txn_pipeline" and p["topics"] < 2:
        raise matrix_error(path, f"{where}.topics",
                           f"workload txn_pipeline needs topics >= 2 (the pipeline copies "
                           f"the others into the last), got {p['topics']}; allowed: 2 or more")
    if p["isolation"] is not None and p["workload"] != "txn":
        raise matrix_error(path, f"{where}.isolation",
                           f"{p['isolation']} sets the isolation of a txn workload's consumer "
                           f"group, got workload {p['workload']}; allowed: workload txn, or "
                           "no isolation")
    if p["mirror_semantics"] == "exactly-once" and not p["idempotence"]:
        raise matrix_error(path, f"{where}.mirror_semantics",
                           "exactly-once needs idempotence true (a retried send to the source "
                           "would be a duplicate before MirrorMaker 2 sees it); allowed: "
                           "at-least-once, or idempotence true")
    if p["mirror_semantics"] == "exactly-once" and scenario not in ("mirror",
                                                                    "version-compat"):
        raise matrix_error(path, f"{where}.mirror_semantics",
                           f"exactly-once needs a mirrored scenario, got {scenario}; allowed: "
                           "at-least-once")
    if p["target_brokers"] is not None or p["target_replication_factor"] is not None:
        _check_target_size(path, where, p, scenario)
    if p["failure"] != "none" and p["workload"] == "plain" and (
            p["target"] in WORKLOAD_TARGETS or p["target"] == GROUP_MEMBER):
        raise matrix_error(path, f"{where}.target",
                           f"{p['target']} needs a workload with a consumer group and "
                           "transactions (workload: txn or txn_pipeline), got plain; allowed: "
                           "leader | follower | controller")
    if p["failure"] != "none" and p["target"] in CLIENT_TARGETS:
        _check_client_target(path, where, p)
    if p["failure"] != "none" and p["target"] == "mirror-maker" and scenario != "mirror":
        raise matrix_error(path, f"{where}.target",
                           f"mirror-maker needs scenario mirror, got {scenario}; allowed: "
                           "leader | follower | controller")


def _check_target_size(path: Path, where: str, p: Mapping[str, Any], scenario: str) -> None:
    """A mirror target of its own size: a mirrored scenario, and no more replicas than
    target brokers."""
    key = "target_brokers" if p["target_brokers"] is not None else "target_replication_factor"
    if scenario != "mirror":
        raise matrix_error(path, f"{where}.{key}",
                           f"sizes the mirror target, got scenario {scenario}; allowed: "
                           "scenario mirror, or no value")
    brokers = p["target_brokers"] or p["brokers"]
    factor = p["target_replication_factor"]
    if factor is not None and factor > brokers:
        raise matrix_error(path, f"{where}.target_replication_factor",
                           f"{factor} is above the target's {brokers} brokers; allowed: "
                           f"1..{brokers}")


def _check_composed(path: Path, where: str, p: Mapping[str, Any], scenario: str) -> None:
    """A composed failure strikes brokers only (of the case's cluster: a mirror case's
    source), and two parts that each take their node out of the quorum need one that keeps
    a majority with two voters out."""
    if p["target"] not in (*TARGETS, "random"):
        raise matrix_error(path, f"{where}.target",
                           f"{p['target']} cannot take a composed failure ({p['failure']}: "
                           f"each part strikes a broker); allowed: {' | '.join(TARGETS)} | "
                           "random")
    if scenario not in ("replication", "mirror"):
        raise matrix_error(path, f"{where}.failure",
                           f"{p['failure']} (a composed failure) needs scenario replication "
                           f"or mirror, got {scenario}; allowed: one failure type")
    out = [part for part in parts_of(p["failure"]) if takes_out(part)]
    if len(out) > 1 and p["brokers"] < OUTAGE_BROKERS:
        raise matrix_error(path, f"{where}.failure",
                           f"{p['failure']}: both parts take their node out of the quorum "
                           f"(stopped, paused or cut off), which leaves {p['brokers']} voters "
                           f"without a majority; allowed: brokers >= {OUTAGE_BROKERS}, or one "
                           "part that keeps its node running (a link, clock or disk fault)")


def _check_client_target(path: Path, where: str, p: Mapping[str, Any]) -> None:
    """A fault of the producer or consumer process needs a client that runs it as a process
    of its own, a failure that strikes a process, and (the producer) a produce-phase fault."""
    target = p["target"]
    if p["client"] == "kafka-python":
        raise matrix_error(path, f"{where}.target",
                           f"{target} needs a client whose {target} is a process of its own "
                           "(kafka-python's runs as a thread of the pytest worker), got client "
                           "kafka-python; allowed: client java | librdkafka, or target "
                           "leader | follower | controller")
    able = [n for n, f in FAILURES.items() if f.strike_component is not None]
    if p["failure"] not in able:
        raise matrix_error(path, f"{where}.failure",
                           f"{p['failure']} cannot strike the {target} process; allowed with "
                           f"target {target}: {' | '.join(able)}")
    if target == "producer" and p["fault_timing"] != "produce":
        raise matrix_error(path, f"{where}.fault_timing",
                           f"{p['fault_timing']}: the producer has finished by then, got target "
                           "producer; allowed with target producer: produce")


def build_case(path: Path, matrix: str, scenario: str, extra_markers: tuple[str, ...],
               varying: set[str], params: dict[str, Any]) -> Case:
    """The ``Case`` of one completed row: its id (the matrix name and the id parts of the
    ``varying`` dimensions), its checks, derived semantics and seed, and its markers."""
    case_id = f"{matrix}-{_case_id(varying, params) or 'default'}"
    _check_case(path, case_id, params, scenario)
    derived = derive_semantics(params)
    if params["semantics"] is None:
        params["semantics"] = derived
    elif _STRENGTH[params["semantics"]] < _STRENGTH[derived]:
        raise matrix_error(
            path, f"case {case_id}.semantics",
            f"{params['semantics']} is weaker than the {derived} this case's settings "
            f"give (acks {params['acks']}, idempotence "
            f"{str(params['idempotence']).lower()}); allowed: "
            + " | ".join(k for k, v in _STRENGTH.items() if v >= _STRENGTH[derived])
            + " (a loss under faults passes only with its evidence: failures.md in the docs)")
    if params["seed"] is None:
        params["seed"] = zlib.crc32(case_id.encode())
    markers = ["kreplica", hyphen_free(matrix), *extra_markers]
    for name, dim in DIMENSIONS.items():
        if params["failure"] != "none" or name not in FAULT_ONLY:
            markers.extend(dim.markers(params[name]))
    return Case(matrix=matrix, scenario=scenario, case_id=case_id,
                markers=tuple(dict.fromkeys(markers)), source=str(path), **params)
