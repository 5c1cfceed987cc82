"""report.html (one case) and index.html (every case of a run): plain, self-contained HTML
with inline SVG plots, readable offline and attachable to a CI run as a single file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from ..rundir import REPORT_HTML, VERDICT_JSON
from ..validation.checker.anomalies import report_class
from . import sections
from .data import load
from .markup import CSS, escape, rounded
from .sections import REPORTED
from .verdict import read_verdict

REPORT_FILE = REPORT_HTML
INDEX_FILE = "index.html"
#: the anomalies and look-up counts of the report, red or amber where non-zero (``sections``)
__all__ = ["INDEX_FILE", "REPORTED", "REPORT_FILE", "index_columns", "index_outcome",
           "render_report", "write_index", "write_report"]


def _write_atomic(path: Path, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".html", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports are meant to be shared
    os.replace(tmp, path)
    return path


def render_report(run_dir: str | Path) -> str:
    """One case's report.html: its sections (``sections.py``) top to bottom."""
    run_dir = Path(run_dir)
    data = load(run_dir)
    verdict = read_verdict(run_dir) or {}
    return "\n".join([
        *sections.head(data, verdict, run_dir),
        *sections.tradeoff(verdict),
        *sections.checks(verdict),
        *sections.availability(verdict),
        *sections.counts(data, verdict),
        *sections.timeline(data, verdict),
        *sections.offending(data),
        *sections.transactions(verdict),
        *sections.setup(data, verdict),
        *sections.events(data),
        *sections.files(run_dir),
    ])


def write_report(run_dir: str | Path) -> Path:
    """Render ``run_dir``'s report.html from its history and verdict.json."""
    run_dir = Path(run_dir)
    return _write_atomic(run_dir / REPORT_FILE, render_report(run_dir))


def index_columns(verdicts: list[dict[str, Any]]) -> list[str]:
    """The count columns of the index: sent, acked, the three anomalies every reader looks
    for, and every other anomaly the checker counted in any case of the page (a reordered
    send in an otherwise clean run shows here, not only in its verdict.json)."""
    fixed = ["sent", "acked", "lost", "unseen", "duplicated"]
    seen = {k for v in verdicts for k, n in (v.get("counts") or {}).items() if n}
    return fixed + [k for k in REPORTED if k in seen and k not in fixed]


def _count_class(name: str, value: Any, semantics: str | None) -> str:
    if not value or name in ("sent", "acked"):
        return ""
    return " " + report_class(name, semantics)


# a case's outcome in the index: an expected finding (matrix ``expected_findings``) and a
# harness error (verdict ``harness``: nothing judged) apart from a broker failure
INDEX_OUTCOMES = ("passed", "accepted", "failed", "expected finding", "finding not seen",
                  "harness error")
_INDEX_BADGES = {"passed": ("pass", "pass"), "accepted": ("accepted", "accepted"),
                 "failed": ("fail", "FAIL"), "expected finding": ("finding", "expected finding"),
                 "finding not seen": ("fail", "FAIL: finding not seen"),
                 "harness error": ("harness", "harness error")}


def index_outcome(v: dict[str, Any]) -> str:
    """One of ``INDEX_OUTCOMES`` for a case's verdict.json."""
    if v.get("harness"):
        return "harness error"
    passed = v.get("passed")
    if v.get("expected_finding"):
        return "finding not seen" if passed else "expected finding"
    if not passed:
        return "failed"
    accepted = v.get("valid") is False and (v.get("tradeoff") or {}).get("accepted")
    return "accepted" if accepted else "passed"


def _index_badge(v: dict[str, Any]) -> str:
    cls, label = _INDEX_BADGES[index_outcome(v)]
    title = v.get("expected_finding") or v.get("reason") or ""
    return f'<span class="badge {cls}" title="{escape(title)}">{escape(label)}</span>'


def write_index(root: str | Path) -> Path | None:
    """index.html in ``root`` linking every case directory below it that has a verdict."""
    root = Path(root)
    cases = sorted(p.parent for p in root.rglob(VERDICT_JSON))
    if not cases:
        return None
    verdicts = [read_verdict(c) or {} for c in cases]
    columns = index_columns(verdicts)
    rows = []
    for case_dir, v in zip(cases, verdicts, strict=True):
        counts = v.get("counts") or {}
        rel = case_dir.relative_to(root).as_posix()
        report = f"{rel}/{REPORT_FILE}" if (case_dir / REPORT_FILE).exists() else (
            f"{rel}/verdict.json")
        badge = _index_badge(v)
        rows.append(
            f"<tr><td><a href='{escape(report)}'>{escape(v.get('case') or rel)}</a></td>"
            f"<td>{badge}</td><td class='nowrap'>{escape(v.get('semantics'))}</td>"
            + "".join(f"<td class='num{_count_class(k, counts.get(k), v.get('semantics'))}'>"
                      f"{escape(counts.get(k))}</td>" for k in columns)
            + f"<td class='num'>{escape(rounded(v.get('election_max_s')))}</td>"
            f"<td class='num'>{escape(rounded(v.get('duration_s'), 1))}</td></tr>")
    outcomes = [index_outcome(v) for v in verdicts]
    tally = ", ".join(f"{outcomes.count(o)} {o}" for o in INDEX_OUTCOMES if o in outcomes)
    head = "".join(f"<th>{h}</th>" for h in (
        "case", "verdict", "semantics", *columns, "election s (max)", "duration s"))
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>kreplica results"
           f"</title><style>{CSS}</style></head><body><h1>kreplica results</h1>"
           f"<p>{len(cases)} case(s): {tally}.</p>"
           f"<table><tr>{head}</tr>{''.join(rows)}</table></body></html>")
    return _write_atomic(root / INDEX_FILE, doc)
