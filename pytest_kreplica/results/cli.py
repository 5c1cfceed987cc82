"""``kreplica results`` and ``kreplica compare``: the results store read back.

``kreplica results [--store PATH] [--case GLOB]`` prints one line per case: runs, pass rate,
flake rate and the trends of election time, unavailability and duration (exit 0);
``--html OUT`` writes them as plots; ``--import DIR...`` appends the run directories below
each DIR (``kreplica report``'s ``run_dirs``), one row per verdict.json, a directory already
in the store being left out. ``kreplica compare A B`` (two run ids or two Kafka versions)
prints the cases whose verdict changed and the figures that moved by more than their spread;
it exits 1 when a case that passed in A did not pass in B (found worse), else 0. A missing
store or an unknown run is one line and exit 2 (``cli.py``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..report.verdict import read_verdict
from . import store
from .rows import build_row
from .stats import moved, per_case, ran, select, trend, verdict_word

HEADER = ("case", "runs", "pass", "flake", "election", "unavailability", "duration")


def table(lines: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in lines) for i in range(len(lines[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in lines]


def summary_lines(rows: list[dict[str, Any]]) -> list[str]:
    cells = [HEADER]
    for s in per_case(rows):
        cells.append((s.case_id, str(s.runs), f"{s.pass_rate:.0%}", f"{s.flake_rate:.0%}",
                      trend(s.series["election_max_s"]), trend(s.series["unavailability_s"]),
                      trend(s.series["duration_s"])))
    return table(cells)


def import_dirs(conn: Any, roots: list[str]) -> tuple[int, int]:
    """Append every run directory below ``roots``; returns (added, already there)."""
    from ..report.rebuild import run_dirs  # pulls in matplotlib (the report's plots)

    added = kept = 0
    for root in map(Path, roots):
        if not root.is_dir():
            raise InputError(f"{root}: no such run directory (--import takes directories "
                             "holding run directories)")
        found = [d for d in run_dirs(root) if read_verdict(d) is not None]
        if not found:
            raise InputError(f"{root}: no run directory with a verdict.json below it "
                             "(kreplica report DIR writes them)")
        run_id = f"import-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{root.name}"
        for run_dir in found:
            row = build_row(run_id=run_id, run_dir=run_dir.resolve())
            if store.has_run(conn, row["run_dir"], row["start_time"]):
                kept += 1
                continue
            store.append(conn, row)
            added += 1
    return added, kept


def run_results(args: Any) -> int:
    """``kreplica results``."""
    path = Path(args.store)
    if args.imports:
        conn = store.connect(path)
        added, kept = import_dirs(conn, args.imports)
        print(f"{path}: {added} row(s) added, {kept} already there")
    else:
        conn = store.open_existing(path)
    rows = select(store.rows(conn), args.case)
    conn.close()
    if not ran(rows):
        raise InputError(f"{path}: no runs" + (f" of a case matching {args.case!r}"
                                               if args.case else ""))
    if args.html:
        from .html import write_page  # matplotlib: only for the page

        print(f"page: {write_page(Path(args.html), rows)}")
    else:
        print("\n".join(summary_lines(rows)))
    return 0


def side(conn: Any, name: str) -> tuple[str, list[dict[str, Any]]]:
    """The rows of run id ``name``, else of Kafka version ``name``."""
    if name in store.run_ids(conn):
        return f"run {name}", store.rows(conn, "run_id = ?", [name])
    if name in store.kafka_versions(conn):
        return f"Kafka {name}", store.rows(conn, "kafka_version = ?", [name])
    runs = store.run_ids(conn)
    raise InputError(f"{name}: not a run id nor a Kafka version of the store; runs: "
                     f"{', '.join(runs[-5:]) or 'none'}; Kafka versions: "
                     f"{', '.join(store.kafka_versions(conn)) or 'none'}")


def compare_lines(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[list[str], int]:
    """Lines for the cases of both sides, and how many got worse."""
    cases = sorted({r["case_id"] for r in ran(a)} & {r["case_id"] for r in ran(b)})
    lines, worse = [], 0
    for case_id in cases:
        before = [r for r in ran(a) if r["case_id"] == case_id]
        after = [r for r in ran(b) if r["case_id"] == case_id]
        was, now = verdict_word(before), verdict_word(after)
        if was != now:
            worse += was == "passed"
            lines.append(f"{case_id}: verdict {was} -> {now}")
        for m in moved(case_id, before, after):
            note = "" if max(m.samples) > 1 else " (one run each: spread unknown)"
            lines.append(f"{case_id}: {m.figure} {m.before:.2f} -> {m.after:.2f} "
                         f"(spread {m.spread:.2f}, runs {m.samples[0]}/{m.samples[1]}){note}")
    return lines, worse


def run_compare(args: Any) -> int:
    """``kreplica compare A B``."""
    conn = store.open_existing(Path(args.store))
    (label_a, a), (label_b, b) = side(conn, args.a), side(conn, args.b)
    conn.close()
    lines, worse = compare_lines(a, b)
    both = len({r["case_id"] for r in ran(a)} & {r["case_id"] for r in ran(b)})
    print(f"{label_a} -> {label_b}: {both} case(s) in both")
    print("\n".join(lines) if lines else "no verdict changed, no figure moved beyond its spread")
    return 1 if worse else 0
