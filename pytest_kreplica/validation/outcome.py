"""A case's one verdict: whether it passed, and why not (or why a loss was accepted).

``decide`` is the only place the parts are combined - the checker's history verdict, the
loss trade-off, the replica-log verdict, availability (``availability.measure``), the
scenario checks, hook errors and what a case must have checked (``coverage_problems``).
``scenario.run_case`` / ``CaseResult`` and ``kreplica check`` both call it, so a saved run
re-checked by hand gets the test's answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import HistoryError
from ..history import read_run_json
from ..rundir import REPLICAS_JSON, VERDICT_JSON
from .availability import measure
from .checker import check
from .checker.verdict import invalidating
from .replicas.verify import verify_logs
from .tradeoffs import judge

# What a consumer's reads must show for each semantics to have been checked at all: every
# promise is about what consumers read, so a case whose consumers read nothing passes
# every rule vacuously.
READ_COVERAGE = {
    "at-least-once": "every acknowledged record must be read, and nothing was",
    "at-most-once": "no record may be read twice, and none was read once",
    "exactly-once": "every committed record must be read exactly once, and none was read",
}


def coverage_problems(run_dir: str | Path, counts: dict[str, int],
                      meta: dict[str, Any] | None, semantics: str | None = None) -> list[str]:
    """What the case should have checked and did not: a case that sent nothing, had
    nothing acknowledged, or whose consumers read nothing (under every semantics:
    ``READ_COVERAGE``) proves nothing; with a replica snapshot, every partition of the case
    must be in it (its replicas' copies are judged by verify-logs)."""
    problems = []
    aborted = counts.get("txns_aborted", 0)
    if not counts.get("sent") and aborted and not counts.get("txns_committed"):
        problems.append(f"nothing was committed: all {aborted} transaction(s) aborted (their "
                        f"sends are no writes): the case checked nothing")
    elif not counts.get("sent"):
        problems.append("nothing was sent (sends is empty): the case checked nothing")
    elif not counts.get("acked"):
        problems.append(f"no acknowledged record ({counts['sent']} sent, "
                        f"{counts.get('failed', 0)} failed, "
                        f"{counts.get('indeterminate', 0)} indeterminate): nothing to check")
    elif not counts.get("polled"):
        chosen = semantics or (meta or {}).get("semantics") or "at-least-once"
        problems.append(f"nothing was polled ({counts['acked']} acknowledged): under "
                        f"{chosen} {READ_COVERAGE.get(chosen, 'a consumer must read')}: "
                        f"the case checked nothing")
    run_dir = Path(run_dir)
    replicas = run_dir / REPLICAS_JSON
    topics = (meta or {}).get("topics")
    partitions = ((meta or {}).get("params") or {}).get("partitions")
    if replicas.exists() and isinstance(topics, list) and isinstance(partitions, int):
        try:
            listed = {(p.get("topic"), p.get("partition"))
                      for p in json.loads(replicas.read_text()).get("partitions") or []
                      if isinstance(p, dict)}
        except (OSError, ValueError, AttributeError) as exc:
            raise HistoryError(f"{replicas}: cannot be read: {exc}") from None
        absent = [f"{t}-{p}" for t in topics for p in range(partitions)
                  if (t, p) not in listed]
        if absent:
            problems.append(f"{len(absent)} partition(s) of the case missing from "
                            f"replicas.json: {', '.join(absent[:5])}")
    return problems


def decide(*, history: dict[str, Any] | None, replicas: dict[str, Any] | None = None,
           checks: list[dict[str, Any]] | None = None, hook_errors: list[str] | None = None,
           tradeoff: dict[str, Any] | None = None, problems: list[str] | None = None,
           availability: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"passed": bool, "reason": str}``; ``reason`` names every part that failed, or
    the accepted trade-off, or says every part passed. An availability failure is its own
    part ("availability: ..."), whatever the history's verdict."""
    failed: list[str] = []
    if history is None:
        failed.append("the history was not checked")
    elif not history.get("valid"):
        if tradeoff and tradeoff.get("accepted"):
            pass
        else:
            counts = history.get("counts") or {}
            bad = [f"{k} {counts[k]}" for k in invalidating(history.get("semantics")
                                                           or "at-least-once")
                   if counts.get(k)]
            text = f"history invalid ({history.get('semantics')}): {', '.join(bad)}"
            if tradeoff:
                text += f"; {tradeoff.get('reason')}"
            failed.append(text)
    if replicas is not None and not replicas.get("skipped") and not replicas.get("valid"):
        counts = replicas.get("counts") or {}
        shown = ", ".join(f"{k} {v}" for k, v in counts.items()
                          if k in ("corrupt_batches", "missing_batches", "divergent_batches",
                                   "uncovered_replicas") and v)
        failed.append(f"replica logs invalid: {shown or 'closed segments differ'}")
    failed.extend(f"availability: {r}" for r in (availability or {}).get("failures") or [])
    failed.extend(f"check failed: {c.get('name')}: {c.get('detail')}"
                  for c in checks or [] if not c.get("ok"))
    failed.extend(f"hook failed: {e}" for e in hook_errors or [])
    failed.extend(problems or [])
    if failed:
        return {"passed": False, "reason": "; ".join(failed)}
    if history is not None and not history.get("valid"):
        return {"passed": True, "reason": f"accepted trade-off: {tradeoff.get('reason')}"}
    return {"passed": True, "reason": "every part passed"}


def judge_case(run_dir: str | Path, history: Any, *, meta: dict[str, Any] | None,
               replicas: dict[str, Any] | None, checks: list[dict[str, Any]] | None,
               hook_errors: list[str] | None, faults: list[dict[str, Any]] | None
               ) -> dict[str, Any]:
    """Trade-off, coverage and availability of a checked run, then ``decide``:
    ``{"passed", "reason", "tradeoff", "problems", "availability"}``. ``history`` is the
    checker's ``Verdict``. Availability is measured when something was sent."""
    counts = dict(history.counts)
    tradeoff = None
    if not history.valid and not (meta or {}).get("mirror"):  # no trade-off across clusters
        tradeoff = judge(history.semantics, counts, run_dir, faults,
                         (meta or {}).get("params"))
    problems = coverage_problems(run_dir, counts, meta, history.semantics)
    availability = (measure(run_dir, faults, (meta or {}).get("params"))
                    if counts.get("sent") else None)
    out = decide(history=history.to_dict(), replicas=replicas, checks=checks,
                 hook_errors=hook_errors, tradeoff=tradeoff, problems=problems,
                 availability=availability)
    return {**out, "tradeoff": tradeoff, "problems": problems, "availability": availability}


def recheck(run_dir: str | Path, semantics: str | None = None,
            spark_master: str | None = None) -> tuple[Any, dict[str, Any]]:
    """``kreplica check``: the checker's verdict and the case verdict of a run directory.
    The replica logs are verified again when the run has a snapshot; the scenario checks,
    hook errors and fault records the test saw come from its verdict.json (observations
    of the live cluster the history cannot replay)."""
    run_dir = Path(run_dir)
    verdict = check(run_dir, semantics=semantics, spark_master=spark_master)
    meta = read_run_json(run_dir, missing_ok=True)
    saved: dict[str, Any] = {}
    path = run_dir / VERDICT_JSON
    if path.exists():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise HistoryError(f"{path}: cannot be read: {exc}") from None
    replicas = None
    if (run_dir / REPLICAS_JSON).exists():
        logs = verify_logs(run_dir, spark_master=spark_master).to_dict()
        logs.pop("segments", None)
        replicas = logs
    outcome = judge_case(run_dir, verdict, meta=meta, replicas=replicas,
                         checks=saved.get("checks"), hook_errors=saved.get("hook_errors"),
                         faults=saved.get("faults"))
    return verdict, outcome

