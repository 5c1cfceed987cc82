"""``kreplica check`` as a user runs it: a real subprocess, real Spark, exit codes 0 / 1 / 2,
one-line errors and no traceback or Spark noise on the terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "histories"
TIMEOUT = 600  # a JVM start on a loaded 2-core machine


def kreplica(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(FIXTURES.parents[1]), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "pytest_kreplica.cli", *args],
                          capture_output=True, text=True, timeout=TIMEOUT, env=env)


def noise(stderr: str) -> list[str]:
    """Stderr lines other than the shared Spark Connect server's own progress lines (in
    Connect mode the command may start that server, or wait while another process does)."""
    return [ln for ln in stderr.splitlines()
            if not (ln.startswith("kreplica: ") and "Spark Connect server" in ln)]


def test_valid_run_exits_0_with_a_summary_and_a_quiet_stderr():
    done = kreplica("check", str(FIXTURES / "clean"))
    assert done.returncode == 0, done.stderr
    assert "VALID (at-least-once)" in done.stdout
    assert "sent 40  acked 40" in done.stdout
    assert noise(done.stderr) == []


def test_invalid_run_exits_1_with_the_json_shape():
    done = kreplica("check", str(FIXTURES / "lost"), "--json")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert set(doc) == {"valid", "semantics", "counts", "examples", "passed", "reason",
                        "tradeoff", "availability"}
    assert doc["passed"] is False and doc["reason"].startswith("history invalid")
    assert doc["availability"]["judged"] is False  # no fault, no max_unavailable_s
    assert doc["valid"] is False and doc["semantics"] == "at-least-once"
    assert doc["counts"]["lost"] == 2 and doc["counts"]["indeterminate"] == 1
    assert [e["id"] for e in doc["examples"]["lost"]] == ["m6", "m7"]
    assert noise(done.stderr) == []


def test_semantics_option_overrides_run_json():
    done = kreplica("check", str(FIXTURES / "lost"), "--semantics", "at-most-once", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["semantics"] == "at-most-once"


def test_malformed_line_exits_2_with_one_line(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("sends", "polls"):
        text = (FIXTURES / "clean" / f"{name}.jsonl").read_text()
        (run / f"{name}.jsonl").write_text(text)
    with open(run / "polls.jsonl", "a") as f:
        f.write('{"process": 2, "poll": 99, "topic": "t", "partition": 0, "offset": 1,,}\n')
    lines = (run / "polls.jsonl").read_text().count("\n")
    done = kreplica("check", str(run))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"polls.jsonl:{lines}: not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr


def test_unreadable_directory_exits_2_before_spark(tmp_path):
    target = tmp_path / "nowhere"
    done = kreplica("check", str(target), "--semantics", "exactly-once")
    assert done.returncode == 2
    assert done.stderr == f"kreplica check: {target}: no such run directory\n"
