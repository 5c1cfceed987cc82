"""``expected_findings:``: the cases of a matrix whose red is a known property of the system
under test, each with the reason. The plugin runs such a case as pytest's strict xfail: it
is reported as an expected finding while it fails, and as a failure the day it passes.

    expected_findings:
      - reason: Kafka's default flush settings lose the un-fsynced writes of every replica
        match: {failure: power_loss_all, flush_messages: default}

An entry matches a case that has every value of its ``match`` (the same dimension values an
``exclude`` entry takes). A matrix that ``extends`` another inherits its entries unless it
sets the key itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .case import Case
from .dimensions import DIMENSIONS, InvalidValue
from .expand import matches, matrix_error

__all__ = ["KEY", "Finding", "assign", "parse_findings"]

KEY = "expected_findings"
ENTRY_KEYS = ("reason", "match")
Finding = tuple[dict[str, Any], str]  # (dimension values to match, reason)


def parse_findings(path: Path, data: Mapping[str, Any]) -> list[Finding]:
    """The ``expected_findings`` entries of a matrix document, validated: each is a mapping
    with a non-empty ``reason`` and a non-empty ``match`` of dimension values."""
    entries = data.get(KEY) or []
    shape = "a list of {reason: TEXT, match: {dimension: value, ...}}"
    if not isinstance(entries, list):
        raise matrix_error(path, KEY, f"must be {shape}")
    out: list[Finding] = []
    for i, entry in enumerate(entries):
        where = f"{KEY}[{i}]"
        if not isinstance(entry, dict):
            raise matrix_error(path, where, f"must be a mapping; allowed: {shape}")
        for key in entry:
            if key not in ENTRY_KEYS:
                raise matrix_error(path, f"{where}.{key}",
                                   f"unknown key; allowed: {', '.join(ENTRY_KEYS)}")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise matrix_error(path, f"{where}.reason",
                               "missing or empty; allowed: one line saying why it fails")
        match = entry.get("match")
        if not isinstance(match, dict) or not match:
            raise matrix_error(path, f"{where}.match",
                               "missing or empty; allowed: a mapping {dimension: value, ...}")
        out.append(({name: _value(path, f"{where}.match.{name}", name, value)
                     for name, value in match.items()}, " ".join(reason.split())))
    return out


def _value(path: Path, where: str, name: str, value: Any) -> Any:
    if name not in DIMENSIONS:
        raise matrix_error(path, where, f"unknown dimension; allowed: {', '.join(DIMENSIONS)}")
    try:
        return DIMENSIONS[name].parse(value)
    except InvalidValue as exc:
        raise matrix_error(path, where, f"bad value {value!r}; allowed: {exc}") from None


def assign(findings: list[Finding], cases: list[Case]) -> dict[str, str]:
    """``{case_id: reason}`` of the cases some finding matches (the first one that does). An
    entry that matches no case names none (a matrix that ``extends`` this one and leaves its
    cases out inherits the entry harmlessly)."""
    out: dict[str, str] = {}
    for match, reason in findings:
        for case in cases:
            if matches(match, case.as_dict()):
                out.setdefault(case.case_id, reason)
    return out
