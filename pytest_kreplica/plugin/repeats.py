"""The repeats summary printed after the matrix table under ``--kreplica-repeat``: per case
its passes, failures, errors and skipped repeats with the distinct failure reasons, and for
each failed repeat its seed and the command that runs it again (``plugin.repeat``). Built on
the controller from the reports' ``kreplica_repeat`` property, so it works under xdist."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

import pytest

from .outcomes import ERROR, FAILED, FINDING, FINDING_GONE, HARNESS, PASSED, SKIPPED, outcome_of
from .repeat import PROPERTY, failure_reason
from .summary import without_group

FAILURES = (FAILED, FINDING, FINDING_GONE)
ERRORS = (HARNESS, ERROR)
#: options that select the cases: a replay command passes them on
SELECTING = ("--kreplica-matrix", "--kreplica-kafka-version", "--kreplica-backend",
             "--kreplica-cluster")


@dataclass
class CaseRepeats:
    case: str
    count: int
    outcomes: dict[str, str] = field(default_factory=dict)  # node id -> outcome
    reasons: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)  # {nodeid, index, seed, reason}

    def tally(self, kinds: tuple[str, ...]) -> int:
        return sum(o in kinds for o in self.outcomes.values())


def replay_command(config: pytest.Config, nodeid: str, count: int) -> str:
    """``pytest 'NODEID' --kreplica-repeat N`` with the run's case-selecting options."""
    parts = ["pytest", nodeid, "--kreplica-repeat", str(count)]
    for option in SELECTING:
        value = config.getoption(option.lstrip("-").replace("-", "_"), None)
        for v in value if isinstance(value, list) else [value]:
            if v is not None:
                parts += [option, str(v)]
    return shlex.join(parts)


class RepeatSummary:
    """Registered on the controller (or the only process) when ``--kreplica-repeat`` is on."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.cases: dict[str, CaseRepeats] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        info = next((json.loads(v) for n, v in report.user_properties if n == PROPERTY), None)
        outcome = outcome_of(report)
        if info is None or outcome is None:
            return
        case = self.cases.setdefault(info["key"], CaseRepeats(info["case"], info["count"]))
        if case.outcomes.get(report.nodeid) not in (None, PASSED):
            return  # settled by an earlier phase of the same test
        case.outcomes[report.nodeid] = outcome
        if outcome in (PASSED, SKIPPED):
            return
        reason = failure_reason(report)
        if reason not in case.reasons:
            case.reasons.append(reason)
        case.failed.append({"nodeid": without_group(report.nodeid), "index": info["index"],
                            "seed": info.get("seed"), "reason": reason})

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.cases:
            return
        terminalreporter.section("kreplica repeats")
        for line in self.lines():
            terminalreporter.write_line(line)

    def lines(self) -> list[str]:
        cells = [("case", "runs", "passed", "failed", "errors", "skipped", "reasons")]
        for c in sorted(self.cases.values(), key=lambda c: c.case):
            runs = len(c.outcomes) - c.tally((SKIPPED,))
            cells.append((c.case, str(runs), str(c.tally((PASSED,))), str(c.tally(FAILURES)),
                          str(c.tally(ERRORS)), str(c.tally((SKIPPED,))),
                          " | ".join(c.reasons) or "-"))
        widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]) - 1)]
        out = ["  ".join([*(v.ljust(w) for v, w in zip(row, widths, strict=False)),
                          row[-1]]) for row in cells]
        for c in sorted(self.cases.values(), key=lambda c: c.case):
            for f in sorted(c.failed, key=lambda f: f["index"]):
                out.append(f"kreplica: {c.case} failed at repeat {f['index']} of {c.count} "
                           f"(seed {f['seed']}): {f['reason']}")
                out.append(f"  replay: {replay_command(self.config, f['nodeid'], c.count)}")
        return out
