"""Matrix files: load, validate, expand into cases, name them and mark them.

A matrix is a YAML file (``matrices/<name>.yaml``) naming a scenario and, per dimension, a
list of values. Expansion is the cartesian product (or, with ``strategy: pairwise``, a
covering array in which every pair of values occurs), minus ``exclude`` entries, plus
``include`` entries. Every dimension the suite knows is in ``DIMENSIONS`` below: its allowed
values, default, case-id part and markers live in one row, so adding a dimension is one edit.

Pure logic (no pytest, no Kafka): the plugin turns ``Case`` objects into ``pytest.param``s.
Every problem is a ``MatrixError`` whose message is one line naming the file, the key and
what is allowed.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cluster import backend_names
from ..errors import MatrixError
from ..faults import (
    FAILURE_VALUES,
    FAILURES,
    NONE,
    RANDOM_FAILURES,
    TARGET_VALUES,
    failures_on,
)
from ..scenarios import SCENARIOS

TOP_LEVEL_KEYS = ("description", "scenario", "markers", "strategy", "dimensions", "exclude",
                  "include", "marks")
STRATEGIES = ("product", "pairwise")
SEMANTICS = ("at-least-once", "exactly-once", "at-most-once")
_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024 * 1024}
_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]*$")
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


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise InvalidValue("true | false")


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


def _seed(value: Any) -> int | None:
    if value is None or value == "auto":
        return None
    return _int_at_least(0)(value)


# ---------------------------------------------------------------- id parts
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


@dataclass(frozen=True)
class Dimension:
    """One row of the registry: how a dimension is parsed, named and marked."""

    name: str
    parse: Callable[[Any], Any]
    default: Any
    id_part: Callable[[Any], str]
    markers: Callable[[Any], list[str]] = lambda value: []
    marker_values: tuple[Any, ...] = ()  # values whose markers are registered up front
    doc: str = ""


def _hyphen_free(text: str) -> str:
    return text.replace("-", "_")


DIMENSIONS: dict[str, Dimension] = {d.name: d for d in [
    Dimension("partitions", _int_at_least(1), 1, lambda v: f"p{v}",
              doc="partitions per topic"),
    Dimension("replication_factor", _int_at_least(1), 3, lambda v: f"rf{v}",
              doc="replicas per partition"),
    Dimension("segment_bytes", _segment_bytes, None,
              lambda v: "segdefault" if v is None else f"seg{_size_text(v)}",
              doc="topic segment size (1K/2K/10K use internal.segment.bytes on 4.x)"),
    Dimension("topics", _int_at_least(1), 1, lambda v: f"t{v}", doc="topics per case"),
    Dimension("compression", _choice("none", "gzip", "snappy", "lz4", "zstd"), "none",
              lambda v: v, lambda v: [f"compression_{v}"],
              ("none", "gzip", "snappy", "lz4", "zstd"), doc="producer compression"),
    Dimension("acks", _acks, -1, lambda v: f"acks{v}",
              lambda v: ["acks_all" if v == -1 else f"acks_{v}"], (-1, 0, 1),
              doc="producer acks (-1 = all)"),
    Dimension("producer_mode", _choice("sync", "async"), "sync", lambda v: v,
              lambda v: [f"producer_{v}"], ("sync", "async"),
              doc="sync waits for each send; async batches with callbacks"),
    Dimension("min_insync_replicas", _int_at_least(1), 1, lambda v: f"minisr{v}",
              doc="topic min.insync.replicas"),
    Dimension("idempotence", _boolean, False, lambda v: "idem" if v else "noidem",
              lambda v: ["idempotence"] if v else [], (True,),
              doc="producer enable.idempotence (needs acks -1)"),
    Dimension("brokers", _int_at_least(1), None, lambda v: f"b{v}",
              doc="cluster size (default: max(3, replication_factor))"),
    Dimension("messages", _int_at_least(1), 1000, lambda v: f"m{v}",
              doc="messages sent (sync ≈ 340 msg/s here)"),
    Dimension("message_bytes", _int_at_least(0), 0, lambda v: f"mb{v}",
              doc="record value size: id, then a space and padding"),
    Dimension("kafka_version", _kafka_version, None,
              lambda v: "kdefault" if v is None else f"k{v}", _kafka_markers,
              (None, "3.9.0"), doc="default = newest 4.x with every artifact published"),
    # two-cluster and version dimensions (issue 8: mirrored runs, version compatibility)
    Dimension("target_kafka_version", _kafka_version, None,
              lambda v: "tkdefault" if v is None else f"tk{v}", _kafka_markers,
              doc="the second version: the mirror target's, or the version a rolling upgrade "
                  "goes to (default = newest 4.x with every artifact published)"),
    Dimension("replication_policy", _choice("default", "identity"), "default",
              lambda v: f"policy-{v}", lambda v: [f"policy_{v}"], ("default", "identity"),
              doc="MirrorMaker 2 topic names on the target: default prefixes the source "
                  "alias (source.t), identity keeps t"),
    Dimension("mirror_semantics", _choice("at-least-once", "exactly-once"), "at-least-once",
              lambda v: {"at-least-once": "mm-alo", "exactly-once": "mm-eo"}[v],
              lambda v: ["mirror_exactly_once"] if v == "exactly-once" else [],
              ("at-least-once", "exactly-once"),
              doc="MirrorMaker 2 delivery: exactly-once runs its worker with "
                  "exactly.once.source.support=enabled (KIP-618, Kafka >= 3.5) and reads the "
                  "target read_committed; the case then expects exactly-once"),
    Dimension("compat", _choice("mirror-pair", "upgrade"), "mirror-pair", lambda v: v,
              lambda v: ["upgrade"] if v == "upgrade" else [],
              ("mirror-pair", "upgrade"),
              doc="version-compat form: a mirrored pair of two versions, or a rolling "
                  "upgrade of one cluster from kafka_version to target_kafka_version"),
    Dimension("backend", _choice(*backend_names()), "process", lambda v: v,
              lambda v: [f"backend_{v}"], backend_names(), doc="cluster backend"),
    # failure dimensions (issue 4 drives the faults; validated here)
    Dimension("failure", _choice(*FAILURE_VALUES), NONE,
              lambda v: "nofail" if v == NONE else v, lambda v: [f"failure_{v}"],
              FAILURE_VALUES,
              doc="; ".join(f"{n} = {f.doc}" for n, f in FAILURES.items())
              + f"; random = one of {'/'.join(RANDOM_FAILURES)} per fault, from the seed"),
    Dimension("target", _choice(*TARGET_VALUES),
              "leader", lambda v: v, lambda v: [f"target_{_hyphen_free(v)}"],
              TARGET_VALUES,
              doc="role of the node hurt, resolved at the moment of the fault; random = "
                  "leader/follower/controller per fault, from the seed"),
    Dimension("failures", _int_at_least(1), 1, lambda v: f"x{v}", doc="faults in sequence"),
    Dimension("duration", _seconds, None, lambda v: "durdefault" if v is None else f"dur{v:g}s",
              doc="soak: produce and inject faults for this many seconds (C.8); "
                  "overrides messages and failures"),
    Dimension("downtime", _seconds, 5.0, lambda v: f"down{v:g}s",
              doc="seconds a node stays down / paused"),
    Dimension("fault_timing", _choice("produce", "consume"), "produce",
              lambda v: f"during-{v}", doc="the phase the faults hit"),
    Dimension("unclean_leader_election", _boolean, False,
              lambda v: "unclean" if v else "nounclean",
              lambda v: ["unclean_leader_election"] if v else [], (True,),
              doc="topic unclean.leader.election.enable"),
    Dimension("semantics", _choice(*SEMANTICS), None,
              lambda v: {"at-least-once": "alo", "exactly-once": "eo",
                         "at-most-once": "amo"}[v],
              lambda v: [f"semantics_{_hyphen_free(v)}"], SEMANTICS,
              doc="expected delivery semantics (default derived, see derive_semantics)"),
    Dimension("seed", _seed, None, lambda v: "seedauto" if v is None else f"seed{v}",
              doc="seed of the fault schedule (default: derived from the case id)"),
]}


def derive_semantics(params: Mapping[str, Any]) -> str:
    """The semantics a case expects when its matrix does not say: exactly-once for an
    idempotent producer with no faults, or behind an exactly-once MirrorMaker 2 (whatever
    fails it); else at-least-once. Never at-most-once by configuration: a case with acks 1
    / 0 or unclean leader election under faults still expects every acknowledged record,
    and a loss passes only when the fault evidence explains it (``tradeoffs``,
    docs/failures.md "Loss and its evidence")."""
    if params["idempotence"] and (params["failure"] == "none"
                                  or params["mirror_semantics"] == "exactly-once"):
        return "exactly-once"
    return "at-least-once"


_STRENGTH = {"at-most-once": 0, "at-least-once": 1, "exactly-once": 2}


def static_markers() -> dict[str, str]:
    """Every marker a case can carry whatever the matrices say, with its help line."""
    markers = {
        "kreplica": "a case expanded from a kreplica matrix",
        "ci": "cases small enough for CI",
        "kafka_3_x": "Kafka 3.x brokers", "kafka_4_x": "Kafka 4.x brokers",
        "kafka_3_9": "Kafka 3.9.x brokers",
    }
    for dim in DIMENSIONS.values():
        for value in dim.marker_values:
            for name in dim.markers(value):
                markers.setdefault(name, f"cases with {dim.name} = {value}")
    return markers


# ---------------------------------------------------------------- cases
@dataclass(frozen=True)
class Case:
    """One test case: a full set of dimension values plus where it came from."""

    matrix: str
    scenario: str
    case_id: str
    params: tuple[tuple[str, Any], ...]  # every dimension, registry order
    markers: tuple[str, ...]
    source: str = field(default="", compare=False)

    def __getattr__(self, name: str) -> Any:
        for key, value in object.__getattribute__(self, "params"):
            if key == name:
                return value
        raise AttributeError(name)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def __repr__(self) -> str:
        return f"Case({self.matrix!r}, {self.case_id!r})"


@dataclass(frozen=True)
class Matrix:
    name: str
    path: Path
    description: str
    scenario: str
    markers: tuple[str, ...]
    cases: tuple[Case, ...]
    subset_markers: tuple[str, ...] = ()  # markers of ``marks``: on some cases only

    @property
    def marker(self) -> str:
        return _hyphen_free(self.name)


def _fail(path: Path, where: str, message: str) -> MatrixError:
    return MatrixError(f"{path}: {where}: {message}")


def _parse_value(path: Path, where: str, name: str, value: Any) -> Any:
    if name not in DIMENSIONS:
        raise _fail(path, f"{where}.{name}", f"unknown dimension; allowed: "
                                             f"{', '.join(DIMENSIONS)}")
    try:
        return DIMENSIONS[name].parse(value)
    except InvalidValue as exc:
        raise _fail(path, f"{where}.{name}", f"bad value {value!r}; allowed: {exc}") from None


def _entries(path: Path, data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    entries = data.get(key) or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) and e for e in entries):
        raise _fail(path, key, "must be a list of non-empty mappings {dimension: value}")
    return [{name: _parse_value(path, f"{key}[{i}]", name, value) for name, value in e.items()}
            for i, e in enumerate(entries)]


def _marks(path: Path, data: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``marks: {marker: [{dimension: value}, ...]}``: the marker goes on every case that
    matches one of its entries (e.g. the reduced ``ci`` subset of a failure matrix)."""
    marks = data.get("marks") or {}
    if not isinstance(marks, dict):
        raise _fail(path, "marks", "must be a mapping {marker: [{dimension: value}, ...]}")
    out = {}
    for marker, entries in marks.items():
        if not isinstance(marker, str) or not marker.isidentifier():
            raise _fail(path, "marks", f"bad marker name {marker!r}; allowed: an identifier")
        out[marker] = _entries(path, {f"marks.{marker}": entries}, f"marks.{marker}")
    return out


def _matches(entry: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    return all(k in row and row[k] == v for k, v in entry.items())


def _combinations(strategy: str, names: list[str], values: list[list[Any]],
                  exclude: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the product (or of a pairwise covering array) that no exclude entry matches."""
    def keep(row: Mapping[str, Any]) -> bool:
        return not any(_matches(e, row) for e in exclude)

    if strategy == "product" or len(names) < 2:
        rows = (dict(zip(names, combo, strict=True)) for combo in itertools.product(*values))
        return [row for row in rows if keep(row)]
    from allpairspy import AllPairs  # lazy: only pairwise matrices need it

    # AllPairs asks about partial rows too; an exclude entry only rejects a complete match
    def keep_partial(partial: list[Any]) -> bool:
        return keep(dict(zip(names, partial, strict=False)))

    pairs = AllPairs(values, filter_func=keep_partial)
    return [dict(zip(names, row, strict=True)) for row in pairs]


def _case_id(varying: set[str], params: Mapping[str, Any]) -> str:
    shown = varying - set(FAULT_ONLY) if params["failure"] == "none" else varying
    return "-".join(d.id_part(params[n]) for n, d in DIMENSIONS.items() if n in shown)


def _check_case(path: Path, case_id: str, p: Mapping[str, Any], scenario: str) -> None:
    where = f"case {case_id}"
    if p["replication_factor"] > p["brokers"]:
        raise _fail(path, f"{where}.replication_factor",
                    f"{p['replication_factor']} is above brokers {p['brokers']}; "
                    f"allowed: 1..brokers")
    if p["min_insync_replicas"] > p["replication_factor"]:
        raise _fail(path, f"{where}.min_insync_replicas",
                    f"{p['min_insync_replicas']} is above replication_factor "
                    f"{p['replication_factor']}; allowed: 1..replication_factor")
    if p["idempotence"] and p["acks"] != -1:
        raise _fail(path, f"{where}.idempotence",
                    f"true needs acks -1 (all), got acks {p['acks']}; allowed: "
                    f"idempotence false, or acks -1")
    if (p["failure"] != "none" and p["target"] in ("follower", "random")
            and p["replication_factor"] < 2):
        raise _fail(path, f"{where}.target",
                    f"{p['target']} needs replication_factor >= 2 (rf 1 has no follower); "
                    "allowed: leader | controller, or replication_factor >= 2")
    failure = FAILURES.get(p["failure"])
    if failure is not None and not failure.runs_on(p["backend"]):
        needs = " or ".join(failure.backends or ())
        raise _fail(path, f"{where}.failure",
                    f"{p['failure']} needs backend {needs} (--kreplica-backend {needs} or "
                    f"backend: [{needs}]), got backend {p['backend']}; allowed on "
                    f"{p['backend']}: {' | '.join(failures_on(p['backend']))}")
    if p["mirror_semantics"] == "exactly-once" and not p["idempotence"]:
        raise _fail(path, f"{where}.mirror_semantics",
                    "exactly-once needs idempotence true (a retried send to the source "
                    "would be a duplicate before MirrorMaker 2 sees it); allowed: "
                    "at-least-once, or idempotence true")
    if p["mirror_semantics"] == "exactly-once" and scenario not in ("mirror",
                                                                    "version-compat"):
        raise _fail(path, f"{where}.mirror_semantics",
                    f"exactly-once needs a mirrored scenario, got {scenario}; allowed: "
                    "at-least-once")
    if p["failure"] != "none" and p["target"] == "mirror-maker" and scenario != "mirror":
        raise _fail(path, f"{where}.target",
                    f"mirror-maker needs scenario mirror, got {scenario}; allowed: "
                    "leader | follower | controller")


FAULT_ONLY = ("target", "failures", "downtime", "fault_timing")  # meaningless without faults


def _complete(raw: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Every dimension's value: the row's, else the caller's default, else the registry's.
    Without faults the fault-only dimensions take their defaults, so such rows collapse."""
    params = {n: raw.get(n, defaults.get(n, d.default)) for n, d in DIMENSIONS.items()}
    if params["brokers"] is None:
        params["brokers"] = max(3, params["replication_factor"])
    if params["failure"] == "none":
        params.update({n: defaults.get(n, DIMENSIONS[n].default) for n in FAULT_ONLY})
    return params


def _finish(path: Path, matrix: str, scenario: str, extra_markers: tuple[str, ...],
            varying: set[str], params: dict[str, Any]) -> Case:
    case_id = f"{matrix}-{_case_id(varying, params) or 'default'}"
    _check_case(path, case_id, params, scenario)
    derived = derive_semantics(params)
    if params["semantics"] is None:
        params["semantics"] = derived
    elif _STRENGTH[params["semantics"]] < _STRENGTH[derived]:
        raise _fail(path, f"case {case_id}.semantics",
                    f"{params['semantics']} is weaker than the {derived} this case's settings "
                    f"give (acks {params['acks']}, idempotence "
                    f"{str(params['idempotence']).lower()}); allowed: "
                    + " | ".join(k for k, v in _STRENGTH.items() if v >= _STRENGTH[derived])
                    + " (a loss under faults passes only with its evidence: "
                      "failures.md in the docs)")
    if params["seed"] is None:
        params["seed"] = zlib.crc32(case_id.encode())
    markers = ["kreplica", _hyphen_free(matrix), *extra_markers]
    for name, dim in DIMENSIONS.items():
        if params["failure"] != "none" or name not in FAULT_ONLY:
            markers.extend(dim.markers(params[name]))
    return Case(matrix, scenario, case_id, tuple(params.items()),
                tuple(dict.fromkeys(markers)), str(path))


def parse_matrix(path: Path, data: Any, defaults: Mapping[str, Any] | None = None) -> Matrix:
    """Validate a loaded YAML document and expand it into cases (deterministic order)."""
    defaults = defaults or {}
    name = path.stem
    if not _NAME_RE.match(name):
        raise _fail(path, "file name", f"{name!r} is not a matrix name; allowed: lower-case "
                                       "letters, digits, '-' and '_', starting with a letter")
    if not isinstance(data, dict):
        raise _fail(path, "top level", "must be a mapping; allowed keys: "
                                       + ", ".join(TOP_LEVEL_KEYS))
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise _fail(path, str(key), f"unknown key; allowed: {', '.join(TOP_LEVEL_KEYS)}")
    scenario = data.get("scenario", "replication")
    if not isinstance(scenario, str) or scenario not in SCENARIOS:
        raise _fail(path, "scenario", f"unknown scenario {scenario!r} (no test runs it); "
                                      f"allowed: {' | '.join(SCENARIOS)}")
    strategy = data.get("strategy", "product")
    if strategy not in STRATEGIES:
        raise _fail(path, "strategy", f"bad value {strategy!r}; allowed: "
                                      + " | ".join(STRATEGIES))
    extra = data.get("markers") or []
    if not isinstance(extra, list) or not all(isinstance(m, str) and m.isidentifier()
                                              for m in extra):
        raise _fail(path, "markers", f"bad value {extra!r}; allowed: a list of identifiers")
    description = data.get("description") or ""
    if not isinstance(description, str):
        raise _fail(path, "description", "must be a string")

    dims = data.get("dimensions") or {}
    if not isinstance(dims, dict):
        raise _fail(path, "dimensions", "must be a mapping {dimension: [values]}")
    names, values = [], []
    for dim_name, raw_values in dims.items():
        seq = raw_values if isinstance(raw_values, list) else [raw_values]
        if not seq:
            raise _fail(path, f"dimensions.{dim_name}", "empty list; allowed: one or more values")
        parsed = [_parse_value(path, "dimensions", dim_name, v) for v in seq]
        names.append(dim_name)
        values.append(list(dict.fromkeys(parsed)))
    exclude = _entries(path, data, "exclude")
    include = _entries(path, data, "include")
    marks = _marks(path, data)

    firsts = dict(zip(names, (v[0] for v in values), strict=True))
    raws = _combinations(strategy, names, values, exclude)
    raws += [{**firsts, **entry} for entry in include]
    rows = list({tuple(p.items()): p for p in (_complete(r, defaults) for r in raws)}.values())
    # ids name only what tells this matrix's cases apart: short, and unique by construction
    varying = {n for n in DIMENSIONS if len({repr(r[n]) for r in rows}) > 1}

    cases: dict[str, Case] = {}
    for row in rows:
        subset = tuple(m for m, entries in marks.items()
                       if any(_matches(e, row) for e in entries))
        case = _finish(path, name, scenario, tuple(extra) + subset, varying, row)
        if case.case_id in cases:  # an id part that is not one-to-one: a registry bug
            raise _fail(path, "dimensions", f"two cases share the id {case.case_id}")
        cases[case.case_id] = case
    if not cases:
        raise _fail(path, "exclude", "excludes every case; allowed: at least one case left")
    return Matrix(name, path, description, scenario, tuple(extra), tuple(cases.values()),
                  tuple(marks))


def load_matrix(path: Path, defaults: Mapping[str, Any] | None = None) -> Matrix:
    """Read and expand one matrix file; every problem is one-line ``MatrixError``."""
    import yaml

    from ..yaml_strict import DuplicateKey, unique_key_loader

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _fail(path, "file", f"cannot be read ({exc.strerror}); allowed: a readable "
                                  "YAML file") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise _fail(path, f"line {line}", f"not UTF-8 (byte {exc.object[exc.start]:#04x} at "
                                          f"offset {exc.start}); allowed: a UTF-8 YAML file"
                    ) from None
    try:
        data = yaml.load(text, Loader=unique_key_loader())  # noqa: S506 - a SafeLoader
    except DuplicateKey as exc:
        raise _fail(path, f"line {exc.line}", f"key {exc.key!r} appears twice in one mapping "
                                              f"(YAML would keep the last silently); allowed: "
                                              f"each key once") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _fail(path, where, f"YAML syntax error: {problem}; allowed: valid YAML") from None
    return parse_matrix(path, data, defaults)


def resolve_matrices(selectors: Iterable[str], matrices_dir: Path) -> list[Path]:
    """Matrix files for ``--kreplica-matrix`` values (a name in ``matrices_dir`` or a path);
    with no selector, every ``*.yaml`` of ``matrices_dir``, sorted by name. A missing
    directory is an error: a run that finds no matrix must not pass by running nothing."""
    selectors = list(selectors)
    if not selectors:
        if not matrices_dir.is_dir():
            raise MatrixError(f"{matrices_dir}: kreplica_matrices_dir: no such directory; "
                              f"allowed: a directory of matrix *.yaml files (ini "
                              f"kreplica_matrices_dir, or --kreplica-matrix PATH)")
        return sorted(p for p in matrices_dir.iterdir() if p.suffix in (".yaml", ".yml"))
    paths: list[Path] = []
    for sel in selectors:
        candidate = Path(sel)
        if candidate.suffix in (".yaml", ".yml") or candidate.is_file():
            path = candidate if candidate.is_absolute() else Path.cwd() / candidate
        else:
            path = matrices_dir / f"{sel}.yaml"
        if not path.is_file():
            known = ([p.stem for p in sorted(matrices_dir.glob("*.yaml"))]
                     if matrices_dir.is_dir() else [])
            raise MatrixError(f"{path}: --kreplica-matrix: no such matrix file; allowed: a path "
                              f"or a name in {matrices_dir} ({', '.join(known) or 'none'})")
        if path not in paths:
            paths.append(path)
    return paths


def load_all(paths: Iterable[Path], defaults: Mapping[str, Any] | None = None) -> list[Matrix]:
    matrices = [load_matrix(p, defaults) for p in paths]
    seen: dict[str, Path] = {}
    for m in matrices:
        if m.name in seen:
            raise MatrixError(f"{m.path}: file name: matrix name {m.name!r} is also used by "
                              f"{seen[m.name]}; allowed: distinct file names")
        seen[m.name] = m.path
    return matrices
