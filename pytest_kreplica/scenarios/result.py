"""What a case showed: the ``CaseResult`` a scenario returns, whose ``assert_valid`` fails
with the offending ids, the run directory and the logs."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..report import build_verdict, write_report, write_verdict
from ..validation.outcome import decide
from .replicas import ReplicaCheck

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..matrix import Case
    from ..validation.checker import Verdict


@dataclass
class CaseResult:
    """What a case showed: the checker's ``Verdict``, the replica check, scenario checks a
    hook added (``extra["checks"]``: ``{name, ok, detail}``), phase timings, broker logs."""

    case: Case
    run_dir: Path
    verdict: Verdict
    replica: ReplicaCheck
    phases: dict[str, float]
    log_files: dict[int | str, str]  # broker id (or "source-1", "mirror-maker") -> log path
    extra: dict[str, Any] = field(default_factory=dict)
    # ``outcome.decide``'s {"passed", "reason"}: the runner passes what ``judge_case`` decided
    # (computed once); a result built by hand is decided from its parts here
    outcome: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.outcome:
            self.outcome = decide(history=history_dict(self.verdict),
                                  replicas=self.replica.as_dict(),
                                  checks=self.extra.get("checks"),
                                  hook_errors=self.hook_errors,
                                  tradeoff=self.extra.get("tradeoff"), problems=self.problems,
                                  availability=self.extra.get("availability"))

    @property
    def hook_errors(self) -> list[str]:
        return self.extra.get("hook_errors") or []

    @property
    def failed_checks(self) -> list[dict[str, Any]]:
        return [c for c in self.extra.get("checks") or [] if not c.get("ok")]

    @property
    def valid(self) -> bool:
        return self.outcome["passed"]

    @property
    def problems(self) -> list[str]:
        """What the case should have checked and did not (``outcome.coverage_problems``)."""
        return self.extra.get("problems") or []

    @property
    def history_accepted(self) -> bool:
        """The checker's verdict, or a loss the fault evidence explains (``tradeoffs``;
        the evidence is in verdict.json and report.html)."""
        tradeoff = self.extra.get("tradeoff") or {}
        return bool(self.verdict.valid) or bool(tradeoff.get("accepted"))

    def summary(self) -> dict[str, Any]:
        """The JSON row for the summary table (scalar extras only: faults stay in
        verdict.json)."""
        scalars = {k: v for k, v in self.extra.items()
                   if isinstance(v, str | int | float | bool) or v is None}
        elections = [f["election_s"] for f in self.extra.get("faults") or []
                     if f.get("election_s") is not None]
        return {**scalars, "election_max_s": max(elections) if elections else None,
                "case_id": self.case.case_id, "matrix": self.case.matrix,
                "verdict": ("valid" if self.verdict.valid else "accepted") if self.valid
                else "invalid",
                "reason": self.outcome.get("reason"),
                "history_valid": bool(self.verdict.valid), "replicas_valid": self.replica.valid,
                "semantics": self.case.semantics, "counts": dict(self.verdict.counts),
                "duration_s": round(sum(self.phases.values()), 3), "phases": self.phases,
                "run_dir": str(self.run_dir)}

    def failure_message(self) -> str:
        lines = [f"case {self.case.case_id} ({self.case.semantics}) is not valid"]
        if not self.history_accepted:
            bad = self.verdict.failures()
            lines.append("history: expected no " + ", ".join(bad) + "; seen "
                         + ", ".join(f"{n} {self.verdict.counts[n]}" for n in bad))
            for name in bad:
                rows = self.verdict.examples.get(name) or []
                lines.append(f"  {name} e.g. {json.dumps(rows[:10], default=str)}")
            tradeoff = self.extra.get("tradeoff")
            if tradeoff:
                lines.append(f"  trade-off refused: {tradeoff.get('reason')}")
        lines.extend(f"coverage: {p}" for p in self.problems)
        lines.extend(f"availability: {r}"
                     for r in (self.extra.get("availability") or {}).get("failures") or [])
        if not self.replica.valid:
            lines.extend(self.replica.failure_lines(self.run_dir))
        for check in self.failed_checks:
            lines.append(f"check {check.get('name')}: {check.get('detail')}")
        # what a scenario's hooks found that explains a failure (``extra["notes"]``)
        lines.extend(f"note: {note}" for note in self.extra.get("notes") or [])
        if self.hook_errors:
            lines.append(f"hooks: expected none to fail, seen {self.hook_errors}")
        lines.append(f"run directory: {self.run_dir}")
        lines.extend(f"broker {n} log: {p}" for n, p in sorted(self.log_files.items()))
        return "\n".join(lines)

    def assert_valid(self) -> None:
        if not self.valid:
            raise AssertionError(self.failure_message())


def history_dict(verdict: Verdict) -> dict[str, Any]:
    """The checker's ``Verdict.to_dict()`` (or the same keys of a stand-in)."""
    if hasattr(verdict, "to_dict"):
        return verdict.to_dict()
    return {"valid": bool(verdict.valid), "semantics": getattr(verdict, "semantics", None),
            "counts": dict(verdict.counts), "examples": getattr(verdict, "examples", {})}


def write_verdict_and_report(result: CaseResult) -> None:
    """verdict.json (report.verdict) and report.html: the report is for people, so a
    problem drawing it is logged and noted in the verdict, never fails the case."""
    case = result.case
    extra = {k: v for k, v in result.extra.items()
             if k not in ("faults", "fault_plan", "checks")}
    doc = build_verdict(
        case_id=case.case_id, parameters=case.as_dict(), semantics=case.semantics,
        history=history_dict(result.verdict), replicas=result.replica.as_dict(),
        phases=result.phases, faults=result.extra.get("faults"),
        fault_plan=result.extra.get("fault_plan"), seed=case.seed,
        checks=result.extra.get("checks"), duration_s=round(sum(result.phases.values()), 3),
        extra={**extra, **result.outcome})
    write_verdict(result.run_dir, doc)
    try:
        write_report(result.run_dir)
    except Exception as exc:
        log.warning("report.html for %s failed: %r", case.case_id, exc)
        doc["report_error"] = repr(exc)
        write_verdict(result.run_dir, doc)
