"""Reading a matrix file's YAML strictly, and ``extends:``: a matrix built on another one.

``extends: leader-failure`` (a matrix name: the project's directory, then the shipped
matrices) or ``extends: ../base.yaml`` (a path, relative to the extending file) starts from
that matrix's document. The extending file's ``dimensions`` are merged into the base's one
dimension at a time (a dimension it names replaces the base's values, the others are kept);
every other key it sets (``exclude``, ``include``, ``marks``, ``markers``, ``strategy``,
``description``, ``scenario``) replaces the base's, so ``exclude: []`` drops the base's
excludes. The result is the extending file's own matrix: its name, ids and marker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..yaml_strict import DuplicateKey, unique_key_loader
from .catalog import SUFFIXES, Catalog
from .expand import matrix_error

KEY = "extends"
MERGED = "dimensions"


def read_document(path: Path) -> Any:
    """The YAML document of one matrix file; every problem is one-line ``MatrixError``."""
    # lazy: the plugin imports this package at every pytest start, before any matrix is read
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise matrix_error(path, "file", f"cannot be read ({exc.strerror}); allowed: a "
                                         "readable YAML file") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise matrix_error(path, f"line {line}",
                           f"not UTF-8 (byte {exc.object[exc.start]:#04x} at offset "
                           f"{exc.start}); allowed: a UTF-8 YAML file") from None
    try:
        return yaml.load(text, Loader=unique_key_loader())  # noqa: S506 - a SafeLoader
    except DuplicateKey as exc:
        raise matrix_error(path, f"line {exc.line}",
                           f"key {exc.key!r} appears twice in one mapping (YAML would keep "
                           f"the last silently); allowed: each key once") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise matrix_error(path, where,
                           f"YAML syntax error: {problem}; allowed: valid YAML") from None


def _allowed(catalog: Catalog) -> str:
    return f"allowed: a matrix name ({', '.join(catalog.names())}) or a path to a .yaml file"


def _base_path(path: Path, value: Any, catalog: Catalog) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise matrix_error(path, KEY, f"bad value {value!r}; {_allowed(catalog)}")
    if Path(value).suffix in SUFFIXES:
        base = Path(value) if Path(value).is_absolute() else path.parent / value
        if not base.is_file():
            raise matrix_error(path, KEY, f"no such file {base}; {_allowed(catalog)}")
        return base
    base = catalog.find(value, besides=path)
    if base is None:
        raise matrix_error(path, KEY, f"unknown matrix {value!r}; {_allowed(catalog)}")
    return base


def resolve(path: Path, data: Any, catalog: Catalog | None = None,
            chain: tuple[Path, ...] = ()) -> Any:
    """``data`` (the document of ``path``) with its ``extends:`` chain merged in; a document
    without ``extends`` (or not a mapping: ``parse_matrix`` says so) comes back as it is."""
    if not isinstance(data, dict) or KEY not in data:
        return data
    catalog = catalog or Catalog()
    chain = (*chain, path.resolve())
    base_path = _base_path(path, data[KEY], catalog)
    if base_path.resolve() in chain:
        names = " -> ".join(p.name for p in (*chain, base_path))
        raise matrix_error(path, KEY, f"cycle {names}; allowed: a chain of extends that ends "
                                      f"in a matrix without one")
    base = resolve(base_path, read_document(base_path), catalog, chain)
    if not isinstance(base, dict):
        raise matrix_error(base_path, "top level", f"must be a mapping (extended by {path})")
    merged = dict(base)
    for key, value in data.items():
        if key == KEY:
            continue
        if key == MERGED and isinstance(value, dict) and isinstance(base.get(key), dict):
            merged[key] = {**base[key], **value}
        else:
            merged[key] = value
    return merged
