"""``--kreplica-repeat N`` and ``--kreplica-until-fail``: every selected case N times, each
repeat with its own seed, and optionally no more repeats of a case after its first failure.

A repeat is the case with the id suffix ``-rK`` (K zero-padded to N's width, so ids sort)
and the seed ``repeat_seed(case.seed, K)``: derived from the case's seed and the index only,
so ``pytest 'FILE::TEST[CASE-rK]' --kreplica-repeat N`` runs the same repeat with the same
seed again (the failing one's command is printed, ``plugin.repeats``). Every repeat runs
into its own run directory (its id) and is its own row of the results store.

Until-fail. The process that ran a failing repeat (pytest's outcome anything but passed or
skipped: failed, error, harness error, an expected finding, a finding not seen) creates
``<shared dir>/.kreplica-until-fail/<run id>/<key>.json`` atomically (written to a temporary
file, then hard-linked to its name: the first failure wins, a reader never sees half a
file). Before a repeat starts, its ``kreplica_case`` fixture looks for that file and skips
the repeat with the failure it names. The shared directory is ``--kreplica-output`` or the
controller's basetemp, which every xdist worker sees, so under xdist the stop is known
across workers: with ``--dist loadfile`` (the project's test command) a file's repeats run
in order on one worker and the stop is exact; with ``--dist load`` repeats of one case may
run on several workers at once, and one already started elsewhere when the first failure is
written runs to its end and is counted, only those started after it are skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ..matrix import Case
from .outcomes import PASSED, SKIPPED, outcome_of

MARKER = "kreplica_repeat"
PROPERTY = "kreplica_repeat"  # user property: {case, key, index, count, seed}
STOP_DIR = ".kreplica-until-fail"
HELP_REPEAT = ("run every selected case N times, each repeat (id suffix -rK) with its own "
               "seed derived from the case's seed and K")
HELP_UNTIL_FAIL = ("with --kreplica-repeat: stop repeating a case at its first failure "
                   "(later repeats are skipped with the reason) and print its replay command")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("kreplica")
    group.addoption("--kreplica-repeat", default=None, metavar="N", help=HELP_REPEAT)
    group.addoption("--kreplica-until-fail", action="store_true", default=False,
                    help=HELP_UNTIL_FAIL)


def repeat_count(config: pytest.Config) -> int | None:
    """``--kreplica-repeat``'s N (None without it); a bad value is a ``UsageError``."""
    raw = config.getoption("kreplica_repeat")
    until_fail = config.getoption("kreplica_until_fail")
    if raw is None:
        if until_fail:
            raise pytest.UsageError("--kreplica-until-fail: needs --kreplica-repeat N "
                                    "(allowed: an integer >= 1)")
        return None
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise pytest.UsageError(f"--kreplica-repeat: bad value {raw!r}; allowed: an "
                                "integer >= 1")
    return count


def repeat_seed(seed: int, index: int) -> int:
    """The seed of repeat ``index`` of a case whose seed is ``seed`` (a 32-bit CRC)."""
    return zlib.crc32(f"{seed}:repeat:{index}".encode())


def suffix(index: int, count: int) -> str:
    return f"-r{index:0{len(str(count))}d}"


def repeats(case: Case, count: int) -> list[tuple[Case, Any]]:
    """The ``count`` repeats of ``case``, each with its mark (index, count, case id)."""
    return [(replace(case, case_id=case.case_id + suffix(i, count),
                     seed=repeat_seed(case.seed, i)),
             getattr(pytest.mark, MARKER)(index=i, count=count, case=case.case_id))
            for i in range(1, count + 1)]


def repeat_of(item: pytest.Item) -> dict[str, Any] | None:
    """``{case, key, index, count}`` of a repeated test (None for another test); ``key``
    names the case's test across its repeats (the node id without the suffix)."""
    mark = item.get_closest_marker(MARKER)
    if mark is None:
        return None
    index, count = mark.kwargs["index"], mark.kwargs["count"]
    key = item.nodeid.replace(suffix(index, count) + "]", "]")
    return {"case": mark.kwargs["case"], "key": key, "index": index, "count": count}


def key_file(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:24] + ".json"


class StopBook:
    """The until-fail files of one run: which case stopped, at which repeat and why."""

    def __init__(self, directory: Path):
        self.directory = directory

    def stopped(self, key: str) -> dict[str, Any] | None:
        try:
            return json.loads((self.directory / key_file(key)).read_text())
        except FileNotFoundError:
            return None

    def stop(self, key: str, info: dict[str, Any]) -> bool:
        """Record the first failure of ``key``; False when one was recorded already."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".stop-", dir=self.directory)
        with os.fdopen(fd, "w") as out:
            json.dump(info, out)
        try:
            os.link(tmp, self.directory / key_file(key))  # atomic, and only the first wins
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)


def skip_if_stopped(item: pytest.Item, book: StopBook | None) -> None:
    """Skip a repeat whose case already failed in this run (until-fail)."""
    info = repeat_of(item)
    if info is None or book is None:
        return
    seen = book.stopped(info["key"])
    if seen is not None:
        pytest.skip(f"until-fail: {info['case']} failed at repeat {seen['index']} of "
                    f"{info['count']} (seed {seen['seed']}): {seen['reason']}")


def failure_reason(report: pytest.TestReport) -> str:
    """One line: the harness error, else the exception pytest shows."""
    for name, value in report.user_properties:
        if name == "kreplica_harness":
            return str(value).splitlines()[0]
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(report.longrepr or "")
    return (text.strip().splitlines() or ["?"])[0][:300]


class UntilFail:
    """Where a repeat runs: tags its reports with the repeat (``attach``) before any fixture
    can fail, and writes its case's stop file at the repeat's first failure."""

    def __init__(self, book_of: Any):
        self.book_of = book_of  # () -> StopBook | None (known once the session fixtures ran)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        attach(item)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:
        report = yield
        info = repeat_of(item)
        outcome = outcome_of(report)
        book = self.book_of()
        if info is not None and book is not None and outcome not in (None, PASSED, SKIPPED):
            book.stop(info["key"], {"index": info["index"], "seed": case_seed(item),
                                    "reason": failure_reason(report), "outcome": outcome})
        return report


def case_seed(item: pytest.Item) -> int | None:
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("kreplica_case") if callspec is not None else None
    return getattr(case, "seed", None)


def attach(item: pytest.Item) -> None:
    """Put the repeat's identity in the test's reports, for the controller's summary."""
    info = repeat_of(item)
    if info is not None and not any(n == PROPERTY for n, _ in item.user_properties):
        item.user_properties.append((PROPERTY, json.dumps({**info,
                                                           "seed": case_seed(item)})))
