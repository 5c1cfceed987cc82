"""Every case run as one row of the results store (``results.store``), written by the
process that ran it (an xdist worker, or pytest itself) when pytest settles the case's
outcome; a repeat skipped by until-fail is not a run and writes none.

The run id names this pytest session in the store: made once by the controller (or the only
process) and handed to every xdist worker through ``workerinput``. The store is
``--kreplica-results PATH`` (ini ``kreplica_results``, env ``KREPLICA_RESULTS``; empty: no
store), else ``results.sqlite`` beside ``--kreplica-output``'s directory, else in the
session's basetemp beside the default output (a worker's basetemp's parent: the directory
every worker shares). A store that cannot be written is a warning, never a failed case.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..results.rows import build_row
from ..results.store import STORE_FILE, append_to
from .outcomes import SKIPPED, outcome_of
from .repeat import repeat_of
from .summary import RESULT_PROPERTY, decode

RUN_ID = "kreplica_run_id"  # workerinput key
RUN_ID_KEY = pytest.StashKey[str]()
STORE_PROPERTY = "kreplica_store"  # user property: the store a row went to


def new_run_id() -> str:
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:6]}"


def run_id_of(config: pytest.Config) -> str:
    """This session's run id (a worker's is its controller's)."""
    given = getattr(config, "workerinput", {}).get(RUN_ID)
    return str(given) if given else config.stash.setdefault(RUN_ID_KEY, new_run_id())


class WorkerRunId:
    """Registered on the xdist controller: each worker gets the controller's run id."""

    def __init__(self, config: pytest.Config):
        self.run_id = run_id_of(config)

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_ID] = self.run_id


def shared_dir(output: Path | None, basetemp: Path, worker: bool) -> Path:
    """The directory every process of the session sees: the output, else the basetemp."""
    if output is not None:
        return output
    return basetemp.parent if worker else basetemp


def store_path(results: str | None, output: Path | None, shared: Path) -> Path | None:
    """The store (None: switched off by an empty ``--kreplica-results``)."""
    if results is not None:
        return (Path.cwd() / results).resolve() if results else None
    if output is not None:
        return output.parent / STORE_FILE
    return shared / STORE_FILE


def case_fields(item: pytest.Item) -> dict[str, Any]:
    """What the plugin knows of the case of ``item``: ids, matrix, parameters."""
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("kreplica_case") if callspec is not None else None
    repeat = repeat_of(item)
    fields: dict[str, Any] = {"test_id": item.nodeid,
                              "repeat": repeat["index"] if repeat else None}
    if case is not None and hasattr(case, "as_dict"):
        fields.update(case_id=repeat["case"] if repeat else case.case_id,
                      matrix=case.matrix, parameters=case.as_dict())
    return fields


class ResultsWriter:
    """Appends a row per settled case outcome to the store ``path_of()`` names."""

    def __init__(self, config: pytest.Config, path_of: Callable[[], Path | None]):
        self.run_id = run_id_of(config)
        self.path_of = path_of
        self.written: set[str] = set()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:
        report = yield
        outcome = outcome_of(report)
        path = self.path_of()
        if ("kreplica" in item.keywords and path is not None and outcome not in (None, SKIPPED)
                and item.nodeid not in self.written):
            self.written.add(item.nodeid)
            self.write(path, item, outcome, call.start)
            report.user_properties.append((STORE_PROPERTY, str(path)))
        return report

    def write(self, path: Path, item: pytest.Item, outcome: str, start: float) -> None:
        summary = next((decode(v) for n, v in reversed(item.user_properties)
                        if n == RESULT_PROPERTY), {})
        run_dir = Path(summary["run_dir"]) if summary.get("run_dir") else None
        try:
            row = build_row(run_id=self.run_id, run_dir=run_dir, summary=summary,
                            outcome=outcome, case=case_fields(item),
                            start_time=summary.get("start_time", start))
            append_to(path, row)
        except (sqlite3.Error, OSError) as exc:
            warnings.warn(f"kreplica: results store {path}: row of {item.nodeid} not written: "
                          f"{exc}", stacklevel=1)


def is_worker(config: pytest.Config) -> bool:
    """An xdist worker of this session: by its ``workerinput``, never by the environment,
    which a pytest run started inside a worker (pytester, a documented command) inherits."""
    return hasattr(config, "workerinput")


class StoreLine:
    """On the controller: one closing line naming the run id and the store its rows are in."""

    def __init__(self, config: pytest.Config):
        self.run_id = run_id_of(config)
        self.rows: dict[str, int] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == STORE_PROPERTY:
                self.rows[value] = self.rows.get(value, 0) + 1

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for path, count in self.rows.items():
            terminalreporter.write_line(f"kreplica: run {self.run_id}: {count} row(s) in "
                                        f"results store {path}")
