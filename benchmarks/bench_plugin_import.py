"""What loading the pytest plugin costs at every pytest start: the median wall time (of
fresh interpreters) to import ``pytest_kreplica``, ``pytest_kreplica.plugin`` and everything
its hooks import while pytest configures, and how many of the package's modules that loads.
Heavy libraries (pyspark, kafka, docker, matplotlib, pyarrow) must stay at 0.

    python benchmarks/bench_plugin_import.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

HEAVY = ("pyspark", "kafka", "docker", "matplotlib", "pyarrow", "pandas")

PROBE = """
import json, sys, time
t0 = time.perf_counter()
import pytest
t1 = time.perf_counter()
import {target}
t2 = time.perf_counter()
mods = [m for m in sys.modules if m.startswith("pytest_kreplica")]
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))
print(json.dumps({{"pytest_s": t1 - t0, "target_s": t2 - t1, "modules": len(mods),
                   "heavy": heavy}}))
"""

TARGETS = {
    "pytest_kreplica": "pytest_kreplica",
    "plugin": "pytest_kreplica.plugin",
    # what the hooks load by the end of pytest_configure (matrix, failures, first run)
    "plugin+configure": "pytest_kreplica.plugin, pytest_kreplica.matrix, "
                        "pytest_kreplica.plugin.failures, pytest_kreplica.plugin.firstrun, "
                        "pytest_kreplica.plugin.hookspecs",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"{'import':<20} {'median ms':>10} {'min ms':>8} {'modules':>8}  heavy")
    pytest_ms: list[float] = []
    for label, target in TARGETS.items():
        code = PROBE.format(target=target, heavy=HEAVY)
        rows = [json.loads(subprocess.run([sys.executable, "-c", code], check=True,
                                          capture_output=True, text=True).stdout)
                for _ in range(args.runs)]
        times = [r["target_s"] * 1000 for r in rows]
        pytest_ms += [r["pytest_s"] * 1000 for r in rows]
        print(f"{label:<20} {statistics.median(times):>10.1f} {min(times):>8.1f} "
              f"{rows[0]['modules']:>8}  {','.join(rows[0]['heavy']) or '-'}")
    # the baseline, measured in the same interpreters: what importing pytest itself costs
    print(f"{'pytest':<20} {statistics.median(pytest_ms):>10.1f} {min(pytest_ms):>8.1f}")


if __name__ == "__main__":
    main()
