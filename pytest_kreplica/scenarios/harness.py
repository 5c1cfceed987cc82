"""When the harness could not do its job in a case: which exceptions say so, and the verdict
such a case gets. Its verdict part is ``harness`` (what was expected and what was seen);
nothing is judged about the broker (no history check, no replica check), and the runner
raises ``HarnessError``, which ends the test as a pytest error (``plugin.outcomes``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError
from ..report import build_verdict, write_report, write_verdict

if TYPE_CHECKING:
    from ..matrix import Case

log = logging.getLogger(__name__)

__all__ = ["client_error", "harness_error", "raise_harness_error"]


def client_error(exc: BaseException) -> bool:
    """A Kafka client's own exception that escaped the workload (a client that could not be
    built, a request that timed out outside any bounded retry): the harness', not a verdict
    on the broker (a send the broker refused is a history row, never raised)."""
    return type(exc).__module__.split(".")[0] == "kafka"


def harness_error(exc: BaseException) -> str | None:
    """The text of ``exc`` when it is a harness error (``HarnessError`` or a client's own
    exception), else None."""
    if isinstance(exc, HarnessError):
        return str(exc)
    if client_error(exc):
        return f"Kafka client error outside a bounded retry: {type(exc).__name__}: {exc}"
    return None


def raise_harness_error(case: Case, run_dir: Path, errors: list[str],
                        extra: dict[str, Any], phases: dict[str, float]) -> None:
    """Write the case's verdict.json (``passed: null``, the ``harness`` part) and its report,
    then raise ``HarnessError`` naming what was expected and seen and the run directory."""
    message = (f"harness error in case {case.case_id}: {'; '.join(errors)}; nothing was "
               f"judged about the broker; run directory {run_dir}")
    kept = {k: v for k, v in extra.items() if k not in ("faults", "fault_plan", "checks")}
    doc = build_verdict(
        case_id=case.case_id, parameters=case.as_dict(), semantics=case.semantics,
        history=None, phases=phases, faults=extra.get("faults"),
        fault_plan=extra.get("fault_plan"), seed=case.seed, checks=extra.get("checks"),
        duration_s=round(sum(phases.values()), 3),
        extra={**kept, "passed": None, "reason": f"harness: {'; '.join(errors)}",
               "harness": {"errors": errors}})
    write_verdict(run_dir, doc)
    try:
        write_report(run_dir)
    except Exception as exc:  # the report is for people; the error below is the outcome
        log.warning("report.html for %s failed: %r", case.case_id, exc)
    raise HarnessError(message)
