"""Benchmark: a one-off `kreplica check` against the machine's warm Spark Connect server
(``--spark-master connect``), as a user types it with no option (the default ``auto``, which
joins that server while it runs), and in a fresh in-process driver JVM (``local[2]``, what
``auto`` falls back to), on the same small history; then two pytest-xdist workers (``-n 2``)
that validate through ``connect`` and print the Spark application they ran in (one id for
both).

    python benchmarks/bench_spark_connect.py --repeat 3
    python benchmarks/bench_spark_connect.py --repeat 3 --history RUN_DIR --no-workers

Each check is a fresh `kreplica check` process as a user runs it, the kinds alternating so
machine noise hits all alike; medians and the ratios are printed. ``connect`` has the server's
driver run a small history's check (``validation/served.py``); ``connect, own session`` is the
same command with ``KREPLICA_SPARK_SERVED=0``, which opens its own Connect session and sends
the queries itself (the way before served checks). The first ``connect`` call (untimed,
reported on its own) starts the server if none is warm; ``--warmup`` more untimed checks let
its JIT compile first (a freshly started server's checks get faster for a dozen or so).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTORIES = ROOT / "fixtures" / "histories"
WORKER_TEST = '''
import os
from pytest_kreplica.validation.checker import check
from pytest_kreplica.validation.engine.spark import get_spark


def test_worker_{n}():
    verdict = check(r"{history}", spark_master="connect")
    assert verdict.counts["lost"] == 2
    app = get_spark("connect").conf.get("spark.app.id")
    with open(r"{out}", "a") as out:  # xdist workers' stdout does not reach the terminal
        out.write(f"worker {{os.environ.get('PYTEST_XDIST_WORKER')}} pid {{os.getpid()}} "
                  f"spark application {{app}}" + chr(10))
'''


DEFAULT = "(no option)"
OWN_SESSION = "connect, own session"


def run_check(master: str, history: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT), KREPLICA_SPARK_SERVED="1")
    env.pop("KREPLICA_SPARK_MASTER", None)
    if master == OWN_SESSION:
        master, env["KREPLICA_SPARK_SERVED"] = "connect", "0"
    option = [] if master == DEFAULT else ["--spark-master", master]
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest_kreplica.cli", "check", str(history),
                           *option], env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    took = time.monotonic() - began
    if done.returncode not in (0, 1):
        raise SystemExit(f"kreplica check {' '.join(option)}: exit {done.returncode}\n"
                         f"{done.stderr[-2000:]}")
    if master == DEFAULT and "running Spark Connect server" not in done.stderr:
        raise SystemExit(f"kreplica check with no option did not join the warm server: "
                         f"{done.stderr[-2000:]}")
    return took


def two_workers(history: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2):
            Path(tmp, f"test_w{n}.py").write_text(
                WORKER_TEST.format(n=n, history=history, out=Path(tmp, "apps.txt")))
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-s", "-q",
                               "-p", "no:cacheprovider", "-p", "no:kreplica", tmp],
                              env=env, capture_output=True, text=True, timeout=900, check=False,
                              cwd=tmp)
        took = time.monotonic() - began
        apps_file = Path(tmp, "apps.txt")
        lines = apps_file.read_text().splitlines() if apps_file.exists() else []
    for ln in lines:
        print(f"  {ln.strip()}")
    apps = {ln.rsplit(" ", 1)[-1] for ln in lines}
    verdict = "one shared application" if len(lines) == 2 and len(apps) == 1 else "NOT SHARED"
    print(f"two -n 2 workers: {verdict}, pytest exit {done.returncode}, {took:.1f} s")
    if done.returncode != 0:
        print(done.stdout[-3000:])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--history", type=Path, default=HISTORIES / "lost")
    p.add_argument("--no-workers", action="store_true",
                   help="skip the two -n 2 workers (their test expects the default history)")
    p.add_argument("--warmup", type=int, default=3,
                   help="untimed connect checks after the first (the server's JIT warms)")
    p.add_argument("--no-local", action="store_true", help="skip the fresh in-process JVM")
    args = p.parse_args()
    first = run_check("connect", args.history)
    print(f"first connect check (starts the server if none is warm): {first:.1f} s")
    for _ in range(args.warmup):
        run_check("connect", args.history)
    kinds = ["connect", OWN_SESSION, DEFAULT] + ([] if args.no_local else ["local[2]"])
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for r in range(args.repeat):
        for master in kinds if r % 2 == 0 else kinds[::-1]:
            times[master].append(run_check(master, args.history))
    med = {m: statistics.median(t) for m, t in times.items()}
    for m, t in times.items():
        shown = m if m in (DEFAULT, OWN_SESSION) else "--spark-master " + m
        print(f"kreplica check {shown:28s} median {med[m]:6.2f} s  "
              f"runs {' '.join(f'{x:.2f}' for x in t)}")
    ratios = [f"connect / own session: {med['connect'] / med[OWN_SESSION]:.2f}"]
    if "local[2]" in med:
        ratios += [f"connect / local[2]: {med['connect'] / med['local[2]']:.2f}",
                   f"no option / local[2]: {med[DEFAULT] / med['local[2]']:.2f}"]
    print(f"ratio {', '.join(ratios)} (history {args.history.name}, {args.repeat} runs each)")
    if not args.no_workers:
        two_workers(args.history)
    return 0


if __name__ == "__main__":
    sys.exit(main())
