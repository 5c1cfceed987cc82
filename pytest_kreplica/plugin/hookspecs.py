"""Hooks other parts of the suite (nemesis, report) implement to extend a case run and the
summary, from a conftest or a plugin module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy
import pytest

if TYPE_CHECKING:
    from ..matrix import Case
    from ..scenarios.runner import CaseHooks

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_kreplica_case_hooks(config: pytest.Config, case: Case, hooks: CaseHooks) -> None:
    """Add to ``hooks`` (a ``pytest_kreplica.scenarios.runner.CaseHooks``) before ``case``
    runs, e.g.
    ``hooks.during_produce.append(nemesis)``: each callable gets a ``CaseContext`` (cluster,
    case, writer, seeded ``random.Random``, stop event) in a background thread."""


@hookspec
def pytest_kreplica_summary(config: pytest.Config, rows: list[dict[str, Any]],
                            terminalreporter: pytest.TerminalReporter) -> None:
    """Called on the controller after the summary table, with every case's result row
    (e.g. to write an index.html of the run directories)."""
