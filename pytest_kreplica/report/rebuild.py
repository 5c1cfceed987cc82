"""``kreplica report RUN_DIR``: (re)build verdict.json and report.html from any run directory
(a history written by another client, a run copied from CI), or from every run directory
below RUN_DIR, then its index.html.

The history part of the verdict (validity, counts, examples) is the checker's, run now on
Spark; what only the original run knew (replica check, faults, scenario checks, phases,
parameters) is kept from an earlier verdict.json when there is one. Exit 0 when every case
passed, 1 when one did not, 2 for a directory that holds no history (via ``kreplica``).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..history import read_run_json
from ..validation.checker import check
from ..validation.engine.spark import stop_spark
from ..validation.outcome import judge_case
from .html import write_index, write_report
from .verdict import build_verdict, read_verdict, write_verdict

log = logging.getLogger(__name__)

HISTORY_TABLES = ("sends.jsonl", "sends.parquet")
_KEPT = ("replicas", "faults", "fault_plan", "seed", "checks", "duration_s", "parameters")


def is_run_dir(path: Path) -> bool:
    return any((path / name).exists() for name in HISTORY_TABLES)


def run_dirs(root: Path) -> list[Path]:
    """``root`` itself when it holds a history, else every run directory below it."""
    if is_run_dir(root):
        return [root]
    return sorted({p.parent for name in HISTORY_TABLES for p in root.rglob(name)
                   if is_run_dir(p.parent)})


def rebuild(run_dir: Path, semantics: str | None = None,
            spark_master: str | None = None) -> dict[str, Any]:
    """Check ``run_dir``'s history and write its verdict.json and report.html."""

    verdict = check(run_dir, semantics=semantics, spark_master=spark_master)
    history = verdict.to_dict()
    previous = read_verdict(run_dir) or {}
    meta = read_run_json(run_dir, missing_ok=True) or {}
    kept = {k: previous.get(k) for k in _KEPT}
    phases = {k: v for k, v in (previous.get("phases") or {}).items()
              if not k.startswith("fault ")}  # build_verdict adds them again from faults
    known = {"format", "case", "passed", "semantics", "valid", "counts", "examples",
             "election_s", "election_max_s", "phases", "report_error", "rebuilt",
             "reason", "tradeoff", "problems", "availability", *_KEPT}
    extra = {k: v for k, v in previous.items() if k not in known}
    extra["rebuilt"] = {"by": "kreplica report", "time": time.time()}
    # counts a scenario added beside the checker's (a tiered case's remote_reads) stay
    extra["extra_counts"] = {k: v for k, v in (previous.get("counts") or {}).items()
                             if k not in history.get("counts", {})}
    # the case's one verdict (outcome.judge_case, as run_case and kreplica check reach it)
    judged = judge_case(run_dir, verdict, meta=meta, replicas=kept["replicas"],
                        checks=kept["checks"], hook_errors=previous.get("hook_errors"),
                        faults=kept["faults"])
    extra.update(passed=judged["passed"], reason=judged["reason"])
    extra.update({k: judged[k] for k in ("tradeoff", "problems", "availability")
                  if judged[k]})
    doc = build_verdict(
        case_id=previous.get("case") or meta.get("case") or meta.get("case_id") or run_dir.name,
        parameters=kept["parameters"] or meta.get("parameters") or {},
        semantics=history.get("semantics") or verdict.semantics, history=history,
        replicas=kept["replicas"], phases=phases, faults=kept["faults"],
        fault_plan=kept["fault_plan"], seed=kept["seed"], checks=kept["checks"],
        duration_s=kept["duration_s"], extra=extra)
    write_verdict(run_dir, doc)
    try:
        write_report(run_dir)
    except Exception as exc:  # the report is for people; the verdict stands without it
        log.warning("report.html for %s failed: %r", run_dir, exc)
        doc["report_error"] = repr(exc)
        write_verdict(run_dir, doc)
    return doc


def run_report(args) -> int:
    """``kreplica report RUN_DIR [--semantics S] [--spark-master URL]``."""

    root = Path(args.run_dir)
    if not root.is_dir():
        raise InputError(f"{root}: no such run directory (expected a directory holding "
                         f"{' or '.join(HISTORY_TABLES)}, or directories that do)")
    found = run_dirs(root)
    if not found:
        raise InputError(f"{root}: no history found (expected {' or '.join(HISTORY_TABLES)} "
                         "in it or in a directory below it)")
    failed = 0
    try:
        for run_dir in found:
            doc = rebuild(run_dir, args.semantics, getattr(args, "spark_master", None))
            counts = doc["counts"]
            anomalies = ", ".join(f"{k} {v}" for k, v in counts.items()
                                  if v and k not in ("sent", "acked", "failed",
                                                     "indeterminate", "polled"))
            state = "passed" if doc["passed"] else "FAILED"
            failed += not doc["passed"]
            print(f"{doc['case']}: {state} ({counts.get('sent', 0)} sent, "
                  f"{anomalies or 'no anomalies'}) -> {run_dir / 'report.html'}", flush=True)
    finally:
        stop_spark()
    if len(found) > 1 or found[0] != root:
        print(f"index: {write_index(root)}")
    return 1 if failed else 0
