"""Run the benchmarks and write docs/benchmarks.md's one table.

    python -m benchmarks                      # every figure of the default set
    python -m benchmarks --only plugin-import cluster
    python -m benchmarks --only flakes        # the ci cases 5 x per load: hours, never default
    python -m benchmarks --only soak          # 2 hours at the production shape, never default
    python -m benchmarks --only soak-20m      # the same for 20 minutes
    python -m benchmarks --list

Each figure runs one script of this folder as a fresh process (the script prints its own
figures, with a baseline measured in the same run), and this runner reads the result and the
baseline off its output. The table in docs/benchmarks.md is replaced: rows of the figures run
now carry this run's date, cores and load average; with ``--only``, the rows of the other
figures are kept as the earlier run wrote them (their own date), and a figure whose script
failed keeps its earlier row too, so the table never shows a figure that was not measured.
The machine may be shared: every row names the load average before and after its script.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- table: written by python -m benchmarks; do not edit by hand -->"
END = "<!-- end of table -->"
COLUMNS = ("figure", "command", "result", "baseline (same run)", "ratio", "date (UTC)",
           "cores", "load before → after")


@dataclass(frozen=True)
class Row:
    figure: str
    result: str
    baseline: str
    ratio: str


@dataclass(frozen=True)
class Figure:
    name: str
    args: tuple[str, ...]
    parse: Callable[[str], list[Row]]
    timeout_s: int = 600
    default: bool = True  # False: run only when named with --only (it takes hours)

    @property
    def command(self) -> str:
        return "python " + " ".join(self.args)


class NoFigure(Exception):
    """A script's output lacks a figure this runner reads."""


def find(pattern: str, text: str) -> re.Match[str]:
    found = re.search(pattern, text, re.M)
    if not found:
        raise NoFigure(f"no line matching {pattern!r}")
    return found


def ratio(result: float, baseline: float) -> str:
    return f"{result / baseline:.2f}" if baseline else "—"


def parse_plugin_import(out: str) -> list[Row]:
    plugin = find(r"^plugin\+configure\s+([\d.]+)\s+[\d.]+\s+(\d+)\s+(\S+)", out)
    pytest = find(r"^pytest\s+([\d.]+)", out)
    ms, base = float(plugin[1]), float(pytest[1])
    heavy = "none of the heavy libraries" if plugin[3] == "-" else f"heavy: {plugin[3]}"
    return [Row("plugin import with its configure-time modules (median of fresh interpreters)",
                f"{ms:.0f} ms, {plugin[2]} modules, {heavy}",
                f"`import pytest` {base:.0f} ms", ratio(ms, base))]


def seconds(name: str, out: str) -> float:
    return float(find(re.escape(name) + r"\s+median\s+([\d.]+) s", out)[1])


def parse_cluster(out: str) -> list[Row]:
    start = seconds("cold start to ready, class-data archive", out)
    plain = seconds("cold start to ready, no archive (baseline)", out)
    rows = [Row("3-node process cluster, cold start to ready (median)", f"{start:.2f} s",
                f"{plain:.2f} s without the class-data archive", ratio(start, plain))]
    tuned = seconds("failover leader SIGKILL -> new leader, tuned", out)
    try:
        default = seconds("failover, Kafka defaults (baseline)", out)
    except NoFigure:
        return rows
    rows.append(Row("leader SIGKILL to a new leader in metadata (median)", f"{tuned:.2f} s",
                    f"{default:.2f} s with Kafka's default settings", ratio(tuned, default)))
    return rows


def parse_checker(out: str) -> list[Row]:
    def row(label: str) -> re.Match[str]:
        cells = r" \| ([\d.]+) \| \d+ \| (\d+) \|"
        return find(r"^\| ([\d,]+) \| " + re.escape(label) + cells, out)
    spark, python = row("spark-parquet"), row("python-parquet")
    n = spark[1]
    return [Row(f"one-off `kreplica check` of {n} sends + {n} polls (Parquet, fresh process, "
                "JVM start included)", f"{float(spark[2]):.1f} s, {spark[3]} MiB peak",
                f"{float(python[2]):.1f} s, {python[3]} MiB peak: the plain-Python checker",
                ratio(float(spark[2]), float(python[2])))]


def parse_rolled_check(out: str) -> list[Row]:
    m = find(r"^rolled (\d+): check ([\d.]+) s \((\d+) MiB\), read ([\d.]+) s \((\d+) MiB\), "
             r"count ([\d.]+) s, ratio [\d.]+, (\d+) parts", out)
    n = f"{int(m[1]):,}"
    return [Row(f"one-off `kreplica check` of {n} sends + {n} polls rolled into {m[7]} Parquet "
                "parts, with planted anomalies (fresh process, JVM start included)",
                f"{float(m[2]):.1f} s, {m[3]} MiB peak",
                f"{float(m[4]):.1f} s, {m[5]} MiB peak: a plain Spark read of the same parts "
                f"(every column's values counted; a bare count {float(m[6]):.1f} s)",
                ratio(float(m[2]), float(m[4])))]


def parse_spark_connect(out: str) -> list[Row]:
    def med(shown: str) -> float:
        line = r"^kreplica check " + re.escape(shown) + r"\s+median\s+([\d.]+) s"
        return float(find(line, out)[1])
    joined, local = med("(no option)"), med("--spark-master local[2]")
    return [Row("one-off `kreplica check` of a small history, no option, a warm shared Spark "
                "Connect server running (median)", f"{joined:.2f} s",
                f"{local:.2f} s in a fresh local driver JVM", ratio(joined, local))]


def parse_verify_logs(out: str) -> list[Row]:
    line = find(r"^(mixed|large|1-record)\s+([\d.]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)", out)
    sha, ver = float(line[4]), float(line[5])
    return [Row(f"`verify_logs` throughput, {line[2]} GiB of 3 replicas ({line[1]} set, "
                f"{line[3]} batches, warm session)", f"{ver:.0f} MB/s",
                f"{sha:.0f} MB/s: `sha256sum` over the same files", f"{ver / sha:.2f}")]


def parse_smoke_overhead(out: str) -> list[Row]:
    over = float(find(r"^\s+overhead\s+([\d.]+)", out)[1])
    total = float(find(r"^\s+total\s+([\d.]+)", out)[1])
    return [Row("per-case overhead of a tiny case on a reused cluster (median; target ≤ 2 s)",
                f"{over:.2f} s", f"{total:.2f} s: the whole case", ratio(over, total))]


FLAKES = re.compile(r"^flakes (\w+): (\d+) runs, (\d+) tests, (\d+) flaky, (\d+) harness "
                    r"errors, (\d+) errors, (\d+) failures", re.M)


def parse_flakes(out: str) -> list[Row]:
    loads = {m[1]: m for m in FLAKES.finditer(out)}
    if not loads:
        raise NoFigure("no 'flakes <load>: ...' line")

    def said(m: re.Match[str]) -> str:
        return (f"{m[4]} flaky of {m[3]} tests, {m[5]} harness errors, {m[6]} errors, "
                f"{m[7]} failures ({m[2]} runs)")
    rows = []
    own = loads.get("own")
    for load, m in loads.items():
        label = ("the `ci` cases, each run's outcomes per test"
                 + (" under a CPU hog per core" if load == "hog" else " at the machine's load"))
        baseline = said(own) + " at the machine's load" if load != "own" and own else "—"
        rows.append(Row(label, said(m), baseline,
                        ratio(float(m[4]), float(own[4])) if load != "own" and own else "—"))
    return rows


def parse_shape(out: str) -> list[Row]:
    head = find(r"^shape (\d+)x(\d+) rf 3 on (\d+) brokers \((\d+) replicas, (\d+) per "
                r"broker\), heap (\d+) MB", out)

    def pair(key: str) -> tuple[float, float]:
        m = find(r"^\s+" + key + r"\s+([\d.]+)\s+baseline\s+([\d.]+)", out)
        return float(m[1]), float(m[2])
    (heap, heap0), (rss, rss0) = pair("max_heap_mb"), pair("max_rss_mb")
    (idle, idle0), (create, _) = pair("idle_cores"), pair("create_s")
    (fds, _), (maps, _) = pair("max_fds"), pair("max_mmaps")
    shape = f"{head[1]} topics x {head[2]} partitions, rf 3, on {head[3]} brokers"
    return [
        Row(f"the plan's production shape ({shape}: {int(head[5]):,} replicas a broker, heap "
            f"{head[6]} MB), per broker: live heap after a full GC, resident memory",
            f"{heap:.0f} MB live, {rss:.0f} MB resident; {fds:.0f} open files, {maps:.0f} "
            f"memory maps; topics created in {create:.0f} s",
            f"{heap0:.0f} MB live, {rss0:.0f} MB resident: the same brokers with 10 x 10 "
            "partitions", ratio(heap, heap0)),
        Row(f"the plan's production shape ({shape}), idle: cores its brokers keep busy",
            f"{idle:.2f} cores", f"{idle0:.2f} cores with 10 x 10 partitions",
            ratio(idle, idle0)),
    ]


def parse_soak(out: str) -> list[Row]:
    run = find(r"^soak (\d+) s: exit \d+, wall (\d+) s, peak ([\d.]+) GiB", out)
    verdict = find(r"^soak verdict: (.+)$", out)[1]
    pair = find(r"^soak history: check ([\d.]+) s \((\d+) MiB\), read ([\d.]+) s "
                r"\((\d+) MiB\)", out)
    check, read = float(pair[1]), float(pair[3])
    minutes = int(run[1]) // 60
    return [
        Row(f"a {minutes}-minute soak at the plan's production shape (`--kreplica-matrix "
            "production`: 8 brokers, 1000 topics x 10 partitions, rf 3, mirrored by "
            "MirrorMaker 2, composed random faults): verdict, counts, peak memory of the "
            "whole process tree",
            f"{verdict}; wall {int(run[2]) / 60:.0f} min, peak {run[3]} GiB", "—", "—"),
        Row("one-off `kreplica check` of that soak's own history (target ≤ 2; fresh "
            "process, JVM start included)", f"{check:.1f} s, {pair[2]} MiB peak",
            f"{read:.1f} s, {pair[4]} MiB peak: a plain Spark read of the same run "
            "directory (every column's values counted)", ratio(check, read)),
    ]


FIGURES = (
    Figure("plugin-import", ("benchmarks/bench_plugin_import.py", "--runs", "5"),
           parse_plugin_import, 120),
    Figure("cluster", ("benchmarks/bench_cluster.py", "--runs", "2"), parse_cluster, 900),
    Figure("smoke-overhead", ("benchmarks/bench_smoke.py", "overhead", "--runs", "3"),
           parse_smoke_overhead, 600),
    Figure("spark-connect", ("benchmarks/bench_spark_connect.py", "--repeat", "3",
                             "--no-workers", "--warmup", "2"), parse_spark_connect, 600),
    Figure("checker", ("benchmarks/bench_checker.py", "--sizes", "1000000", "--repeat", "1",
                       "--formats", "parquet"), parse_checker, 900),
    Figure("rolled-check", ("benchmarks/bench_rolled_check.py", "--sizes", "1000000",
                            "--repeat", "1"), parse_rolled_check, 900),
    Figure("verify-logs", ("benchmarks/bench_verify_logs.py", "--sets", "mixed", "--gib",
                           "0.25", "--runs", "1"), parse_verify_logs, 900),
    Figure("flakes", ("benchmarks/bench_flakes.py", "--repeat", "5"), parse_flakes,
           12 * 3600, default=False),
    Figure("shape", ("benchmarks/bench_shape.py", "--heap-mb", "512"), parse_shape, 1800,
           default=False),
    Figure("soak-20m", ("benchmarks/bench_soak.py", "--duration", "1200"), parse_soak,
           2 * 3600, default=False),
    Figure("soak", ("benchmarks/bench_soak.py", "--duration", "7200"), parse_soak,
           4 * 3600, default=False),
)


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def run_streamed(cmd: list[str], timeout_s: float) -> tuple[int, str]:
    """Run a script with its output (stderr merged) shown as it comes, indented, since some
    take hours; its exit status and the whole output. Killed once ``timeout_s`` is over."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    lines = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            print(f"  | {line}", end="", flush=True)
        returncode = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return returncode, "".join(lines)


def measure(figure: Figure, date: str) -> list[list[str]]:
    """Run one figure's script; its rows, or an exception saying why there are none."""
    before = load()
    started = time.monotonic()
    print(f"{figure.name}: {figure.command} …", flush=True)
    returncode, out = run_streamed([sys.executable, *figure.args], figure.timeout_s)
    took = time.monotonic() - started
    if returncode:
        tail = out.strip().splitlines()[-1:] or ["(no output)"]
        raise NoFigure(f"exit {returncode} after {took:.0f} s: {tail[0]}")
    rows = figure.parse(out)
    print(f"{figure.name}: {took:.0f} s, " + "; ".join(r.result for r in rows), flush=True)
    machine = (str(os.cpu_count()), f"{before} → {load()}")
    return [[r.figure, f"`{figure.command}`", r.result, r.baseline, r.ratio, date, *machine]
            for r in rows]


def read_table(text: str) -> dict[str, list[list[str]]]:
    """The rows of the page's table, by the command that wrote them."""
    if BEGIN not in text:
        return {}
    body = text.split(BEGIN, 1)[1].split(END, 1)[0]
    rows: dict[str, list[list[str]]] = {}
    for line in body.strip().splitlines()[2:]:  # below the header and its rule
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == len(COLUMNS):
            rows.setdefault(cells[1], []).append(cells)
    return rows


def render(rows: list[list[str]], date: str, ran: list[str]) -> str:
    lines = [BEGIN, "| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    lines.append(END)
    return (f"Last run {date} UTC on {os.cpu_count()} cores, figures "
            f"{', '.join(ran) or 'none'}; a row with another date was kept from an earlier "
            f"run.\n\n" + "\n".join(lines) + "\n")


def write_page(table: str) -> None:
    text = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    head = text.split("\n## Figures\n", 1)[0].rstrip() if text else "# Benchmarks"
    PAGE.write_text(f"{head}\n\n## Figures\n\n{table}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    names = [f.name for f in FIGURES]
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=names,
                        help=f"run these figures only ({', '.join(names)})")
    parser.add_argument("--list", action="store_true", help="list the figures and exit")
    args = parser.parse_args(argv)
    if args.list:
        for f in FIGURES:
            print(f"{f.name:<16} {f.command}" + ("" if f.default else "  (only with --only)"))
        return 0
    chosen = args.only or [f.name for f in FIGURES if f.default]
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")
    old = read_table(PAGE.read_text(encoding="utf-8")) if PAGE.exists() else {}
    rows: list[list[str]] = []
    ran, failed = [], []
    for figure in FIGURES:
        key = f"`{figure.command}`"
        if figure.name not in chosen:
            rows += old.get(key, [])
            continue
        try:
            rows += measure(figure, date)
            ran.append(figure.name)
        except (NoFigure, subprocess.TimeoutExpired) as problem:
            print(f"{figure.name}: no figure ({problem}); its earlier row, if any, is kept",
                  file=sys.stderr)
            rows += old.get(key, [])
            failed.append(figure.name)
    write_page(render(rows, date, ran))
    print(f"wrote {PAGE.relative_to(ROOT)}: {len(rows)} rows")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
