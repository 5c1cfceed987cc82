"""The first-run preparation hook: the controller prepares what the collected cluster-using
cases need, once, before any case runs (with and without xdist); tests that only look at
cases prepare nothing. The preparation itself is replaced by a recorder here (it is real in
tests/integration/test_first_run.py)."""

from __future__ import annotations

import textwrap

import pytest

from pytest_kreplica.matrix import DIMENSIONS, Case
from pytest_kreplica.plugin.firstrun import case_needs

MATRIX = """
    scenario: replication
    dimensions:
      partitions: [1, 5]
      kafka_version: [3.9.2, 4.3.1]
"""

CONFTEST = """
    import os
    from pytest_kreplica.plugin import firstrun

    def record(needs):
        needs = sorted(needs, key=str)
        with open(os.environ["NEEDS_LOG"], "a") as out:
            out.write(f"{os.getpid()} {needs}\\n")
        from pytest_kreplica import once
        once.say(f"kreplica: PREPARED {needs}")
        return 0.0

    firstrun.prepare = record
"""

USES_POOL = """
    import os, pytest

    @pytest.mark.kreplica_scenario("replication")
    def test_case(kreplica_case, kreplica_pool):
        with open(os.environ["NEEDS_LOG"], "a") as out:
            out.write(f"{os.getpid()} ran {kreplica_case.case_id}\\n")
"""

DEFAULT_VERSION = """
    scenario: replication
    dimensions:
      partitions: [1]
"""

LOOKS_ONLY = """
    import pytest

    @pytest.mark.kreplica_scenario("replication")
    def test_case(kreplica_case):
        pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path, monkeypatch):
    pytester.mkdir("matrices")
    (pytester.path / "matrices" / "mini.yaml").write_text(textwrap.dedent(MATRIX))
    pytester.makeconftest(textwrap.dedent(CONFTEST))
    log = tmp_path / "needs.log"
    monkeypatch.setenv("NEEDS_LOG", str(log))
    return pytester, log


@pytest.mark.parametrize("workers", [None, "2"])
def test_prepared_once_before_any_case(project, workers):
    pytester, log = project
    pytester.makepyfile(test_cases=textwrap.dedent(USES_POOL))
    args = ["-q", "-s"] + (["-n", workers] if workers else ["-p", "no:xdist"])
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=4)
    lines = log.read_text().splitlines()
    prepared = [line for line in lines if "ran" not in line]
    assert len(prepared) == 1, lines
    assert lines[0] == prepared[0]  # before the first case ran
    assert "('3.9.2', 'process', ('broker',))" in prepared[0]
    assert "('4.3.1', 'process', ('broker',))" in prepared[0]
    assert "kreplica: PREPARED" in result.stdout.str()  # on the user's terminal


@pytest.mark.parametrize("workers", [None, "2"])
def test_default_and_named_versions_together(project, workers):
    """A case on the default version (None) beside named ones: the needs still travel
    from a worker to the controller (sorting them once failed on None against a string)."""
    pytester, log = project
    (pytester.path / "matrices" / "default.yaml").write_text(textwrap.dedent(DEFAULT_VERSION))
    pytester.makepyfile(test_cases=textwrap.dedent(USES_POOL))
    args = ["-q", "-s"] + (["-n", workers] if workers else ["-p", "no:xdist"])
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=5)
    prepared = [line for line in log.read_text().splitlines() if "ran" not in line]
    assert len(prepared) == 1, prepared
    assert "(None, 'process', ('broker',))" in prepared[0]
    assert "('3.9.2', 'process', ('broker',))" in prepared[0]


def test_nothing_prepared_for_tests_without_clusters(project):
    pytester, log = project
    pytester.makepyfile(test_cases=textwrap.dedent(LOOKS_ONLY))
    result = pytester.runpytest_subprocess("-q", "-n", "2")
    result.assert_outcomes(passed=4)
    assert not log.exists()


def test_case_needs_covers_target_versions_and_parts():
    params = {name: dim.default for name, dim in DIMENSIONS.items()}
    params.update(kafka_version="4.3.1", backend="process", target_kafka_version="3.9.2",
                  compat="mirror-pair")
    case = Case(matrix="m", scenario="mirror", case_id="m-1", markers=(), **params)
    assert case_needs(case) == {("4.3.1", "process", ("broker", "mirror")),
                                ("3.9.2", "process", ("broker", "mirror"))}


@pytest.mark.parametrize("workload", ["txn", "txn_pipeline"])
def test_a_transactional_java_case_needs_the_tools_and_our_programs_compiled(workload):
    params = {name: dim.default for name, dim in DIMENSIONS.items()}
    params.update(kafka_version="4.3.1", backend="process", client="java", workload=workload,
                  topics=2)
    case = Case(matrix="m", scenario="replication", case_id="m-1", markers=(), **params)
    assert case_needs(case) == {("4.3.1", "process", ("broker", "tools", "java-programs"))}
