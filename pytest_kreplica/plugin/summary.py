"""The matrix summary printed at the end of a pytest run.

A case's result travels as one JSON object (``CaseResult.summary()``) in the test report's
``user_properties`` under ``RESULT_PROPERTY``, so it reaches the xdist controller. Columns are
a list others extend (the failure-scenario report adds election time)::

    from pytest_kreplica.plugin.summary import COLUMNS, Column
    COLUMNS.insert(-2, Column("election", lambda r: fmt_seconds(r.get("election_s"))))
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

RESULT_PROPERTY = "kreplica_result"


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[dict[str, Any]], str]
    align_right: bool = False


def fmt_seconds(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1f}s"


def _count(name: str) -> Callable[[dict[str, Any]], str]:
    def value(row: dict[str, Any]) -> str:
        counts = row.get("counts") or {}
        return "-" if counts.get(name) is None else str(counts[name])

    return value


COLUMNS: list[Column] = [
    Column("case", lambda r: r["case_id"]),
    Column("verdict", lambda r: r.get("verdict", "-")),
    Column("sent", _count("sent"), True),
    Column("acked", _count("acked"), True),
    Column("lost", _count("lost"), True),
    Column("unseen", _count("unseen"), True),
    Column("dup", _count("duplicated"), True),
    Column("election", lambda r: fmt_seconds(r.get("election_max_s")), True),
    Column("duration", lambda r: fmt_seconds(r.get("duration_s")), True),
    Column("run dir", lambda r: r.get("run_dir") or "-"),
]


def encode(result: dict[str, Any]) -> str:
    return json.dumps(result, sort_keys=True, default=str)


def decode(text: str) -> dict[str, Any]:
    return json.loads(text)


def render(rows: list[dict[str, Any]], columns: list[Column] | None = None) -> list[str]:
    """A plain-text table, one line per case, in the order given."""
    columns = COLUMNS if columns is None else columns
    cells = [[c.header for c in columns]] + [[c.value(r) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = []
    for row in cells:
        parts = [cell.rjust(w) if col.align_right else cell.ljust(w)
                 for cell, w, col in zip(row, widths, columns, strict=True)]
        lines.append("  ".join(parts).rstrip())
    return lines


class SummaryCollector:
    """Gathers one row per case from the test reports (on the xdist controller, from the
    workers' reports) and prints the table; registered by the plugin on the controller."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.rows: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "kreplica" not in report.keywords:
            return
        case_id = report.nodeid.rsplit("[", 1)[-1].rstrip("]")
        row = self.rows.setdefault(report.nodeid, {"case_id": case_id})
        for name, value in report.user_properties:
            if name == RESULT_PROPERTY:
                row.update(decode(value))
        if report.failed:
            row.setdefault("verdict", "error")  # failed before a result was recorded
            row["outcome"] = "failed"
        elif report.skipped:
            row.setdefault("verdict", "skipped")
        elif report.when == "call":
            row.setdefault("verdict", "passed")  # a test that recorded no result
        row.setdefault("outcome", "passed")

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.rows:
            return
        rows = list(self.rows.values())
        terminalreporter.section("kreplica matrix summary")
        for line in render(rows):
            terminalreporter.write_line(line)
        self.config.hook.pytest_kreplica_summary(config=self.config, rows=rows,
                                                 terminalreporter=terminalreporter)
