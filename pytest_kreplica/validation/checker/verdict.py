"""The checker's result and its validity under a semantics (the rules of shared/HISTORY.md;
which anomaly breaks which semantics is in ``anomalies``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .anomalies import INVALIDATING, NAMES

TOTALS = ("sent", "acked", "failed", "indeterminate", "polled")
DEFAULT_SEMANTICS = "at-least-once"
EXAMPLES_PER_ANOMALY = 5


def invalidating(semantics: str) -> tuple[str, ...]:
    """The anomalies that make a run invalid under ``semantics``."""
    return INVALIDATING[semantics]


def is_valid(counts: dict[str, int], semantics: str) -> bool:
    return not any(counts.get(name, 0) for name in INVALIDATING[semantics])


@dataclass
class Verdict:
    """What ``check`` found: validity under ``semantics``, a count for every anomaly and the
    totals, a few offending rows per anomaly, and ``extra`` for later additions."""

    valid: bool
    semantics: str
    counts: dict[str, int]
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_counts(
        cls,
        counts: dict[str, int],
        semantics: str,
        examples: dict[str, list[dict[str, Any]]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Verdict:
        full = {name: int(counts.get(name, 0)) for name in (*NAMES, *TOTALS)}
        full.update({k: int(v) for k, v in counts.items() if k not in full})
        return cls(
            valid=is_valid(full, semantics),
            semantics=semantics,
            counts=full,
            examples={k: list(v) for k, v in (examples or {}).items() if v},
            extra=dict(extra or {}),
        )

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Verdict:
        """The inverse of ``to_dict``."""
        return cls(valid=doc["valid"], semantics=doc["semantics"], counts=dict(doc["counts"]),
                   examples=dict(doc["examples"]), extra=dict(doc.get("extra") or {}))

    def to_dict(self) -> dict[str, Any]:
        """The ``kreplica check --json`` object (``extra`` only when something is in it)."""
        out: dict[str, Any] = {
            "valid": self.valid,
            "semantics": self.semantics,
            "counts": dict(self.counts),
            "examples": {k: list(v) for k, v in self.examples.items()},
        }
        if self.extra:
            out["extra"] = dict(self.extra)
        return out

    def failures(self) -> list[str]:
        """The invalidating anomalies that occurred, e.g. ``["lost", "poll_skips"]``."""
        return [name for name in INVALIDATING[self.semantics] if self.counts.get(name, 0)]

    def summary(self, run_dir: str | None = None) -> str:
        """Counts first, then a few examples per anomaly; invalidating anomalies marked *."""
        bad = set(INVALIDATING[self.semantics])
        where = f"{run_dir}: " if run_dir else ""
        lines = [f"{where}{'VALID' if self.valid else 'INVALID'} ({self.semantics})"]
        lines.append("  " + "  ".join(f"{name} {self.counts.get(name, 0)}" for name in TOTALS))
        for name in NAMES:
            n = self.counts.get(name, 0)
            mark = " *" if n and name in bad else ""
            lines.append(f"  {name:<22}{n}{mark}")
        for name in sorted(k for k in self.counts if k not in NAMES and k not in TOTALS):
            lines.append(f"  {name:<22}{self.counts[name]}")
        for note, value in self.extra.items():
            lines.append(f"  note: {note}: {value}")
        for name, rows in self.examples.items():
            if not rows:
                continue
            lines.append(f"{name} (first {len(rows)}):")
            for row in rows:
                lines.append("  " + " ".join(f"{k}={_fmt(v)}" for k, v in row.items()))
        return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "[" + ",".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)
