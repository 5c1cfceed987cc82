"""How a case ends in pytest, beyond passed and failed.

* **Expected finding**: a case its matrix lists under ``expected_findings`` (a red that is a
  known property of the system under test) runs as pytest's strict xfail with the matrix's
  reason: while it fails it is reported as ``xfailed``, the day it passes it is a failure
  (``[XPASS(strict)]``). Only the verdict's ``AssertionError`` counts as the finding; a
  harness error stays an error.
* **Harness error**: a test that raises ``HarnessError`` (a fault that did not act, a cluster
  that did not become ready, an admin request that timed out) ends as a pytest *error*, not a
  failure: its call report is marked the way pytest marks a setup error, so the terminal,
  ``-rA``, junit-xml and xdist all count it under errors. A failure means the broker broke a
  promise.

``outcome_of(report)`` names the outcome the summary table and the flake script count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..errors import HarnessError
from ..report import read_verdict, write_verdict

EXPECTED_FINDING = "expected_finding"  # the marker (with the reason) of such a case
HARNESS_PROPERTY = "kreplica_harness"  # user property: the harness error's message
MARKERS = {
    EXPECTED_FINDING: "a case whose red is a known property of the system under test "
                      "(matrix key expected_findings, its argument the reason); run as strict "
                      "xfail",
}

# outcome_of's values, in the order a summary lists them
PASSED, FAILED, FINDING, FINDING_GONE, HARNESS, ERROR, SKIPPED = (
    "passed", "failed", "expected finding", "finding not seen", "harness error", "error",
    "skipped")
OUTCOMES = (PASSED, FAILED, FINDING, FINDING_GONE, HARNESS, ERROR, SKIPPED)


def expected_finding_marks(reason: str | None) -> list[Any]:
    """The marks of a case listed under ``expected_findings`` (none for any other case)."""
    if not reason:
        return []
    return [getattr(pytest.mark, EXPECTED_FINDING)(reason),
            pytest.mark.xfail(reason=f"expected finding: {reason}", strict=True,
                              raises=AssertionError)]


def expected_finding(item: pytest.Item) -> str | None:
    """The reason of ``item``'s expected finding, or None."""
    marker = item.get_closest_marker(EXPECTED_FINDING)
    return str(marker.args[0]) if marker is not None and marker.args else None


def note_expected_finding(run_dir: Path, reason: str) -> None:
    """Add ``expected_finding`` (the reason) to the case's verdict.json, for index.html."""
    doc = read_verdict(run_dir)
    if doc is not None:
        write_verdict(run_dir, {**doc, "expected_finding": reason})


def outcome_of(report: pytest.TestReport) -> str | None:
    """The outcome ``report`` settles (one of ``OUTCOMES``), or None when it settles none
    (a passed setup or teardown)."""
    harness = any(name == HARNESS_PROPERTY for name, _ in report.user_properties)
    if report.failed:
        if harness:
            return HARNESS
        if report.when != "call":
            return ERROR
        return FINDING_GONE if str(report.longrepr).startswith("[XPASS(strict)]") else FAILED
    if report.skipped:
        return FINDING if hasattr(report, "wasxfail") else SKIPPED
    return PASSED if report.when == "call" else None


class HarnessErrors:
    """Turns a call report whose exception is a ``HarnessError`` into an error report."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Any:
        report = yield
        if report.failed and call.excinfo is not None \
                and call.excinfo.errisinstance(HarnessError):
            if report.when == "call":
                # pytest, -rA, junit-xml and xdist count a failed setup report as an error
                report.when = "setup"
            report.user_properties.append((HARNESS_PROPERTY, str(call.excinfo.value)))
        return report
