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

from .outcomes import FAILED, FINDING, FINDING_GONE, HARNESS, OUTCOMES, PASSED, outcome_of

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
    Column("verdict", lambda r: shown_verdict(r)),
    Column("sent", _count("sent"), True),
    Column("acked", _count("acked"), True),
    Column("lost", _count("lost"), True),
    Column("unseen", _count("unseen"), True),
    Column("dup", _count("duplicated"), True),
    Column("election", lambda r: fmt_seconds(r.get("election_max_s")), True),
    Column("duration", lambda r: fmt_seconds(r.get("duration_s")), True),
    Column("run dir", lambda r: r.get("run_dir") or "-"),
]


def shown_verdict(row: dict[str, Any]) -> str:
    """The verdict cell: an expected finding, a finding not seen and a harness error say so
    (the recorded verdict means something else for them), else the recorded verdict."""
    if row.get("outcome") in (FINDING, FINDING_GONE, HARNESS):
        return row["outcome"]
    return row.get("verdict", "-")


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


def without_group(nodeid: str) -> str:
    """A test id without the ``@group`` suffix ``--dist loadgroup`` appends (xdist's own
    rule: an ``@`` after the last ``]``)."""
    return nodeid.rsplit("@", 1)[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def case_id_of(nodeid: str) -> str:
    """The case id inside a test id's brackets."""
    return without_group(nodeid).rsplit("[", 1)[-1].rstrip("]")


class SummaryCollector:
    """Gathers one row per case from the test reports (on the xdist controller, from the
    workers' reports) and prints the table; registered by the plugin on the controller."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.rows: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "kreplica" not in report.keywords:
            return
        case_id = case_id_of(report.nodeid)
        row = self.rows.setdefault(report.nodeid, {"case_id": case_id})
        for name, value in report.user_properties:
            if name == RESULT_PROPERTY:
                row.update(decode(value))
        outcome = outcome_of(report)
        if outcome is None or row.get("outcome") not in (None, PASSED):
            return  # a passed setup / teardown; or the outcome is settled already
        row["outcome"] = outcome
        row.setdefault("verdict", outcome)  # a test that recorded no result

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.rows:
            return
        rows = list(self.rows.values())
        terminalreporter.section("kreplica matrix summary")
        lines = render(rows)
        terminalreporter.write_line(lines[0])
        for row, line in zip(rows, lines[1:], strict=True):
            terminalreporter.write_line(line, **markup(row.get("outcome")))
        counts = tally(rows)
        terminalreporter.write_line(
            "kreplica: " + ", ".join(f"{n} {name}" for name, n in counts.items()),
            **markup(next((o for o in (FAILED, FINDING_GONE, HARNESS) if counts.get(o)),
                          PASSED)))
        self.config.hook.pytest_kreplica_summary(config=self.config, rows=rows,
                                                 terminalreporter=terminalreporter)


# the colour of a row by its outcome: an expected finding and a harness error apart from
# a broker failure (red) and a pass (green)
COLOURS = {PASSED: "green", FAILED: "red", FINDING_GONE: "red", FINDING: "yellow",
           HARNESS: "purple", "error": "purple"}


def markup(outcome: str | None) -> dict[str, bool]:
    colour = COLOURS.get(outcome or "")
    return {colour: True} if colour else {}


def tally(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Cases per outcome (``outcomes.OUTCOMES`` order; outcomes no case had are left out)."""
    seen = [r.get("outcome") for r in rows]
    return {o: seen.count(o) for o in OUTCOMES if o in seen}
