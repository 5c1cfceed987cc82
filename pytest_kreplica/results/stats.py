"""Figures over the store's rows: per case its runs, pass rate, flake rate and the trends of
election time, unavailability and duration; and what moved between two sets of runs.

A run *passed* when pytest's outcome was ``passed``; skipped runs (a repeat after
``--kreplica-until-fail`` stopped its case) are not runs. A case is *flaky* on a set of
parameters (every dimension but the seed) when it both passed and failed on it; its flake
rate is its failed runs on such sets over all its runs.
"""

from __future__ import annotations

import fnmatch
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PASSED, SKIPPED = "passed", "skipped"
#: figure name -> how a row gives it (None: the row has no such figure)
FIGURES: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "election_max_s": lambda r: r.get("election_max_s"),
    "unavailability_s": lambda r: r.get("unavailability_s"),
    "duration_s": lambda r: r.get("duration_s"),
}
SPARK = "▁▂▃▄▅▆▇█"


def ran(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("outcome") != SKIPPED]


def select(rows: list[dict[str, Any]], pattern: str | None) -> list[dict[str, Any]]:
    """Rows whose case id matches the shell-style ``pattern`` (all when None)."""
    return [r for r in rows if pattern is None or fnmatch.fnmatchcase(r["case_id"], pattern)]


@dataclass
class CaseStats:
    case_id: str
    runs: int = 0
    passed: int = 0
    flaky_failures: int = 0
    series: dict[str, list[float]] = field(default_factory=dict)  # in run order
    outcomes: list[bool] = field(default_factory=list)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0

    @property
    def flake_rate(self) -> float:
        return self.flaky_failures / self.runs if self.runs else 0.0


def per_case(rows: list[dict[str, Any]]) -> list[CaseStats]:
    """One ``CaseStats`` per case id, sorted by it; rows in store order."""
    by_case: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in ran(rows):
        by_case[row["case_id"]].append(row)
    out = []
    for case_id in sorted(by_case):
        runs = by_case[case_id]
        stats = CaseStats(case_id, runs=len(runs),
                          passed=sum(r["outcome"] == PASSED for r in runs),
                          outcomes=[r["outcome"] == PASSED for r in runs])
        by_params: dict[str, list[bool]] = defaultdict(list)
        for r in runs:
            by_params[r.get("params_key") or ""].append(r["outcome"] == PASSED)
        stats.flaky_failures = sum(seen.count(False) for seen in by_params.values()
                                   if True in seen and False in seen)
        for name, figure in FIGURES.items():
            stats.series[name] = [float(v) for r in runs if (v := figure(r)) is not None]
        out.append(stats)
    return out


def sparkline(values: list[float]) -> str:
    """The values as block characters, low to high (the last 12)."""
    values = values[-12:]
    if not values:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return SPARK[0] * len(values)
    return "".join(SPARK[round((v - low) / (high - low) * (len(SPARK) - 1))] for v in values)


def trend(values: list[float]) -> str:
    """``▁▃█ 1.2s (1.0–3.4) last 3.4s``, or ``-`` when no run had the figure."""
    if not values:
        return "-"
    return (f"{sparkline(values)} {statistics.median(values):.1f}s "
            f"({min(values):.1f}–{max(values):.1f}) last {values[-1]:.1f}s")


@dataclass(frozen=True)
class Moved:
    case_id: str
    figure: str
    before: float
    after: float
    spread: float
    samples: tuple[int, int]


def figures_of(rows: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Every figure of ``rows``: FIGURES plus each phase (``phase:<name>``)."""
    out: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        for name, figure in FIGURES.items():
            if (v := figure(r)) is not None:
                out[name].append(float(v))
        for phase, seconds in (r.get("phases") or {}).items():
            if isinstance(seconds, int | float):
                out[f"phase:{phase}"].append(float(seconds))
    return out


def moved(case_id: str, before: list[dict[str, Any]], after: list[dict[str, Any]]
          ) -> list[Moved]:
    """Figures whose mean moved by more than their spread (the larger of the two sides'
    ranges) between ``before`` and ``after``."""
    a, b = figures_of(before), figures_of(after)
    out = []
    for name in sorted(set(a) & set(b)):
        spread = max(max(a[name]) - min(a[name]), max(b[name]) - min(b[name]))
        mean_a, mean_b = statistics.fmean(a[name]), statistics.fmean(b[name])
        if abs(mean_b - mean_a) > spread:
            out.append(Moved(case_id, name, mean_a, mean_b, spread,
                             (len(a[name]), len(b[name]))))
    return out


def verdict_word(rows: list[dict[str, Any]]) -> str:
    """``passed``, ``failed`` or ``flaky`` (both) over a case's runs on one side."""
    seen = {r["outcome"] == PASSED for r in ran(rows)}
    return "flaky" if seen == {True, False} else "passed" if seen == {True} else "failed"
