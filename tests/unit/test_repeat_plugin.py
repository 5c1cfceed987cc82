"""``--kreplica-repeat``, ``--kreplica-until-fail`` and the results store as the plugin
writes it, driven through ``pytester`` subprocesses (with and without xdist). No cluster is
started: the inner test writes a verdict.json and records a result row itself, and fails on
one planted repeat."""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import zlib

import pytest

from pytest_kreplica.plugin.record import shared_dir, store_path
from pytest_kreplica.plugin.repeat import StopBook, repeat_seed
from tests import inner_project
from tests.inner_project import case_ids

MATRIX = """
    scenario: replication
    dimensions:
      partitions: [1, 5]
      compression: [none, gzip]
"""

CASE_TEST = """
    import json
    import pytest

    @pytest.mark.kreplica_scenario("replication")
    def test_case(kreplica_case, kreplica_record, kreplica_output):
        run_dir = kreplica_output / kreplica_case.case_id
        run_dir.mkdir(parents=True, exist_ok=True)
        bad = kreplica_case.case_id == "mini-p5-gzip-r2"
        (run_dir / "verdict.json").write_text(json.dumps({
            "case": kreplica_case.case_id, "passed": not bad, "election_max_s": 1.5,
            "availability": {"produce_unavailable_s": 2.5}}))
        kreplica_record({"case_id": kreplica_case.case_id, "seed": kreplica_case.seed,
                         "verdict": "invalid" if bad else "valid", "duration_s": 1.0,
                         "run_dir": str(run_dir)})
        assert not bad, "lost 3 acknowledged messages"
"""


@pytest.fixture
def project(pytester: pytest.Pytester):
    return inner_project.make(pytester, MATRIX, CASE_TEST)


def store_rows(path) -> list[dict]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    return [dict(r) for r in conn.execute("SELECT * FROM results ORDER BY id")]


def test_repeats_have_sortable_ids(project):
    result = project.runpytest("--collect-only", "-q", "--kreplica-repeat", "3", "-k", "p1-none")
    assert case_ids(result) == ["mini-p1-none-r1", "mini-p1-none-r2", "mini-p1-none-r3"]
    result = project.runpytest("--collect-only", "-q", "--kreplica-repeat", "10", "-k",
                               "p1-none")
    assert case_ids(result) == [f"mini-p1-none-r{i:02d}" for i in range(1, 11)]
    assert case_ids(result) == sorted(case_ids(result))


@pytest.mark.parametrize("argv, line", [
    (["--kreplica-repeat", "0"], "--kreplica-repeat: bad value '0'; allowed: an integer >= 1"),
    (["--kreplica-repeat", "x"], "--kreplica-repeat: bad value 'x'; allowed: an integer >= 1"),
    (["--kreplica-until-fail"], "--kreplica-until-fail: needs --kreplica-repeat N"),
])
def test_bad_repeat_options_are_one_line(project, argv, line):
    result = project.runpytest_subprocess("--collect-only", "-q", *argv)
    assert result.ret != 0
    assert line in result.stderr.str() and "Traceback" not in result.stderr.str()


@pytest.mark.parametrize("xdist", [False, True])
def test_until_fail_stops_a_case_and_every_run_is_a_row(project, xdist):
    """Three repeats of each case; mini-p5-gzip fails at repeat 2, so its repeat 3 is
    skipped with the reason; every run (not the skipped one) is one row of the store, with
    the repeat's own seed. Under xdist the output is given and the store is beside it;
    without, both are under the basetemp."""
    args = ["--kreplica-repeat", "3", "--kreplica-until-fail", "-rs"]
    if xdist:
        args += ["-n", "2", "--dist", "loadfile", "--kreplica-output", "runs"]
        store = project.path / "results.sqlite"
    else:
        args += ["-p", "no:xdist"]
        store = project.path / "basetemp" / "results.sqlite"
    result = project.runpytest_subprocess(*args, f"--basetemp={project.path / 'basetemp'}")
    result.assert_outcomes(passed=10, failed=1, skipped=1)
    out = result.stdout.str()
    assert "until-fail: mini-p5-gzip failed at repeat 2 of 3 (seed " in out
    table = out.split("kreplica repeats", 1)[1].splitlines()
    gzip = next(line for line in table if line.startswith("mini-p5-gzip "))
    assert gzip.split()[:6] == ["mini-p5-gzip", "2", "1", "1", "0", "1"]
    assert gzip.endswith("AssertionError: lost 3 acknowledged messages")
    assert next(line for line in table if line.startswith("mini-p1-none ")).split()[:6] == [
        "mini-p1-none", "3", "3", "0", "0", "0"]
    seed = repeat_seed(zlib.crc32(b"mini-p5-gzip"), 2)
    assert f"kreplica: mini-p5-gzip failed at repeat 2 of 3 (seed {seed})" in out
    replay = re.search(r"replay: (.*)", out).group(1)
    assert shlex.split(replay) == ["pytest", "test_cases.py::test_case[mini-p5-gzip-r2]",
                                   "--kreplica-repeat", "3"]
    rows = store_rows(store)
    assert re.search(rf"kreplica: run \S+: 11 row\(s\) in results store {re.escape(str(store))}",
                     out), out[-2000:]
    assert len(rows) == 11 and len({r["run_id"] for r in rows}) == 1
    gzip_rows = [r for r in rows if r["case_id"] == "mini-p5-gzip"]
    assert [(r["repeat"], r["outcome"], r["passed"]) for r in sorted(
        gzip_rows, key=lambda r: r["repeat"])] == [(1, "passed", 1), (2, "failed", 0)]
    assert {r["seed"] for r in gzip_rows} == {repeat_seed(zlib.crc32(b"mini-p5-gzip"), i)
                                              for i in (1, 2)}
    bad = next(r for r in gzip_rows if r["repeat"] == 2)
    assert bad["unavailability_s"] == 2.5 and bad["election_max_s"] == 1.5
    assert json.loads(bad["parameters"])["partitions"] == 5
    assert bad["test_id"] == "test_cases.py::test_case[mini-p5-gzip-r2]"


def test_the_replay_command_runs_the_same_repeat_with_the_same_seed(project):
    store = project.path / "history.sqlite"
    first = project.runpytest_subprocess("--kreplica-repeat", "3", "--kreplica-until-fail",
                                         "-p", "no:xdist", "-k", "p5-gzip",
                                         "--kreplica-results", str(store))
    replay = shlex.split(re.search(r"replay: (.*)", first.stdout.str()).group(1))
    assert replay[0] == "pytest"
    again = project.runpytest_subprocess(*replay[1:], "-p", "no:xdist",
                                         "--kreplica-results", str(store))
    again.assert_outcomes(failed=1)
    failed = [(r["run_id"], r["test_id"], r["seed"]) for r in store_rows(store)
              if r["outcome"] == "failed"]
    assert len({run for run, _, _ in failed}) == 2  # one per run
    assert {(test, seed) for _, test, seed in failed} == {
        ("test_cases.py::test_case[mini-p5-gzip-r2]",
         repeat_seed(zlib.crc32(b"mini-p5-gzip"), 2))}


def test_an_empty_results_option_writes_no_store(project):
    result = project.runpytest_subprocess("--kreplica-results", "", "--kreplica-output",
                                          "runs", "-p", "no:xdist", "-k", "p1-none")
    result.assert_outcomes(passed=1)
    assert not (project.path / "results.sqlite").exists()
    assert "results store" not in result.stdout.str()


def test_the_first_failure_wins_and_every_process_reads_it(tmp_path):
    """The until-fail file: created whole by one link, never overwritten by a later failure
    (another worker's), read back by any process; the default store and stop files go where
    every worker sees them (a worker's basetemp's parent)."""
    book = StopBook(tmp_path / "stops" / "run-1")
    assert book.stopped("t.py::test[c]") is None
    assert book.stop("t.py::test[c]", {"index": 2, "seed": 7, "reason": "lost"}) is True
    assert book.stop("t.py::test[c]", {"index": 3, "seed": 8, "reason": "other"}) is False
    assert StopBook(tmp_path / "stops" / "run-1").stopped("t.py::test[c]")["index"] == 2
    assert [p.name for p in (tmp_path / "stops" / "run-1").iterdir()
            if p.name.startswith(".")] == []  # no temporary file left
    base = tmp_path / "basetemp" / "popen-gw1"
    assert shared_dir(None, base, worker=True) == tmp_path / "basetemp"
    assert shared_dir(None, base, worker=False) == base
    assert store_path(None, tmp_path / "out", base) == tmp_path / "results.sqlite"
    assert store_path("", tmp_path / "out", base) is None
