"""verdict.json: one file per case that says what was run, what was seen and how long each
phase took, so a case can be judged, compared and replayed without re-running it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..rundir import VERDICT_JSON
from ..validation.outcome import decide

VERDICT_FILE = VERDICT_JSON
FORMAT = 1


def fault_phases(faults: list[dict[str, Any]]) -> dict[str, float]:
    """Per fault: its downtime (strike to restore) and its recovery (restore to in sync)."""
    phases: dict[str, float] = {}
    for f in faults:
        label = f"fault {f['index']} ({f['failure']} {f['target']}, node {f.get('node')})"
        if f.get("fault_s") is not None:
            phases[label] = round(f["fault_s"], 3)
        if f.get("recovery_s") is not None:
            phases[f"fault {f['index']} recovery"] = round(f["recovery_s"], 3)
    return phases


def build_verdict(*, case_id: str, parameters: dict[str, Any], semantics: str,
                  history: dict[str, Any] | None, replicas: dict[str, Any] | None = None,
                  phases: dict[str, float] | None = None,
                  faults: list[dict[str, Any]] | None = None,
                  fault_plan: dict[str, Any] | None = None, seed: int | None = None,
                  checks: list[dict[str, Any]] | None = None, duration_s: float | None = None,
                  extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The verdict document. ``history`` is the checker's ``Verdict.to_dict()``, ``replicas``
    the replica check's; ``checks`` are scenario checks ({name, ok, detail}) such as C.2's
    bounded election. ``passed`` / ``reason`` come from ``outcome.decide`` (the case's one
    verdict); a caller that judged more (trade-off, coverage) passes them in ``extra``."""

    faults = faults or []
    elections = [f["election_s"] for f in faults if f.get("election_s") is not None]
    checks = checks or []
    extra = dict(extra or {})
    counts = {**(history.get("counts", {}) if history else {}), **extra.pop("extra_counts", {})}
    decided = decide(history=history, replicas=replicas, checks=checks)
    doc = {
        "format": FORMAT,
        "case": case_id,
        "passed": decided["passed"],
        "reason": decided["reason"],
        "semantics": semantics,
        "valid": history.get("valid") if history else None,
        "counts": counts,  # the checker's, and a scenario's own (a tiered case's remote_reads)
        "examples": history.get("examples", {}) if history else {},
        "replicas": replicas,
        "checks": checks,
        "seed": seed,
        "fault_plan": fault_plan,
        "faults": faults,
        "election_s": elections,
        "election_max_s": max(elections) if elections else None,
        "phases": {**(phases or {}), **fault_phases(faults)},
        "duration_s": duration_s,
        "parameters": parameters,
    }
    if extra:
        doc.update(extra)
    return doc


def write_verdict(run_dir: str | Path, doc: dict[str, Any]) -> Path:
    """Write atomically (temp file + rename): a reader never sees half a verdict."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".verdict-", suffix=".json", dir=run_dir)
    with os.fdopen(fd, "w") as out:
        json.dump(doc, out, indent=2, sort_keys=False, default=str)
        out.write("\n")
    path = run_dir / VERDICT_FILE
    os.chmod(tmp, 0o644)  # mkstemp makes 0600
    os.replace(tmp, path)
    return path


def read_verdict(run_dir: str | Path) -> dict[str, Any] | None:
    path = Path(run_dir) / VERDICT_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
