"""A soak cut short still gets its verdict: a duration-bounded case (300 s of leader kills)
run by pytest in a project of its own gets SIGINT once its first fault has struck; it ends
its workload and faults, drains, checks and reports what it wrote, says so in verdict.json,
and pytest ends as interrupted (exit status 2) long before the duration. Its sends and
polls are rolled into Parquet parts, as every duration-bounded case's are."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from pytest_kreplica.waits import wait_for
from tests import doc_commands

ROOT = Path(__file__).resolve().parents[2]
DURATION_S = 300
MATRIX = f"""\
description: a soak to cut short
scenario: replication
dimensions:
  partitions: [1]
  replication_factor: [3]
  min_insync_replicas: [2]
  acks: [-1]
  producer_mode: [async]
  failure: [hard]
  target: [leader]
  downtime: [2]
  duration: [{DURATION_S}]
  messages: [200]
"""


def struck(output: Path) -> str | None:
    """None once a fault has struck in the case's history."""
    for events in output.glob("*/events.jsonl"):
        if any(json.loads(line).get("kind") == "kill" for line in events.read_text().splitlines()
               if line.strip()):
            return None
    return "no kill event yet"


def test_a_soak_cut_short_by_sigint_is_checked_and_reported(tmp_path):
    project, output = tmp_path / "project", tmp_path / "out"
    (project / "matrices").mkdir(parents=True)
    (project / "matrices" / "cut-soak.yaml").write_text(MATRIX)
    log = (tmp_path / "pytest.log").open("w")
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--pyargs", "pytest_kreplica.plan", "-m", "cut_soak",
         "-p", "no:xdist", "-p", "no:cacheprovider", "--kreplica-output", str(output),
         "--kreplica-results=", "-q", f"--basetemp={tmp_path / 'basetemp'}"],
        cwd=project, stdout=log, stderr=subprocess.STDOUT, text=True,
        env=doc_commands.clean_env(PYTHONPATH=str(ROOT)))
    try:
        wait_for(lambda: struck(output), timeout=240, what="the soak's first leader kill",
                 hint=f"pytest output: {tmp_path / 'pytest.log'}")
        child.send_signal(signal.SIGINT)
        status = child.wait(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        log.close()
    out = (tmp_path / "pytest.log").read_text()
    assert status == 2, out[-4000:]  # pytest's "interrupted"
    assert time.monotonic() - started < DURATION_S, "the soak ran its whole duration"
    assert "cut short by SIGINT" in out and "1 passed" in out, out[-4000:]
    (run_dir,) = output.glob("cut-soak-*/")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["passed"] is True, verdict.get("reason")
    assert verdict["interrupted"]["signal"] == "SIGINT"
    assert 0 < verdict["interrupted"]["after_s"] < DURATION_S
    assert verdict["counts"]["acked"] >= 200  # what it wrote was checked
    assert verdict["faults"] and (run_dir / "report.html").is_file()
    # a soak's sends and polls are rolled into Parquet parts (docs/history.md), all complete
    for name in ("sends", "polls"):
        assert not (run_dir / f"{name}.jsonl").exists()
        parts = sorted(p.name for p in (run_dir / f"{name}.parquet").iterdir())
        assert parts and all(p.startswith("part-") and p.endswith(".parquet") for p in parts)
