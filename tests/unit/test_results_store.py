"""The results store (``pytest_kreplica.results``): rows in and out, rows built from a run
directory's files, the figures over them, and two real writer processes at once (none of
their rows lost) and one SIGKILLed mid-stream (the store stays readable)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_kreplica.results import store
from pytest_kreplica.results.rows import build_row, unavailability
from pytest_kreplica.results.stats import moved, per_case, sparkline, trend, verdict_word
from pytest_kreplica.waits import wait_for

ROOT = Path(__file__).resolve().parents[2]
WRITER = textwrap.dedent("""
    import sys
    from pytest_kreplica.results import store
    path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    conn = store.connect(path)
    for i in range(count):
        store.append(conn, {"run_id": name, "case_id": f"case-{i % 7}", "outcome": "passed",
                            "seed": i, "parameters": {"i": i}, "duration_s": i / 10})
        if i == 0:
            print("first row written", flush=True)
""")


def row(case_id: str, outcome: str = "passed", run_id: str = "r1", **extra):
    return {"run_id": run_id, "case_id": case_id, "outcome": outcome,
            "params_key": extra.pop("params_key", "{}"), **extra}


def test_rows_round_trip_with_json_columns(tmp_path):
    conn = store.connect(tmp_path / "s.sqlite")
    first = store.append(conn, row("a", parameters={"acks": -1}, counts={"lost": 0},
                                   passed=True, verdict_json={"new_figure": 3}))
    store.append(conn, row("b", run_id="r2", kafka_version="4.1.1", ignored_key=1))
    got = store.rows(conn)
    assert [r["id"] for r in got] == [first, first + 1]
    assert got[0]["parameters"] == {"acks": -1} and got[0]["counts"] == {"lost": 0}
    assert got[0]["passed"] == 1 and got[0]["verdict_json"] == {"new_figure": 3}
    assert store.run_ids(conn) == ["r1", "r2"] and store.kafka_versions(conn) == ["4.1.1"]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_missing_or_foreign_file_is_one_line(tmp_path):
    for path, words in ((tmp_path / "none.sqlite", "no such results store"),
                        (tmp_path / "junk.sqlite", "not a results store")):
        if "junk" in path.name:
            path.write_text("not sqlite at all" * 100)
        try:
            store.open_existing(path)
        except store.InputError as exc:
            assert words in str(exc) and str(path) in str(exc) and "\n" not in str(exc)
        else:
            raise AssertionError(f"{path} opened")


def test_a_row_from_a_run_directory_keeps_every_figure(tmp_path):
    """verdict.json read generically: an unavailability figure found where it sits, a figure
    no column knows kept in verdict_json; run.json gives version, backend and image."""
    run_dir = tmp_path / "smoke-p1"
    run_dir.mkdir()
    verdict = {"case": "smoke-p1", "passed": False, "valid": False, "reason": "lost 3",
               "counts": {"lost": 3}, "election_s": [1.5, 2.5], "election_max_s": 2.5,
               "phases": {"produce": 4.0}, "duration_s": 9.0, "parameters": {"seed": 7,
                                                                              "acks": 1},
               "availability": {"produce_unavailable_s": 3.25, "consume_unavailable_s": 1.0},
               "figure_of_tomorrow": 42}
    (run_dir / "verdict.json").write_text(json.dumps(verdict))
    (run_dir / "run.json").write_text(json.dumps({
        "case_id": "smoke-p1", "matrix": "smoke", "start_time": 1000.0,
        "versions": {"kafka": "3.9.2"}, "cluster": {"backend": "docker", "image": "k:3.9.2"}}))
    got = build_row(run_id="r", run_dir=run_dir)
    assert got["case_id"] == "smoke-p1" and got["matrix"] == "smoke"
    assert (got["kafka_version"], got["backend"], got["build"]) == ("3.9.2", "docker", "k:3.9.2")
    assert got["outcome"] == "failed" and got["verdict"] == "invalid"
    assert got["reason"] == "lost 3" and got["seed"] == 7
    assert got["unavailability_s"] == 3.25 and got["elections"] == [1.5, 2.5]
    assert got["params_key"] == json.dumps({"acks": 1})
    assert got["start_time"] == 1000.0
    conn = store.connect(tmp_path / "s.sqlite")
    store.append(conn, got)
    assert store.rows(conn)[0]["verdict_json"]["figure_of_tomorrow"] == 42
    assert unavailability({"x": 1}) is None


def test_pass_and_flake_rates_and_trends():
    rows = [row("a", duration_s=1.0, election_max_s=2.0, params_key="p"),
            row("a", "failed", duration_s=3.0, election_max_s=4.0, params_key="p"),
            row("a", duration_s=2.0, params_key="p"),
            row("a", "skipped", params_key="p"),  # not a run
            row("b", "failed", params_key="p"), row("b", "failed", params_key="q"),
            row("c", params_key="p"), row("c", "failed", params_key="q")]
    stats = {s.case_id: s for s in per_case(rows)}
    assert (stats["a"].runs, stats["a"].passed) == (3, 2)
    assert round(stats["a"].pass_rate, 3) == 0.667 and round(stats["a"].flake_rate, 3) == 0.333
    # always failing is not flaky; passing on one parameter set and failing on another neither
    assert stats["b"].flake_rate == 0 and stats["c"].flake_rate == 0
    assert stats["a"].series["election_max_s"] == [2.0, 4.0]
    assert trend(stats["a"].series["duration_s"]) == "▁█▅ 2.0s (1.0–3.0) last 2.0s"
    assert trend([]) == "-" and sparkline([5.0, 5.0]) == "▁▁"
    assert verdict_word(rows[:3]) == "flaky" and verdict_word(rows[4:6]) == "failed"


def test_a_figure_moved_only_beyond_its_spread():
    before = [row("a", duration_s=10.0, phases={"produce": 5.0}),
              row("a", duration_s=11.0, phases={"produce": 5.5})]
    after = [row("a", duration_s=10.5, phases={"produce": 9.0}),
             row("a", duration_s=11.2, phases={"produce": 9.2})]
    got = moved("a", before, after)
    assert [(m.figure, m.spread, m.samples) for m in got] == [("phase:produce", 0.5, (2, 2))]


def writer(path: Path, name: str, count: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(count)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_two_processes_writing_at_once_lose_no_row(tmp_path):
    """Two real processes append 400 rows each into one new store at the same time (both
    create it): every row is there once."""
    path = tmp_path / "shared.sqlite"
    procs = [writer(path, name, 400) for name in ("one", "two")]
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    conn = store.connect(path)
    counts = dict(conn.execute("SELECT run_id, count(DISTINCT seed) FROM results "
                               "GROUP BY run_id").fetchall())
    assert counts == {"one": 400, "two": 400}
    assert conn.execute("SELECT count(*) FROM results").fetchone()[0] == 800


def test_a_writer_killed_mid_stream_leaves_the_store_readable(tmp_path):
    path = tmp_path / "killed.sqlite"
    proc = writer(path, "killed", 1_000_000)
    assert proc.stdout.readline().strip() == "first row written"

    def some_rows() -> str | None:
        n = sqlite3.connect(path).execute("SELECT count(*) FROM results").fetchone()[0]
        return None if n >= 50 else f"{n} rows"

    wait_for(some_rows, 60, "the writer to commit 50 rows")
    proc.kill()
    proc.wait(timeout=30)
    conn = store.open_existing(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    seeds = [r["seed"] for r in store.rows(conn)]
    assert len(seeds) >= 50 and seeds == list(range(len(seeds)))  # whole rows, in order
    store.append(conn, row("after"))  # and writable again
    assert store.rows(conn)[-1]["case_id"] == "after"
