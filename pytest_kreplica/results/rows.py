"""One store row from what a case left: its run directory's verdict.json and run.json, the
summary row the plugin recorded, and pytest's outcome. verdict.json is read generically:
known figures get their own column, the whole document is kept as JSON."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..history import read_run_json
from ..report.verdict import read_verdict

#: a key naming an unavailability figure, wherever verdict.json puts it
UNAVAILABLE = re.compile(r"unavailab", re.I)


def numbers(doc: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    """Every number in a JSON document as ``(dotted.key, value)`` (booleans left out)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from numbers(value, f"{prefix}{key}.")
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from numbers(value, f"{prefix}{i}.")
    elif isinstance(doc, int | float) and not isinstance(doc, bool):
        yield prefix.rstrip("."), float(doc)


def unavailability(verdict: dict[str, Any]) -> float | None:
    """The largest figure under a key naming unavailability (None when there is none)."""
    found = [v for k, v in numbers(verdict) if UNAVAILABLE.search(k)]
    return max(found) if found else None


def params_key(parameters: dict[str, Any]) -> str:
    """The parameters without the seed: runs on "the same parameters" share this."""
    return json.dumps({k: v for k, v in parameters.items() if k != "seed"}, sort_keys=True,
                      default=str)


def build_identity(meta: dict[str, Any]) -> str | None:
    """The broker build a run names where the backend knows one (a docker image)."""
    cluster = meta.get("cluster") or {}
    for part in (cluster, cluster.get("source") or {}):
        for key in ("build", "image"):
            if part.get(key):
                return str(part[key])
    return None


def kafka_version(meta: dict[str, Any], parameters: dict[str, Any]) -> str | None:
    versions = meta.get("versions") or {}
    cluster = meta.get("cluster") or {}
    return (versions.get("kafka") or cluster.get("kafka_version")
            or (cluster.get("source") or {}).get("kafka_version")
            or parameters.get("kafka_version"))


def verdict_of(verdict: dict[str, Any], summary: dict[str, Any]) -> str | None:
    """The recorded verdict word (the summary table's), else one derived from verdict.json."""
    if summary.get("verdict"):
        return str(summary["verdict"])
    if "passed" not in verdict:
        return None
    if not verdict["passed"]:
        return "invalid"
    return "valid" if verdict.get("valid") else "accepted"


def build_row(*, run_id: str, run_dir: Path | None, summary: dict[str, Any] | None = None,
              outcome: str | None = None, case: dict[str, Any] | None = None,
              start_time: float | None = None) -> dict[str, Any]:
    """The row of one case run. ``case``: ``case_id``, ``test_id``, ``repeat``, ``matrix``,
    ``parameters`` as the plugin knows them; missing ones come from the run directory."""
    summary, case = summary or {}, case or {}
    verdict = (read_verdict(run_dir) if run_dir else None) or {}
    meta = read_run_json(run_dir, missing_ok=True) if run_dir and run_dir.is_dir() else {}
    parameters = case.get("parameters") or verdict.get("parameters") or meta.get("params") or {}
    counts = summary.get("counts") or verdict.get("counts")
    elections = verdict.get("election_s") or []
    return {
        "run_id": run_id,
        "case_id": case.get("case_id") or verdict.get("case") or meta.get("case_id")
        or (run_dir.name if run_dir else None),
        "test_id": case.get("test_id"), "repeat": case.get("repeat"),
        "matrix": case.get("matrix") or meta.get("matrix") or summary.get("matrix"),
        "parameters": parameters, "params_key": params_key(parameters),
        "seed": parameters.get("seed", verdict.get("seed")),
        "kafka_version": kafka_version(meta, parameters),
        "backend": (meta.get("cluster") or {}).get("backend") or parameters.get("backend"),
        "build": build_identity(meta),
        "outcome": outcome or ("passed" if verdict.get("passed") else
                               "failed" if verdict else None),
        "verdict": verdict_of(verdict, summary),
        "passed": verdict.get("passed"),
        "reason": summary.get("harness") or verdict.get("reason"),
        "history_valid": summary.get("history_valid", verdict.get("valid")),
        "replicas_valid": summary.get("replicas_valid",
                                      (verdict.get("replicas") or {}).get("valid")),
        "counts": counts, "phases": summary.get("phases") or verdict.get("phases"),
        "elections": elections,
        "election_max_s": summary.get("election_max_s", verdict.get("election_max_s")),
        "unavailability_s": unavailability(verdict),
        "verdict_json": verdict or None,
        "start_time": start_time if start_time is not None else meta.get("start_time"),
        "duration_s": summary.get("duration_s", verdict.get("duration_s")),
        "run_dir": str(run_dir) if run_dir else None,
    }
