"""The results store: one SQLite file (standard library ``sqlite3``), one row per case run.

Several writers append at once (xdist workers, two pytest runs): the file is in WAL mode,
every connection waits for a lock up to ``BUSY_TIMEOUT_S`` (SQLite's own bounded busy
wait), and every row is one ``BEGIN IMMEDIATE`` transaction, so a row is written whole or
not at all. A run killed mid-write leaves the store readable: the half-written transaction
is rolled back by the next reader. WAL needs a local filesystem (not NFS).

The columns are what ``kreplica results`` and ``kreplica compare`` read; the whole
verdict.json is kept as JSON text (``verdict_json``) so figures a later version adds are in
the store too.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import InputError

BUSY_TIMEOUT_S = 60.0
SCHEMA_VERSION = 1
STORE_FILE = "results.sqlite"
#: column -> SQL type, in table order; JSON columns hold text
COLUMNS: dict[str, str] = {
    "run_id": "TEXT NOT NULL",  # one pytest session (or one import)
    "case_id": "TEXT NOT NULL",  # the matrix case, without a repeat's suffix
    "test_id": "TEXT",  # the pytest node id
    "repeat": "INTEGER",  # 1..N under --kreplica-repeat, else NULL
    "matrix": "TEXT",
    "parameters": "TEXT",  # JSON: every dimension's value
    "params_key": "TEXT",  # JSON of the parameters without the seed: "the same parameters"
    "seed": "INTEGER",
    "kafka_version": "TEXT",
    "backend": "TEXT",
    "build": "TEXT",  # the broker's build identity where known (a docker image)
    "outcome": "TEXT",  # pytest's: plugin.outcomes.OUTCOMES
    "verdict": "TEXT",  # valid | accepted | invalid | error | harness
    "passed": "INTEGER",  # verdict.json's passed
    "reason": "TEXT",
    "history_valid": "INTEGER",
    "replicas_valid": "INTEGER",
    "counts": "TEXT",  # JSON
    "phases": "TEXT",  # JSON
    "elections": "TEXT",  # JSON: every fault's election time
    "election_max_s": "REAL",
    "unavailability_s": "REAL",  # the first unavailability figure verdict.json has, if any
    "verdict_json": "TEXT",  # the whole verdict.json
    "start_time": "REAL",  # seconds since the epoch
    "duration_s": "REAL",
    "run_dir": "TEXT",
}
JSON_COLUMNS = ("parameters", "counts", "phases", "elections", "verdict_json")


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection in WAL mode with the busy timeout; creates the file and its table."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA journal_mode = WAL")
    columns = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f"CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY, {columns})")
        conn.execute("CREATE INDEX IF NOT EXISTS results_case ON results (case_id)")
        conn.execute("CREATE INDEX IF NOT EXISTS results_run ON results (run_id)")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return conn


def open_existing(path: Path | str) -> sqlite3.Connection:
    """A reader's connection; a missing or foreign file is one line (``InputError``)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such results store (pytest --kreplica-results PATH "
                         "writes one; kreplica results --import DIR fills one)")
    try:
        conn = connect(path)
        conn.execute("SELECT count(*) FROM results").fetchone()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{path}: not a results store ({exc})") from None
    return conn


def encoded(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its JSON columns as text and unknown keys left out."""
    out = {k: v for k, v in row.items() if k in COLUMNS}
    for name in JSON_COLUMNS:
        if out.get(name) is not None and not isinstance(out[name], str):
            out[name] = json.dumps(out[name], sort_keys=True, default=str)
    for name in ("passed", "history_valid", "replicas_valid"):
        if isinstance(out.get(name), bool):
            out[name] = int(out[name])
    return out


def append(conn: sqlite3.Connection, row: dict[str, Any]) -> int:
    """Append one row in its own transaction; returns its id."""
    values = encoded(row)
    names = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    conn.execute("BEGIN IMMEDIATE")
    try:
        cur = conn.execute(f"INSERT INTO results ({names}) VALUES ({marks})",
                           tuple(values.values()))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return int(cur.lastrowid)


def append_to(path: Path | str, row: dict[str, Any]) -> int:
    """Open, append one row, close: what each writer process does per case."""
    conn = connect(path)
    try:
        return append(conn, row)
    finally:
        conn.close()


def decoded(record: sqlite3.Row) -> dict[str, Any]:
    row = dict(record)
    for name in JSON_COLUMNS:
        if row.get(name):
            row[name] = json.loads(row[name])
    return row


def rows(conn: sqlite3.Connection, where: str = "", args: Iterable[Any] = ()
         ) -> list[dict[str, Any]]:
    """Rows in the order they were written (``where``: an SQL condition with ``?``)."""
    sql = "SELECT * FROM results" + (f" WHERE {where}" if where else "") + " ORDER BY id"
    return [decoded(r) for r in conn.execute(sql, tuple(args))]


def has_run(conn: sqlite3.Connection, run_dir: str, start_time: float | None) -> bool:
    """Whether the run directory's case (by its start time) is in the store already."""
    found = conn.execute("SELECT 1 FROM results WHERE run_dir = ? AND start_time IS ?",
                         (run_dir, start_time)).fetchone()
    return found is not None


def run_ids(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT run_id FROM results GROUP BY run_id ORDER BY min(id)")]


def kafka_versions(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT kafka_version FROM results WHERE kafka_version IS NOT NULL "
        "ORDER BY kafka_version")]
