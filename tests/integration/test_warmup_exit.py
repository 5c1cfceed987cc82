"""A run that ends while the background Spark warm-up is still verifying its tiny snapshot
(a case that failed before any validation, a deselected rest): the process stops the
session under it, and that is no failure to report. A real driver JVM, a real exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import atexit, logging, sys, threading
# registered before the package's own exit hooks, so it runs after them (last in, first out):
# the warm-up thread gets to fail, and to log or not, before the interpreter goes
atexit.register(lambda: thread.join(120))
from pytest_kreplica.validation import warmup
logging.basicConfig(level=logging.WARNING)
if sys.argv[1] == "unfixed":
    warmup._process_ending = lambda: False
verifying = threading.Event()
write = warmup.write_tiny_snapshot
def write_and_tell(run_dir):
    write(run_dir)
    verifying.set()
warmup.write_tiny_snapshot = write_and_tell
thread = warmup.start("local[2]")
assert verifying.wait(300), "the warm-up never reached its snapshot"
print("exiting while the warm-up verifies", flush=True)
"""


def run_child(tmp_path: Path, mode: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, KREPLICA_CACHE=str(tmp_path / "cache"), KREPLICA_SPARK_CDS="0",
               PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True,
                          timeout=600, env=env)


def test_a_warm_up_cut_short_by_the_exit_is_not_reported(tmp_path):
    done = run_child(tmp_path, "fixed")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exiting while the warm-up verifies" in done.stdout
    assert "warming Spark up in the background failed" not in done.stderr, done.stderr[-2000:]


def test_the_same_exit_is_reported_when_not_taken_for_one(tmp_path):
    """The same child with the exit test taken out: proves the scenario above really
    stops the session under a running warm-up (the first test cannot pass vacuously)."""
    done = run_child(tmp_path, "unfixed")
    assert "warming Spark up in the background failed" in done.stderr, done.stderr[-2000:]
