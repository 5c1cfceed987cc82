"""Finding, validating and reading the tables of a run directory (shared/HISTORY.md).

Each table is ``NAME.jsonl`` (JSON Lines) or ``NAME.parquet`` (a file or a folder of files)
with the same columns. Spark reads them with explicit schemas (``spark_tables``), every other
step through ``arrow.read_arrow``; the plain Python code here validates row by row, which the
baseline checker uses for everything and the Spark checker uses only to name the first bad
line once Spark has counted bad rows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import HistoryError
from ...history import EVENTS, ISOLATION_LEVELS, POLLS, SENDS, STATUSES, TXN_OUTCOMES, TXNS

INT, STR = "int", "str"


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # INT or STR
    required: bool = False
    allowed: tuple[str, ...] | None = None
    minimum: int | None = None  # an integer column's least value (offsets: 0)


COLUMNS: dict[str, tuple[Column, ...]] = {
    SENDS: (
        Column("process", INT, True),
        Column("topic", STR, True),
        Column("partition", INT, True),
        Column("id", STR, True),
        Column("offset", INT, minimum=0),
        Column("status", STR, True, STATUSES),
        Column("invoke_ns", INT, True),
        Column("complete_ns", INT, True),
        Column("error", STR),
        Column("cluster", STR),
        Column("txn", STR),  # version 2
        Column("source", STR),  # version 2: the id a read-process-write pipeline copied
    ),
    POLLS: (
        Column("process", INT, True),
        Column("poll", INT, True),
        Column("topic", STR, True),
        Column("partition", INT, True),
        Column("offset", INT, True, minimum=0),
        Column("id", STR, True),
        Column("time_ns", INT, True),
        Column("index", INT),
        Column("cluster", STR),
        Column("isolation", STR, allowed=ISOLATION_LEVELS),  # version 2; missing: uncommitted
        Column("generation", INT),  # version 2
        Column("txn", STR),  # version 2: the read-process-write transaction that polled
    ),
    EVENTS: (
        Column("time_ns", INT, True),
        Column("kind", STR, True),
        Column("process", INT),
        Column("node", STR),
        Column("role", STR),
        Column("detail", STR),
        Column("cluster", STR),
        Column("assignment", STR),  # version 2: "topic:partition ..." after assign / rebalance
        Column("generation", INT),  # version 2
    ),
    TXNS: (  # version 2: one row per transaction
        Column("process", INT, True),
        Column("txn", STR, True),
        Column("status", STR, True, TXN_OUTCOMES),
        Column("begin_ns", INT, True),
        Column("end_ns", INT),
        Column("complete_ns", INT, True),
        Column("error", STR),
        Column("offsets", STR),  # "topic:partition:offset ..." committed in the transaction
    ),
}
EXEMPTING_EVENTS = ("assign", "rebalance")
CORRUPT = "_corrupt_record"


@dataclass(frozen=True)
class Table:
    name: str
    path: Path
    format: str  # "json" or "parquet"

    def __str__(self) -> str:
        return str(self.path)


def find_table(run_dir: Path, name: str, required: bool = True) -> Table | None:
    """``NAME.jsonl`` or ``NAME.parquet`` in ``run_dir``; exactly one of them may exist."""
    jsonl, parquet = run_dir / f"{name}.jsonl", run_dir / f"{name}.parquet"
    found = [t for t in (Table(name, jsonl, "json"), Table(name, parquet, "parquet"))
             if t.path.exists()]
    if len(found) == 2:
        raise HistoryError(f"{run_dir}: both {jsonl.name} and {parquet.name} exist; keep one")
    if found:
        table = found[0]
        if table.format == "parquet" and table.path.is_dir() and not parquet_files(table.path):
            raise HistoryError(f"{table.path}: folder holds no .parquet file")
        return table
    if required:
        raise HistoryError(f"{run_dir}: no {name} table ({jsonl.name} or {parquet.name})")
    return None


def check_run_dir(run_dir: str | os.PathLike[str]) -> Path:
    path = Path(run_dir)
    if not path.exists():
        raise HistoryError(f"{path}: no such run directory")
    if not path.is_dir():
        raise HistoryError(f"{path}: not a directory")
    return path


def parquet_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.parquet") if p.is_file() and
                  not any(part.startswith(("_", ".")) for part in p.relative_to(path).parts))


def table_bytes(table: Table | None) -> int:
    """How many bytes of files the table holds (0 for none): sizes its Spark shuffle."""
    if table is None:
        return 0
    files = [table.path] if table.format == "json" else parquet_files(table.path)
    return sum(f.stat().st_size for f in files)


# ---------------------------------------------------------------- row validation (Python)

_SPECS = {name: tuple((c.name, c.kind == INT, c.required, c.allowed, c.minimum)
                      for c in cols) for name, cols in COLUMNS.items()}


def row_problem(name: str, row: Any) -> str | None:
    """Why a decoded row breaks the contract, or None. Integers must be JSON integers."""
    if not isinstance(row, dict):
        return f"expected a JSON object, found {type(row).__name__}"
    get = row.get
    for key, is_int, required, allowed, minimum in _SPECS[name]:
        value = get(key)
        if value is None:
            if required:
                return f"key '{key}' is missing or null"
            continue
        kind = type(value)
        if is_int:
            if kind is not int:
                return f"key '{key}' is {json.dumps(value)}; expected an integer"
            if minimum is not None and value < minimum:
                return f"key '{key}' is {value}; expected an integer >= {minimum}"
        elif kind is not str and not (key == "node" and kind is int):
            return f"key '{key}' is {json.dumps(value)}; expected a string"
        if allowed is not None and value not in allowed:
            return f"key '{key}' is {value!r}; allowed: {', '.join(allowed)}"
    return None


def iter_jsonl(table: Table, tolerate_torn_tail: bool = True) -> Iterator[dict[str, Any]]:
    """Validated rows of a JSON Lines table; blank lines are skipped. A last line without
    its newline that does not parse is a write cut short by a crash: skipped when
    ``tolerate_torn_tail``. Anything else bad raises HistoryError naming file and line."""
    try:
        handle = open(table.path, "rb")  # noqa: SIM115
    except OSError as exc:
        raise HistoryError(f"{table.path}: cannot read: {exc.strerror}") from None
    loads = json.loads
    with handle:
        lineno = 0
        for raw in handle:
            lineno += 1
            if not raw.strip():
                continue
            try:
                row = loads(raw.decode("utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                if tolerate_torn_tail and not raw.endswith(b"\n") and _at_eof(handle):
                    return
                msg = getattr(exc, "msg", None) or str(exc)
                raise HistoryError(f"{table.path}:{lineno}: not valid JSON: {msg}") from None
            problem = row_problem(table.name, row)
            if problem:
                raise HistoryError(f"{table.path}:{lineno}: {problem}")
            yield row


def without_torn_tail(data: bytes) -> bytes:
    """A whole JSON Lines file's bytes without a last line that lacks its newline and does
    not parse (``iter_jsonl``'s rule, for readers that parse the file at once)."""
    if not data or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n") + 1
    try:
        json.loads(data[cut:].decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return data[:cut]  # a write cut short by a crash
    return data


def _at_eof(handle: Any) -> bool:
    return handle.read(1) == b""


def first_jsonl_problem(table: Table) -> tuple[str | None, bool]:
    """(one-line message for the first bad line or None, whether a torn last line exists)."""
    try:
        for _ in iter_jsonl(table, tolerate_torn_tail=False):
            pass
    except HistoryError as exc:
        torn = _torn_tail(table.path)
        text = str(exc)
        if torn and text.startswith(f"{table.path}:{torn}:"):
            return None, True
        return text, bool(torn)
    return None, False


def _torn_tail(path: Path) -> int:
    """Line number of a last line lacking its newline (a write cut short), else 0."""
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return 0
        handle.seek(0)
        return sum(1 for _ in handle)


def parquet_schema_problem(table: Table) -> str | None:
    """Check column names and types in the Parquet footers (cheap: no data read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for file in parquet_files(table.path):
        try:
            schema = pq.read_schema(file)
        except (OSError, pa.ArrowException) as exc:
            return f"{file}: not a readable Parquet file: {str(exc).splitlines()[0]}"
        for col in COLUMNS[table.name]:
            if col.name not in schema.names:
                if col.required:
                    return f"{file}: column '{col.name}' is missing"
                continue
            kind = schema.field(col.name).type
            ok = (pa.types.is_integer(kind) if col.kind == INT
                  else pa.types.is_string(kind) or pa.types.is_large_string(kind)
                  or (col.name == "node" and pa.types.is_integer(kind)))
            if not pa.types.is_null(kind) and not ok:
                expected = "an integer" if col.kind == INT else "a string"
                return f"{file}: column '{col.name}' has type {kind}; expected {expected}"
    return None


def iter_parquet(table: Table) -> Iterator[dict[str, Any]]:
    """Validated rows of a Parquet table, in file order."""
    import pyarrow.parquet as pq

    problem = parquet_schema_problem(table)
    if problem:
        raise HistoryError(problem)
    names = [c.name for c in COLUMNS[table.name]]
    for file in parquet_files(table.path):
        parquet = pq.ParquetFile(file)
        present = [n for n in names if n in parquet.schema_arrow.names]
        row_number = 0
        for batch in parquet.iter_batches(columns=present, batch_size=65536):
            for row in batch.to_pylist():
                row_number += 1
                problem = row_problem(table.name, row)
                if problem:
                    raise HistoryError(f"{file}: row {row_number}: {problem}")
                yield row


def iter_rows(table: Table) -> Iterator[dict[str, Any]]:
    return iter_jsonl(table) if table.format == "json" else iter_parquet(table)


def first_problem(table: Table) -> str | None:
    """The first bad row of a table as one line, for when Spark has counted bad rows."""
    if table.format == "json":
        return first_jsonl_problem(table)[0]
    try:
        for _ in iter_parquet(table):
            pass
    except HistoryError as exc:
        return str(exc)
    return None


def read_exempting_events(table: Table | None) -> dict[int, list[int]]:
    """process -> sorted times of its ``assign`` / ``rebalance`` events. The events table is
    small (faults and assignments), so it is read and validated in Python."""
    times: dict[int, list[int]] = {}
    if table is None:
        return times
    for row in iter_rows(table):
        if row["kind"] in EXEMPTING_EVENTS and row.get("process") is not None:
            times.setdefault(row["process"], []).append(row["time_ns"])
    for values in times.values():
        values.sort()
    return times


def read_assignments(table: Table | None) -> dict[int, list[tuple[int, tuple[str, ...] | None]]]:
    """process -> its ``assign`` / ``rebalance`` events in time order, each with the
    partitions (``topic:partition``) it held afterwards, or None where the event recorded no
    assignment (version 1). Empty when no event recorded one: then today's rule applies."""
    out: dict[int, list[tuple[int, tuple[str, ...] | None]]] = {}
    if table is None:
        return out
    recorded = False
    for row in iter_rows(table):
        if row["kind"] in EXEMPTING_EVENTS and row.get("process") is not None:
            text = row.get("assignment")
            recorded = recorded or text is not None
            held = None if text is None else tuple(sorted(text.split()))
            out.setdefault(row["process"], []).append((row["time_ns"], held))
    for values in out.values():
        values.sort(key=lambda v: v[0])
    return out if recorded else {}
