"""A history table rolled into Parquet parts as it grows (docs/history.md, "Rolled tables").

A soak writes tens of millions of sends and polls. Kept as JSON Lines they are read back
whole by every step after the run; rolled, the workload holds at most one part's rows in
memory: every ``Roll.rows`` rows or ``Roll.seconds`` seconds (whichever comes first, checked
at each append) the buffered rows become ``NAME.parquet/part-NNNNN.parquet``, written under a
hidden temporary name and renamed, so a reader only ever sees complete parts. The schema is
fixed per table (the contract's columns, given by the caller), so every part has the same
columns and types whatever its rows hold.

What a killed run loses: the rows buffered since the last roll (at most ``rows`` rows or
``seconds`` seconds of them). ``close`` (also on SIGINT / SIGTERM, which end the case
normally) rolls what is left.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

PART_NAME = "part-{:05d}.parquet"


@dataclass(frozen=True)
class Roll:
    """When a rolled table writes a part: every ``rows`` rows or ``seconds`` seconds."""

    rows: int = 50_000
    seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.rows < 1 or self.seconds <= 0:
            raise ValueError(f"roll every {self.rows} rows / {self.seconds} s: both must be > 0")


class PartsTable:
    """One table written as a folder of Parquet parts; ``append`` is safe from any thread."""

    def __init__(self, path: Path, schema: pa.Schema, roll: Roll):
        self.path, self.schema, self.roll = path, schema, roll
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._rows: list[dict[str, Any]] = []
        self._parts = len(list(self.path.glob("part-*.parquet")))  # a writer reopened
        self._rolled_at = time.monotonic()
        self._closed = False

    @property
    def parts(self) -> int:
        """How many parts have been written so far."""
        return self._parts

    def append(self, row: dict[str, Any]) -> None:
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path}: writer is closed")
            self._rows.append(row)
            if (len(self._rows) >= self.roll.rows
                    or time.monotonic() - self._rolled_at >= self.roll.seconds):
                self._write_part()

    def close(self) -> None:
        """Roll the buffered rows; a table that never got a row gets one empty part (an
        empty folder is not a table)."""
        with self._lock:
            if self._closed:
                return
            if self._rows or not self._parts:
                self._write_part()
            self._closed = True

    def _write_part(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(self._rows, schema=self.schema)
        name = PART_NAME.format(self._parts)
        tmp = self.path / f".{name}.tmp"
        try:
            pq.write_table(table, tmp)
            os.replace(tmp, self.path / name)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self._parts += 1
        self._rows = []
        self._rolled_at = time.monotonic()
