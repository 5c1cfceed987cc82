"""Writing the run directory of shared/HISTORY.md (contract version 1).

The workload records every send, every polled record and every fault as it happens, so a run
that crashes half-way can still be checked from what it wrote: each row is one JSON object on
its own line, appended and flushed at once; files are never rewritten. Producer callbacks run
on kafka-python's I/O thread, so every table is guarded by its own lock.

    with RunWriter(run_dir) as w:
        w.send(process=0, topic="t", partition=0, id="p0-000001", offset=5, status="ok",
               invoke_ns=t0, complete_ns=t1, error=None)
        w.poll(process=1, poll=3, topic="t", partition=0, offset=5, id="p0-000001",
               time_ns=t2, index=0)
        w.event("kill", node="2", role="leader", detail="SIGKILL")
    write_run_json(run_dir, {"semantics": "at-least-once", ...})

Times are ``time.monotonic_ns()`` (``now_ns()``) unless the caller gives them.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from .errors import HistoryError
from .history_parts import PartsTable, Roll
from .rundir import EVENTS, POLLS, RUN_JSON, SENDS, TXNS

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "EVENTS",
    "ISOLATION_LEVELS",
    "POLLS",
    "RUN_JSON",
    "SEMANTICS",
    "Roll",
    "SENDS",
    "STATUSES",
    "TXNS",
    "TXN_OUTCOMES",
    "RunWriter",
    "now_ns",
    "read_run_json",
    "write_run_json",
]

STATUSES = ("ok", "fail", "info")
TXN_OUTCOMES = ("committed", "aborted", "info")  # history version 2: a transaction's end
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
SEMANTICS = ("at-least-once", "exactly-once", "at-most-once")


def now_ns() -> int:
    """The history clock: monotonic, so fault and client times compare within one run."""
    return time.monotonic_ns()


class _Table:
    """One append-only JSON Lines file; a row is written and flushed under a lock."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._file: TextIO | None = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def append(self, row: dict[str, Any]) -> None:
        line = json.dumps(row, separators=(",", ":"), ensure_ascii=False) + "\n"
        with self._lock:
            if self._file is None:
                raise ValueError(f"{self.path}: writer is closed")
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class _Appender(Protocol):
    def append(self, row: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class RunWriter:
    """Appends rows to ``sends.jsonl``, ``polls.jsonl`` and ``events.jsonl`` of ``run_dir``.

    All three files exist as soon as the writer is created (an empty table is a valid
    table; a missing one is an unreadable run). Safe to call from several threads.
    With ``roll`` (and ``schemas``: the contract's Arrow schema of sends and polls), the two
    big tables are written as ``sends.parquet`` / ``polls.parquet`` folders of parts instead
    (``history_parts``), in bounded memory; events and txns stay JSON Lines.
    """

    def __init__(self, run_dir: str | os.PathLike[str], roll: Roll | None = None,
                 schemas: Mapping[str, pa.Schema] | None = None):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._sends: _Appender
        self._polls: _Appender
        if roll is None:
            self._sends = _Table(self.run_dir / f"{SENDS}.jsonl")
            self._polls = _Table(self.run_dir / f"{POLLS}.jsonl")
        else:
            if schemas is None or SENDS not in schemas or POLLS not in schemas:
                raise ValueError("a rolled history needs the schemas of sends and polls")
            self._sends = PartsTable(self.run_dir / f"{SENDS}.parquet", schemas[SENDS], roll)
            self._polls = PartsTable(self.run_dir / f"{POLLS}.parquet", schemas[POLLS], roll)
        self._events = _Table(self.run_dir / f"{EVENTS}.jsonl")
        self._txns: _Table | None = None  # created by the first transaction (version 2)
        self._txns_lock = threading.Lock()

    def send(
        self,
        process: int,
        topic: str,
        partition: int,
        id: str,  # noqa: A002 - the contract's column name
        offset: int | None,
        status: str,
        invoke_ns: int | None = None,
        complete_ns: int | None = None,
        error: str | None = None,
        cluster: str | None = None,
        txn: str | None = None,
        source: str | None = None,
    ) -> None:
        """Record one send attempt. ``status``: ok (acknowledged), fail (definitely not
        written) or info (indeterminate). ``cluster`` only for mirrored runs; ``txn`` (version
        2) the transaction the send belongs to (its outcome is in the txns table); ``source``
        (version 2) the id of the record a read-process-write pipeline copies with it."""
        if status not in STATUSES:
            raise ValueError(f"send status {status!r}: expected one of {', '.join(STATUSES)}")
        complete = now_ns() if complete_ns is None else int(complete_ns)
        row: dict[str, Any] = {
            "process": int(process),
            "topic": topic,
            "partition": int(partition),
            "id": id,
            "offset": None if offset is None else int(offset),
            "status": status,
            "invoke_ns": complete if invoke_ns is None else int(invoke_ns),
            "complete_ns": complete,
            "error": None if error is None else str(error),
        }
        if cluster is not None:
            row["cluster"] = cluster
        if txn is not None:
            row["txn"] = txn
        if source is not None:
            row["source"] = source
        self._sends.append(row)

    def poll(
        self,
        process: int,
        poll: int,
        topic: str,
        partition: int,
        offset: int,
        id: str,  # noqa: A002 - the contract's column name
        time_ns: int | None = None,
        index: int | None = None,
        cluster: str | None = None,
        isolation: str | None = None,
        generation: int | None = None,
        txn: str | None = None,
    ) -> None:
        """Record one record a consumer received, in the order the poll returned them.
        Version 2: ``isolation`` (read_committed / read_uncommitted), the consumer group
        ``generation`` the poll ran in, and the ``txn`` of a read-process-write transaction
        the poll belongs to."""
        row: dict[str, Any] = {
            "process": int(process),
            "poll": int(poll),
            "topic": topic,
            "partition": int(partition),
            "offset": int(offset),
            "id": id,
            "time_ns": now_ns() if time_ns is None else int(time_ns),
            "index": None if index is None else int(index),
        }
        if cluster is not None:
            row["cluster"] = cluster
        if isolation is not None:
            if isolation not in ISOLATION_LEVELS:
                raise ValueError(f"isolation {isolation!r}: expected one of "
                                 f"{', '.join(ISOLATION_LEVELS)}")
            row["isolation"] = isolation
        if generation is not None:
            row["generation"] = int(generation)
        if txn is not None:
            row["txn"] = str(txn)
        self._polls.append(row)

    def event(
        self,
        kind: str,
        node: str | int | None = None,
        role: str | None = None,
        detail: str | None = None,
        process: int | None = None,
        time_ns: int | None = None,
        cluster: str | None = None,
        assignment: list[tuple[str, int]] | None = None,
        generation: int | None = None,
    ) -> None:
        """Record a fault, a client lifecycle step or a consumer assignment. ``cluster``
        (mirrored runs only, like the sends' and polls' column) names the cluster whose
        node or client the event concerns. Version 2: ``assignment`` (the partitions the
        process holds after an ``assign`` / ``rebalance``) and the group ``generation``."""
        row = {
            "time_ns": now_ns() if time_ns is None else int(time_ns),
            "kind": kind,
            "process": None if process is None else int(process),
            "node": None if node is None else str(node),
            "role": role,
            "detail": None if detail is None else str(detail),
        }
        if cluster is not None:
            row["cluster"] = cluster
        if assignment is not None:
            row["assignment"] = " ".join(f"{t}:{int(p)}" for t, p in sorted(assignment))
        if generation is not None:
            row["generation"] = int(generation)
        self._events.append(row)

    def txn(
        self,
        process: int,
        txn: str,
        status: str,
        begin_ns: int,
        end_ns: int | None,
        complete_ns: int | None = None,
        error: str | None = None,
        offsets: list[tuple[str, int, int]] | None = None,
    ) -> None:
        """Record a transaction's outcome (version 2), once it is known: ``committed``,
        ``aborted`` or ``info`` (indeterminate). ``end_ns``: when commit / abort was invoked
        (null if it never was); a read_committed poll before it is a precommitted read.
        ``offsets``: the consumer positions (topic, partition, next offset) the transaction
        committed with ``send_offsets_to_transaction``, stored as "topic:partition:offset"."""
        if status not in TXN_OUTCOMES:
            raise ValueError(f"txn status {status!r}: expected one of {', '.join(TXN_OUTCOMES)}")
        with self._txns_lock:
            if self._txns is None:
                self._txns = _Table(self.run_dir / f"{TXNS}.jsonl")
        complete = now_ns() if complete_ns is None else int(complete_ns)
        self._txns.append({
            "process": int(process), "txn": txn, "status": status, "begin_ns": int(begin_ns),
            "end_ns": None if end_ns is None else int(end_ns), "complete_ns": complete,
            "error": None if error is None else str(error),
            **({} if offsets is None else {"offsets": " ".join(
                f"{t}:{int(p)}:{int(o)}" for t, p, o in sorted(offsets))})})

    def close(self) -> None:
        for table in (self._sends, self._polls, self._events, self._txns):
            if table is not None:
                table.close()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_run_json(run_dir: str | os.PathLike[str], meta: dict[str, Any]) -> Path:
    """Write ``run.json`` atomically (temp file + rename): a reader never sees half of it."""
    directory = Path(run_dir)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / RUN_JSON
    text = json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".run.json.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def read_run_json(run_dir: str | os.PathLike[str], missing_ok: bool = False) -> dict[str, Any]:
    """Read ``run.json``; a missing (unless ``missing_ok``: then ``{}``), malformed or
    non-object file raises HistoryError naming it. A ``semantics`` key, if present, must be
    one of SEMANTICS."""
    path = Path(run_dir) / RUN_JSON
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise HistoryError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HistoryError(f"{path}: cannot read: {exc}") from None
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HistoryError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(meta, dict):
        raise HistoryError(f"{path}: expected a JSON object, found {type(meta).__name__}")
    semantics = meta.get("semantics")
    if semantics is not None and semantics not in SEMANTICS:
        raise HistoryError(
            f"{path}: key 'semantics' is {semantics!r}; allowed: {', '.join(SEMANTICS)}"
        )
    return meta
