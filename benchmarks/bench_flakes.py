"""Flaky tests: the `ci` matrix cases (and, with ``--integration``, the integration tests)
run N times at the machine's own load and under a planted one, counted per test.

    python benchmarks/bench_flakes.py [--repeat 5] [--load own hog] [--integration]
    python benchmarks/bench_flakes.py --quick      # one run of two ci cases per load

Each run is ``pytest tests/system -m ci -n 2 --junitxml=...`` (``pytest tests/integration
-n 2`` too with ``--integration``) in a fresh process with its own basetemp; its junit xml is
read per test: passed, failed, error, xfailed, skipped, and which errors were harness errors
(a ``HarnessError`` of pytest_kreplica.errors, or a case whose recorded verdict is
``harness``). ``--load hog`` runs one CPU-bound process per core beside the tests; the hogs
are killed when the load ends, on Ctrl-C too, and each one exits by itself once this script
is gone. A test with more than one outcome over the runs of one load is flaky. The last lines
(``flakes <load>: ...``) are what ``python -m benchmarks --only flakes`` reads.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

ROOT = Path(__file__).resolve().parents[1]

OUTCOMES = ("passed", "failed", "error", "xfailed", "skipped")  # one per test and run
HARNESS = "harness"  # counted beside them: the errors that were harness errors
RUN = "run:"  # the key prefix of one run's outcome of a test as a whole (``add_run``)
LOADS = ("own", "hog")
CI = ("tests/system", "-m", "ci")
INTEGRATION = ("tests/integration",)
QUICK_CASES = "leader-election-p1-rf3-hard or follower-failure-p5-none-acks-1-async-soft-x1"
RUN_TIMEOUT_S = 4 * 3600
HARNESS_ERROR = re.compile(r"pytest_kreplica\.errors\.(Harness|Cluster|Node|Check)Error"
                           r"|harness error in case ")
RESULT_PROPERTY = "kreplica_result"  # the case's summary row (plugin.kreplica_record)
# a hog burns one core and leaves once its parent (this script) is gone, even a SIGKILLed one
HOG = ("import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n"
       "    for _ in range(200000):\n        pass\n")


def junit_outcomes(xml: str | Path) -> dict[str, Counter[str]]:
    """Per test (``classname::name``) of one junit xml: the outcomes of its reports (a test
    that failed and whose teardown errored has both) and ``harness`` for a harness error."""
    root = ElementTree.parse(xml).getroot()
    out: dict[str, Counter[str]] = {}
    for case in root.iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        seen = out.setdefault(test, Counter())
        children = [c for c in case if c.tag in ("failure", "error", "skipped")]
        for child in children:
            if child.tag == "failure":
                seen["failed"] += 1
            elif child.tag == "error":
                seen["error"] += 1
                if _harness(case, child):
                    seen[HARNESS] += 1
            else:
                seen["xfailed" if child.get("type") == "pytest.xfail" else "skipped"] += 1
        if not children:
            seen["passed"] += 1
    return out


def junit_reasons(xml: str | Path) -> dict[str, str]:
    """Per test that failed or errored in one junit xml: the first line of its message, so a
    flake is told by what went wrong, not only counted."""
    reasons = {}
    for case in ElementTree.parse(xml).getroot().iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                text = (child.get("message") or child.text or "").strip().splitlines()
                reasons.setdefault(f"{case.get('classname')}::{case.get('name')}",
                                   f"{child.tag}: {text[0][:300] if text else '(none)'}")
    return reasons


def _harness(case: ElementTree.Element, error: ElementTree.Element) -> bool:
    if HARNESS_ERROR.search(f"{error.get('message') or ''}\n{error.text or ''}"):
        return True
    for prop in case.iter("property"):
        if prop.get("name") == RESULT_PROPERTY:
            try:
                if json.loads(prop.get("value") or "{}").get("verdict") == HARNESS:
                    return True
            except ValueError:
                continue
    return False


def add_run(totals: dict[str, Counter[str]], run: dict[str, Counter[str]]) -> None:
    """Add one run's outcomes to ``totals`` (per test, summed over runs), with the run's
    outcome of the test as a whole (``RUN`` + e.g. ``error+failed``) for ``flaky``."""
    for test, seen in run.items():
        total = totals.setdefault(test, Counter())
        total.update(seen)
        total[RUN + "+".join(o for o in OUTCOMES if seen[o])] += 1


def flaky(totals: dict[str, Counter[str]]) -> list[str]:
    """Tests whose outcome was not the same in every run (a test that fails and errors in
    every run is not flaky; one that passed once and failed once is)."""
    return sorted(t for t, seen in totals.items()
                  if sum(1 for key in seen if key.startswith(RUN)) > 1)


def summary(load: str, runs: int, totals: dict[str, Counter[str]]) -> list[str]:
    """The per-test table of one load, then its totals and the ``flakes`` line."""
    width = max([len(t) for t in totals] + [4])
    head = f"{'test':<{width}}  " + "  ".join(f"{c:>8}" for c in (*OUTCOMES, HARNESS))
    lines = [f"load {load}: {runs} run(s)", head]
    for test in sorted(totals):
        seen = totals[test]
        lines.append(f"{test:<{width}}  " + "  ".join(f"{seen[c]:>8}"
                                                     for c in (*OUTCOMES, HARNESS)))
    total: Counter[str] = Counter()
    for seen in totals.values():
        total.update(seen)
    lines.append(f"{'total':<{width}}  " + "  ".join(f"{total[c]:>8}"
                                                    for c in (*OUTCOMES, HARNESS)))
    shaky = flaky(totals)
    lines += [f"  flaky: {t}" for t in shaky]
    lines.append(f"flakes {load}: {runs} runs, {len(totals)} tests, {len(shaky)} flaky, "
                 f"{total[HARNESS]} harness errors, {total['error']} errors, "
                 f"{total['failed']} failures, {total['xfailed']} xfailed")
    return lines


class Hog:
    """One CPU-bound process per core while the ``with`` block runs; killed at its end."""

    def __init__(self, cores: int | None = None):
        self.cores = cores or os.cpu_count() or 1
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Hog:
        for _ in range(self.cores):
            self.procs.append(subprocess.Popen([sys.executable, "-c", HOG, str(os.getpid())],
                                               stdin=subprocess.DEVNULL,
                                               start_new_session=True))  # no Ctrl-C of its own
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        for proc in self.procs:
            proc.wait(10)
        self.procs.clear()


def pytest_runs(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(name, pytest arguments) of one repetition."""
    quick = ["-k", QUICK_CASES] if args.quick else []
    runs = [("ci", [*CI, "-n", str(args.workers), *quick])]
    if args.integration:
        runs.append(("integration", [*INTEGRATION, "-n", str(args.workers)]))
    return runs


def run_pytest(pytest_args: list[str], work: Path
               ) -> tuple[dict[str, Counter[str]], dict[str, str], float]:
    """One pytest process; its outcomes per test, the reasons of its failures and errors, and
    its wall time. A run that wrote no junit xml (pytest could not start) is one line and
    exit 2, never a table of nothing."""
    xml = work / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", *pytest_args, f"--junitxml={xml}", "-q",
           "-p", "no:cacheprovider", f"--basetemp={work / 'tmp'}",
           f"--kreplica-output={work / 'runs'}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    took = time.monotonic() - started
    if not xml.exists():
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"bench_flakes: pytest {' '.join(pytest_args)} wrote no junit xml "
                         f"(exit {done.returncode}): {tail[0]}")
    return junit_outcomes(xml), junit_reasons(xml), took


def measure(args: argparse.Namespace) -> int:
    runs = pytest_runs(args)
    for load in args.load:
        totals: dict[str, Counter[str]] = {}
        walls: list[float] = []
        commands = "; ".join(shlex.join(["pytest", *a]) for _, a in runs)
        print(f"load {load}: {args.repeat} x {commands} (load average "
              f"{os.getloadavg()[0]:.1f})", flush=True)
        with Hog() if load == "hog" else contextlib.nullcontext():
            for i in range(1, args.repeat + 1):
                for name, pytest_args in runs:
                    work = Path(tempfile.mkdtemp(prefix=f"kreplica-flakes-{load}-"))
                    reasons: dict[str, str] = {}
                    try:
                        outcomes, reasons, took = run_pytest(pytest_args, work)
                    finally:
                        if not reasons:  # a run with failures keeps its run directories
                            shutil.rmtree(work, ignore_errors=True)
                    add_run(totals, outcomes)
                    walls.append(took)
                    print(f"  run {i} {name}: {took:.0f} s, {len(outcomes)} tests, "
                          f"load average {os.getloadavg()[0]:.1f}", flush=True)
                    for test, reason in sorted(reasons.items()):
                        print(f"    {test}: {reason}", flush=True)
                    if reasons:
                        print(f"    runs kept in {work / 'runs'}", flush=True)
        print("\n".join(summary(load, args.repeat, totals)))
        print(f"wall {load}: median {statistics.median(walls):.0f} s per pytest run", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per load (default 5)")
    parser.add_argument("--load", nargs="+", choices=LOADS, default=list(LOADS),
                        help="own: the machine's own load; hog: a CPU hog per core beside "
                             "the tests (default: both)")
    parser.add_argument("--integration", action="store_true",
                        help="also run tests/integration each time")
    parser.add_argument("--workers", type=int, default=2, help="pytest -n (default 2)")
    parser.add_argument("--quick", action="store_true",
                        help=f"one run of two ci cases per load (-k {QUICK_CASES!r})")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = 1
    if args.repeat < 1 or args.workers < 1:
        parser.error("--repeat and --workers must be at least 1")
    try:
        return measure(args)
    except KeyboardInterrupt:  # the hogs are gone already (Hog.__exit__)
        print("bench_flakes: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
