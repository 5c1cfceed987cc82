"""The results store from real runs: the shortest smoke case three times against a real cluster
with Spark's checks, one row per repeat, then once more; ``kreplica results`` prints its figures
from the store and ``kreplica compare`` the two runs (several cases per run and per store:
tests/unit/test_results_cli.py). One pytest process (``-p no:xdist``) so the store's rows come
from the real plugin path, not a planted one."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests import doc_commands

ROOT = Path(__file__).resolve().parents[2]
CASES = ("smoke-p1-none-acks-1-sync",)


def pytest_run(out: Path, store: Path, repeat: int) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "pytest", "tests/system/test_replication.py", "-m", "smoke",
            "-k", " or ".join(CASES), "--kreplica-repeat", str(repeat), "-p", "no:xdist",
            "-p", "no:cacheprovider", "--kreplica-output", str(out), "--kreplica-results",
            str(store), "-q", f"--basetemp={out.parent / (out.name + '-basetemp')}"]
    return subprocess.run(args, cwd=ROOT, text=True, capture_output=True, timeout=1500,
                          env=doc_commands.clean_env(PYTHONPATH=str(ROOT)))


def kreplica(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_kreplica.cli", *argv], cwd=ROOT,
                          text=True, capture_output=True, timeout=300,
                          env=doc_commands.clean_env(PYTHONPATH=str(ROOT)))


def test_repeats_are_rows_and_the_commands_read_them(tmp_path):
    store = tmp_path / "results.sqlite"
    first = pytest_run(tmp_path / "runs-1", store, 3)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert "3 passed" in first.stdout, first.stdout[-2000:]
    conn = sqlite3.connect(store)
    rows = conn.execute("SELECT case_id, repeat, outcome, seed, kafka_version, backend, "
                        "duration_s, verdict_json, run_id, run_dir FROM results").fetchall()
    assert len(rows) == 3, rows
    assert sorted((r[0], r[1]) for r in rows) == sorted((c, i) for c in CASES
                                                        for i in (1, 2, 3))
    assert {r[2] for r in rows} == {"passed"} and len({r[3] for r in rows}) == 3
    assert all(r[4] and r[5] == "process" and r[6] > 0 and r[7] for r in rows), rows
    assert all(Path(r[9]).name.startswith(r[0] + "-r") for r in rows)
    second = pytest_run(tmp_path / "runs-2", store, 1)
    assert second.returncode == 0, second.stdout[-4000:]
    run_a, run_b = [r[0] for r in conn.execute(
        "SELECT run_id FROM results GROUP BY run_id ORDER BY min(id)")]

    shown = kreplica("results", "--store", str(store))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split()[:4] == ["case", "runs", "pass", "flake"]
    for case in CASES:
        line = next(x for x in lines if x.startswith(case + " "))
        assert line.split()[1:4] == ["4", "100%", "0%"], line
        assert "s (" in line and "last" in line  # the duration trend, from real figures

    compared = kreplica("compare", run_a, run_b, "--store", str(store))
    assert compared.returncode == 0, compared.stdout + compared.stderr
    out = compared.stdout.splitlines()
    assert out[0] == f"run {run_a} -> run {run_b}: 1 case(s) in both"
    assert all(x.split(":")[0] in CASES and "spread" in x for x in out[1:]) or out[1:] == [
        "no verdict changed, no figure moved beyond its spread"], out
    assert not any("verdict" in x for x in out[1:] if x.startswith(CASES)), out
    assert os.path.getsize(store) > 0
