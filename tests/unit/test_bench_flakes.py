"""benchmarks/bench_flakes.py: a run's junit xml read per test (passed, failed, error,
xfailed, skipped, and which errors were harness errors), runs summed, flaky tests named, and
the ``flakes`` line python -m benchmarks reads. Planted junit files of the shape pytest
writes; the CPU hog is started and killed for real (one core, under a second)."""

from __future__ import annotations

from collections import Counter

import psutil

from benchmarks import bench_flakes, run_all

RUN = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="3" failures="1" skipped="2"
 tests="7">
<testcase classname="tests.system.test_replication" name="test_replication[smoke-a]"/>
<testcase classname="tests.system.test_replication" name="test_replication[fault-b]">
 <error message="failed on setup with &quot;pytest_kreplica.errors.HarnessError: harness
 error in case fault-b: hard did not act on node 1&quot;">E HarnessError</error>
</testcase>
<testcase classname="tests.system.test_replication" name="test_replication[fault-c]">
 <properties><property name="kreplica_result"
  value="{&quot;case_id&quot;: &quot;fault-c&quot;, &quot;verdict&quot;: &quot;harness&quot;}"/>
 </properties>
 <error message="failed on setup with &quot;SomeWrapper: see the verdict&quot;">E</error>
</testcase>
<testcase classname="tests.system.test_replication" name="test_replication[lost-d]">
 <failure message="AssertionError: history invalid: lost 3">E AssertionError</failure>
 <error message="failed on teardown with &quot;OSError: disk&quot;">E OSError</error>
</testcase>
<testcase classname="tests.system.test_replication" name="test_replication[power-e]">
 <skipped type="pytest.xfail" message="expected finding: default flush"/>
</testcase>
<testcase classname="tests.system.test_mirror" name="test_mirror[docker-f]">
 <skipped type="pytest.skip" message="no docker"/>
</testcase>
</testsuite></testsuites>
"""

SECOND = RUN.replace('name="test_replication[smoke-a]"/>',
                     'name="test_replication[smoke-a]"><failure message="x">E</failure>'
                     '</testcase>')


def test_one_run_is_read_per_test_with_harness_errors_apart(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(RUN)
    seen = bench_flakes.junit_outcomes(path)
    rep = "tests.system.test_replication::test_replication"
    assert seen[f"{rep}[smoke-a]"] == Counter(passed=1)
    assert seen[f"{rep}[fault-b]"] == Counter(error=1, harness=1)  # by its exception
    assert seen[f"{rep}[fault-c]"] == Counter(error=1, harness=1)  # by its recorded verdict
    assert seen[f"{rep}[lost-d]"] == Counter(failed=1, error=1)  # not a harness error
    assert seen[f"{rep}[power-e]"] == Counter(xfailed=1)
    assert seen["tests.system.test_mirror::test_mirror[docker-f]"] == Counter(skipped=1)


def test_runs_are_summed_and_a_test_with_two_outcomes_is_flaky(tmp_path):
    totals: dict[str, Counter[str]] = {}
    for i, text in enumerate((RUN, SECOND, RUN)):
        path = tmp_path / f"run{i}.xml"
        path.write_text(text)
        bench_flakes.add_run(totals, bench_flakes.junit_outcomes(path))
    rep = "tests.system.test_replication::test_replication"
    assert totals[f"{rep}[smoke-a]"] == Counter({"passed": 2, "failed": 1, "run:passed": 2,
                                                 "run:failed": 1})
    assert totals[f"{rep}[fault-b]"] == Counter({"error": 3, "harness": 3, "run:error": 3})
    assert totals[f"{rep}[lost-d]"]["run:failed+error"] == 3
    # lost-d fails and errors in every run, the same each time: not flaky
    assert bench_flakes.flaky(totals) == [f"{rep}[smoke-a]"]
    lines = bench_flakes.summary("own", 3, totals)
    assert lines[0] == "load own: 3 run(s)"
    total = next(line for line in lines if line.startswith("total "))
    assert total.split()[1:] == ["2", "4", "9", "3", "3", "6"]
    assert f"  flaky: {rep}[smoke-a]" in lines
    assert lines[-1] == ("flakes own: 3 runs, 6 tests, 1 flaky, 6 harness errors, 9 errors, "
                         "4 failures, 3 xfailed")
    (row,) = run_all.parse_flakes("\n".join(lines))  # what python -m benchmarks reads
    assert row.result == "1 flaky of 6 tests, 6 harness errors, 9 errors, 4 failures (3 runs)"


def test_quick_mode_is_one_run_of_two_cases_and_integration_is_optional():
    args = bench_flakes.argparse.Namespace(quick=True, integration=False, workers=2)
    ((name, argv),) = bench_flakes.pytest_runs(args)
    assert name == "ci" and argv[:3] == ["tests/system", "-m", "ci"]
    assert argv[argv.index("-k") + 1] == bench_flakes.QUICK_CASES
    args.quick, args.integration = False, True
    assert [n for n, _ in bench_flakes.pytest_runs(args)] == ["ci", "integration"]


def test_the_hog_burns_a_core_and_is_gone_after_its_block():
    with bench_flakes.Hog(cores=1) as hog:
        (proc,) = hog.procs
        assert psutil.Process(proc.pid).is_running() and proc.poll() is None
    assert proc.poll() is not None and not hog.procs


def test_each_failed_or_errored_test_says_its_first_reason(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(RUN)
    reasons = bench_flakes.junit_reasons(path)
    rep = "tests.system.test_replication::test_replication"
    assert reasons[f"{rep}[lost-d]"] == "failure: AssertionError: history invalid: lost 3"
    assert reasons[f"{rep}[fault-b]"].startswith('error: failed on setup with "pytest_kreplica')
    assert f"{rep}[smoke-a]" not in reasons and f"{rep}[power-e]" not in reasons


def test_a_streamed_script_is_shown_and_returned_whole(capsys):
    script = "import sys; print('a', flush=True); print('b', file=sys.stderr); sys.exit(3)"
    code, out = run_all.run_streamed(["python3", "-c", script], 30)
    assert code == 3 and out.splitlines() == ["a", "b"]
    assert "  | a" in capsys.readouterr().out
