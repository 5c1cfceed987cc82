"""``kreplica results --html OUT``: one self-contained page with the per-case table and, per
case, its election time, unavailability and duration over its runs as inline SVG plots
(matplotlib, as report.html's plots are drawn), failed runs marked red."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402

from ..report.markup import CSS, escape, table  # noqa: E402
from .stats import FIGURES, PASSED, per_case, ran  # noqa: E402

LABELS = {"election_max_s": "election (s)", "unavailability_s": "unavailability (s)",
          "duration_s": "duration (s)"}


def svg_of(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # inline in HTML: no XML prolog


def case_plot(rows: list[dict[str, Any]]) -> str:
    """One panel per figure the case has, x = the run's place in the store."""
    shown = [n for n, f in FIGURES.items() if any(f(r) is not None for r in rows)]
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(3.4 * max(len(shown), 1), 2.2),
                             squeeze=False)
    for ax, name in zip(axes[0], shown, strict=False):
        points = [(i + 1, float(v), r["outcome"] == PASSED)
                  for i, r in enumerate(rows) if (v := FIGURES[name](r)) is not None]
        ax.plot([p[0] for p in points], [p[1] for p in points], color="#1565c0", lw=1)
        for x, y, ok in points:
            ax.plot(x, y, marker="o", ms=4, color="#2e7d32" if ok else "#c62828")
        ax.set_title(LABELS[name], fontsize=9)
        ax.set_xlabel("run", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    return svg_of(fig)


def write_page(out: Path, rows: list[dict[str, Any]]) -> Path:
    """Write the page to ``out`` (parents made); returns its path."""
    stats = per_case(rows)
    summary = [{"case": s.case_id, "runs": s.runs, "pass rate": f"{s.pass_rate:.0%}",
                "flake rate": f"{s.flake_rate:.0%}"} for s in stats]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>kreplica results"
             f"</title><style>{CSS}</style></head><body><h1>kreplica results</h1>",
             table(summary)]
    for s in stats:
        runs = [r for r in ran(rows) if r["case_id"] == s.case_id]
        parts.append(f"<h2 id='{escape(s.case_id)}'>{escape(s.case_id)}</h2>")
        parts.append(case_plot(runs))
    parts.append("</body></html>")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts), encoding="utf-8")
    return out
