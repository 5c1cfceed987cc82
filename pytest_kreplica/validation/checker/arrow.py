"""The one reader of a run directory's tables outside Spark: every step that reads a history
(the loss trade-off, the report) reads it here, so it accepts exactly what the checker
accepts (``tables``: the same files, the same contract, the same tolerance of a last line cut
short by a crash) and refuses the rest in the same one line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import HistoryError
from ...history import EVENTS
from .tables import (
    COLUMNS,
    INT,
    Table,
    find_table,
    first_problem,
    iter_rows,
    parquet_files,
    without_torn_tail,
)
from .tables import parquet_schema_problem as schema_problem

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


def arrow_schema(name: str) -> pa.Schema:
    """The contract's columns of table ``name``: integers as int64, the rest as strings."""
    import pyarrow as pa

    return pa.schema([(c.name, pa.int64() if c.kind == INT else pa.string())
                      for c in COLUMNS[name]])


def read_arrow(run_dir: str | Path, name: str, required: bool = False) -> pa.Table:
    """Table ``name`` of ``run_dir`` with every column of the contract (absent optional ones
    null). An absent table is empty unless ``required``; a bad row raises HistoryError
    naming its file and line, as the checker does."""
    table = find_table(Path(run_dir), name, required=required)
    if table is None:
        return arrow_schema(name).empty_table()
    if name == EVENTS:  # small, and its ``node`` is a string or an integer
        return _from_rows(table)
    out = _read_json(table) if table.format == "json" else _read_parquet(table)
    _check(table, out)
    return out


def time_origin_ns(sends: pa.Table, polls: pa.Table, events: pa.Table) -> int:
    """The history's first time: its earliest send, poll or event (0 for an empty history).
    The report's timeline and the availability segments both count seconds from it."""
    import pyarrow.compute as pc

    starts = [pc.min(c).as_py() for c in (sends["invoke_ns"], polls["time_ns"],
                                          events["time_ns"]) if len(c)]
    starts = [int(s) for s in starts if s is not None]
    return min(starts) if starts else 0


def _from_rows(table: Table) -> pa.Table:
    import pyarrow as pa

    schema = arrow_schema(table.name)
    rows = [{k: (str(v) if k == "node" and v is not None else v) for k, v in row.items()}
            for row in iter_rows(table)]
    return pa.Table.from_pylist(rows, schema=schema)


def _read_json(table: Table) -> pa.Table:
    """JSON Lines through pyarrow; a torn last line is left out (``tables.without_torn_tail``)."""
    import pyarrow as pa
    from pyarrow import json as pj

    schema = arrow_schema(table.name)
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        data = table.path.read_bytes()
    except OSError as exc:
        raise HistoryError(f"{table.path}: cannot read: {exc.strerror}") from None
    data = without_torn_tail(data)
    if not data.strip():
        return schema.empty_table()
    try:
        return pj.read_json(pa.BufferReader(data), parse_options=options)
    except pa.ArrowInvalid as exc:
        raise HistoryError(first_problem(table) or f"{table.path}: cannot be read: "
                           f"{str(exc).splitlines()[0]}") from None


def _read_parquet(table: Table) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    problem = schema_problem(table)
    if problem:
        raise HistoryError(problem)
    schema = arrow_schema(table.name)
    parts = []
    for file in parquet_files(table.path):
        try:
            got = pq.read_table(file)
        except (OSError, pa.ArrowException) as exc:
            raise HistoryError(f"{file}: cannot be read: {str(exc).splitlines()[0]}") from None
        parts.append(pa.table([got[f.name].cast(f.type) if f.name in got.column_names
                               else pa.nulls(got.num_rows, f.type) for f in schema],
                              schema=schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _check(table: Table, out: pa.Table) -> None:
    """The contract's value rules, over whole columns: a required column null, a value not
    allowed, an integer below its minimum. The first bad row is then named row by row."""
    import pyarrow.compute as pc

    for col in COLUMNS[table.name]:
        values = out[col.name]
        bad = bool(col.required and values.null_count)
        if not bad and col.allowed is not None:
            bad = bool(pc.any(pc.invert(pc.is_in(values.drop_null(),
                                                 value_set=_strings(col.allowed)))).as_py())
        if not bad and col.minimum is not None:
            bad = bool(pc.any(pc.less(values, col.minimum)).as_py())
        if bad:
            raise HistoryError(first_problem(table)
                               or f"{table.path}: column '{col.name}' breaks the contract")


def _strings(values: tuple[str, ...]):
    import pyarrow as pa

    return pa.array(values, pa.string())
