"""Reading matrix files: parse the YAML strictly and resolve ``extends`` (``extends``),
validate every key and value against the dimension table, and expand (``expand``). Every
problem is one ``MatrixError`` line naming the file, the key and what is allowed."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import MatrixError
from ..scenarios import SCENARIOS
from . import extends
from .case import Case, Matrix
from .catalog import Catalog
from .dimensions import DIMENSIONS, InvalidValue
from .expand import STRATEGIES, build_case, combinations, complete, matches, matrix_error
from .findings import KEY as FINDINGS_KEY
from .findings import assign, parse_findings

__all__ = ["TOP_LEVEL_KEYS", "load_all", "load_matrix", "parse_matrix", "resolve_matrices"]

TOP_LEVEL_KEYS = ("description", "scenario", "markers", "strategy", "dimensions", "exclude",
                  "include", "marks", extends.KEY, FINDINGS_KEY)
_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]*$")


def _parse_value(path: Path, where: str, name: str, value: Any) -> Any:
    if name not in DIMENSIONS:
        raise matrix_error(path, f"{where}.{name}", f"unknown dimension; allowed: "
                                                    f"{', '.join(DIMENSIONS)}")
    try:
        return DIMENSIONS[name].parse(value)
    except InvalidValue as exc:
        raise matrix_error(path, f"{where}.{name}",
                           f"bad value {value!r}; allowed: {exc}") from None


def _entries(path: Path, data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    entries = data.get(key) or []
    if not isinstance(entries, list) or not all(isinstance(e, dict) and e for e in entries):
        raise matrix_error(path, key, "must be a list of non-empty mappings {dimension: value}")
    return [{name: _parse_value(path, f"{key}[{i}]", name, value) for name, value in e.items()}
            for i, e in enumerate(entries)]


def _marks(path: Path, data: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``marks: {marker: [{dimension: value}, ...]}``: the marker goes on every case that
    matches one of its entries (e.g. the reduced ``ci`` subset of a failure matrix)."""
    marks = data.get("marks") or {}
    if not isinstance(marks, dict):
        raise matrix_error(path, "marks", "must be a mapping {marker: [{dimension: value}, ...]}")
    out = {}
    for marker, entries in marks.items():
        if not isinstance(marker, str) or not marker.isidentifier():
            raise matrix_error(path, "marks",
                               f"bad marker name {marker!r}; allowed: an identifier")
        out[marker] = _entries(path, {f"marks.{marker}": entries}, f"marks.{marker}")
    return out


def _header(path: Path, data: Any) -> tuple[str, str, list[str], str]:
    """The top-level keys but ``dimensions``: scenario, strategy, markers, description."""
    if not isinstance(data, dict):
        raise matrix_error(path, "top level", "must be a mapping; allowed keys: "
                                              + ", ".join(TOP_LEVEL_KEYS))
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise matrix_error(path, str(key),
                               f"unknown key; allowed: {', '.join(TOP_LEVEL_KEYS)}")
    scenario = data.get("scenario", "replication")
    if not isinstance(scenario, str) or scenario not in SCENARIOS:
        raise matrix_error(path, "scenario", f"unknown scenario {scenario!r} (no test runs "
                                             f"it); allowed: {' | '.join(SCENARIOS)}")
    strategy = data.get("strategy", "product")
    if strategy not in STRATEGIES:
        raise matrix_error(path, "strategy", f"bad value {strategy!r}; allowed: "
                                             + " | ".join(STRATEGIES))
    extra = data.get("markers") or []
    if not isinstance(extra, list) or not all(isinstance(m, str) and m.isidentifier()
                                              for m in extra):
        raise matrix_error(path, "markers",
                           f"bad value {extra!r}; allowed: a list of identifiers")
    description = data.get("description") or ""
    if not isinstance(description, str):
        raise matrix_error(path, "description", "must be a string")
    return scenario, strategy, extra, description


def parse_matrix(path: Path, data: Any, defaults: Mapping[str, Any] | None = None) -> Matrix:
    """Validate a loaded YAML document and expand it into cases (deterministic order)."""
    defaults = defaults or {}
    name = path.stem
    if not _NAME_RE.match(name):
        raise matrix_error(path, "file name",
                           f"{name!r} is not a matrix name; allowed: lower-case letters, "
                           "digits, '-' and '_', starting with a letter")
    scenario, strategy, extra, description = _header(path, data)

    dims = data.get("dimensions") or {}
    if not isinstance(dims, dict):
        raise matrix_error(path, "dimensions", "must be a mapping {dimension: [values]}")
    names, values = [], []
    for dim_name, raw_values in dims.items():
        seq = raw_values if isinstance(raw_values, list) else [raw_values]
        if not seq:
            raise matrix_error(path, f"dimensions.{dim_name}",
                               "empty list; allowed: one or more values")
        parsed = [_parse_value(path, "dimensions", dim_name, v) for v in seq]
        names.append(dim_name)
        values.append(list(dict.fromkeys(parsed)))
    exclude = _entries(path, data, "exclude")
    include = _entries(path, data, "include")
    marks = _marks(path, data)
    findings = parse_findings(path, data)

    firsts = dict(zip(names, (v[0] for v in values), strict=True))
    raws = combinations(strategy, names, values, exclude)
    raws += [{**firsts, **entry} for entry in include]
    rows = list({tuple(p.items()): p for p in (complete(r, defaults) for r in raws)}.values())
    # ids name only what tells this matrix's cases apart: short, and unique by construction
    varying = {n for n in DIMENSIONS if len({repr(r[n]) for r in rows}) > 1}

    cases: dict[str, Case] = {}
    for row in rows:
        subset = tuple(m for m, entries in marks.items()
                       if any(matches(e, row) for e in entries))
        case = build_case(path, name, scenario, tuple(extra) + subset, varying, row)
        if case.case_id in cases:  # an id part that is not one-to-one: a table bug
            raise matrix_error(path, "dimensions", f"two cases share the id {case.case_id}")
        cases[case.case_id] = case
    if not cases:
        raise matrix_error(path, "exclude", "excludes every case; allowed: at least one case left")
    return Matrix(name, path, description, scenario, tuple(extra), tuple(cases.values()),
                  tuple(marks), assign(findings, list(cases.values())))


def load_matrix(path: Path, defaults: Mapping[str, Any] | None = None,
                catalog: Catalog | None = None) -> Matrix:
    """Read and expand one matrix file, its ``extends:`` chain resolved against ``catalog``
    (default: the shipped matrices); every problem is one-line ``MatrixError``."""
    return parse_matrix(path, extends.resolve(path, extends.read_document(path), catalog),
                        defaults)


def resolve_matrices(selectors: Iterable[str], matrices_dir: Path) -> list[Path]:
    """Matrix files for ``--kreplica-matrix`` values (a name or a path), the names of
    ``matrices_dir`` over the shipped ones (``Catalog``); with no selector, every ``*.yaml``
    of ``matrices_dir``, sorted by name. A missing directory is an error here: a run that
    finds no matrix must not pass by running nothing (the plugin defaults to the shipped
    matrices only when the directory was not configured)."""
    return Catalog(matrices_dir, required=True).resolve(selectors)


def load_all(paths: Iterable[Path], defaults: Mapping[str, Any] | None = None,
             catalog: Catalog | None = None) -> list[Matrix]:
    """Load every matrix; two files with one name (the marker and id prefix) are an error."""
    matrices = [load_matrix(p, defaults, catalog) for p in paths]
    seen: dict[str, Path] = {}
    for m in matrices:
        if m.name in seen:
            raise MatrixError(f"{m.path}: file name: matrix name {m.name!r} is also used by "
                              f"{seen[m.name]}; allowed: distinct file names")
        seen[m.name] = m.path
    return matrices
