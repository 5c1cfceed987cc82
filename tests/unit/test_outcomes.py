"""How a case ends besides passed and failed: an expected finding (matrix key
``expected_findings``, run as strict xfail with its reason) and a harness error (a
``HarnessError`` ends the test as a pytest error, counted apart in the summary table, in
``-rA``, in junit-xml and under xdist). No cluster: the inner tests raise what a case would."""

from __future__ import annotations

import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest

from pytest_kreplica.errors import MatrixError
from pytest_kreplica.matrix import load_matrix

REPO = Path(__file__).resolve().parents[2]

MATRIX = """
    scenario: replication
    dimensions:
      failure: [hard, power_loss_all]
      flush_messages: [default, 1]
    expected_findings:
      - reason: default flush loses what no replica fsynced
        match: {failure: power_loss_all, flush_messages: default}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_expected_findings_name_the_matching_cases_with_their_reason(tmp_path):
    matrix = load_matrix(write(tmp_path, MATRIX))
    assert matrix.expected_findings == {
        "m-flushdefault-power_loss_all": "default flush loses what no replica fsynced"}


def test_the_power_loss_matrix_expects_the_default_flush_finding():
    matrix = load_matrix(REPO / "matrices" / "power-loss.yaml")
    expected = {c.case_id for c in matrix.cases
                if c.failure in ("power_loss_all", "power_loss_replicas")
                and c.flush_messages is None}
    assert len(expected) == 3 and set(matrix.expected_findings) == expected
    assert all("default flush" in r for r in matrix.expected_findings.values())


@pytest.mark.parametrize(("entries", "where", "allowed"), [
    ("{reason: x}", "expected_findings: must be", "a list of {reason: TEXT, match:"),
    ("[{match: {failure: hard}}]", "expected_findings[0].reason: missing", "one line"),
    ("[{reason: x, match: {}}]", "expected_findings[0].match: missing", "a mapping"),
    ("[{reason: x, match: {failure: hard}, why: y}]", "expected_findings[0].why: unknown key",
     "reason, match"),
    ("[{reason: x, match: {colour: red}}]", "expected_findings[0].match.colour: unknown "
     "dimension", "partitions"),
    ("[{reason: x, match: {failure: melt}}]", "expected_findings[0].match.failure: bad value",
     "hard"),
    ("[{reason: x, match: {failure: hard, flush_messages: 0}}]",
     "expected_findings[0].match.flush_messages: bad value", "an integer >= 1"),
])
def test_bad_expected_findings_are_one_line(tmp_path, entries, where, allowed):
    path = tmp_path / "m.yaml"
    path.write_text("dimensions: {failure: [hard, power_loss_all], flush_messages: [default, 1]}"
                    f"\nexpected_findings: {entries}\n")
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {where}") and allowed in message, message
    assert "\n" not in message


INNER_TEST = """
    import pytest

    from pytest_kreplica.errors import ClusterError

    @pytest.mark.kreplica_scenario("replication")
    def test_case(kreplica_case, kreplica_record):
        kreplica_record({"case_id": kreplica_case.case_id, "verdict": "valid",
                         "counts": {"sent": 3, "acked": 3}})
        if kreplica_case.case_id == "mini-flush1-hard":
            raise ClusterError("expected a leader of t-0 outside [1] within 5 s; last seen: "
                               "leader 1")
        if kreplica_case.case_id == "mini-flush1-power_loss_all":
            assert False, "history invalid: lost 3"
        if kreplica_case.failure == "power_loss_all" and FINDING_STILL_THERE:
            assert False, "history invalid: inconsistent_offsets 8"

    FINDING_STILL_THERE = True
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # -rA lines whole
    pytester.mkdir("matrices")
    (pytester.path / "matrices" / "mini.yaml").write_text(textwrap.dedent(MATRIX))
    pytester.makepyfile(test_cases=textwrap.dedent(INNER_TEST))
    return pytester


def summary_lines(result: pytest.RunResult) -> list[str]:
    return result.stdout.str().split("kreplica matrix summary", 1)[1].splitlines()


@pytest.mark.parametrize("workers", [None, "2"])
def test_finding_is_xfail_and_harness_error_is_an_error(project, workers):
    args = ["-rA", "--junitxml=out.xml"] + (["-n", workers] if workers else ["-p", "no:xdist"])
    # a subprocess: the summary's index.html loads numpy, which cannot load twice per process
    result = project.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1, failed=1, xfailed=1, errors=1)
    result.stdout.fnmatch_lines([
        "XFAIL test_cases.py::test_case[[]mini-flushdefault-power_loss_all[]] - expected "
        "finding: default flush loses what no replica fsynced",
        "ERROR test_cases.py::test_case[[]mini-flush1-hard[]] - *ClusterError: expected a "
        "leader of t-0 outside [[]1[]] within 5 s*",
        "FAILED test_cases.py::test_case[[]mini-flush1-power_loss_all[]] - *lost 3*",
    ])
    lines = summary_lines(result)
    rows = {line.split()[0]: line for line in lines if line.startswith("mini-")}
    assert "expected finding" in rows["mini-flushdefault-power_loss_all"], lines
    assert "harness error" in rows["mini-flush1-hard"], lines
    assert " valid " in rows["mini-flush1-power_loss_all"], lines  # its recorded verdict
    assert ("kreplica: 1 passed, 1 failed, 1 expected finding, 1 harness error"
            in result.stdout.str()), lines
    suite = ElementTree.parse(project.path / "out.xml").getroot().find("testsuite")
    assert (suite.get("errors"), suite.get("failures"), suite.get("skipped")) == ("1", "1", "1")


def test_a_finding_that_stops_happening_is_a_failure(project):
    project.makepyfile(test_cases=textwrap.dedent(INNER_TEST).replace(
        "FINDING_STILL_THERE = True", "FINDING_STILL_THERE = False"))
    result = project.runpytest_subprocess("-rA", "-p", "no:xdist")
    result.assert_outcomes(passed=1, failed=2, errors=1)
    result.stdout.fnmatch_lines(["FAILED test_cases.py::test_case[[]mini-flushdefault-"
                                 "power_loss_all[]]*"])
    rows = {line.split()[0]: line for line in summary_lines(result)
            if line.startswith("mini-")}
    assert "finding not seen" in rows["mini-flushdefault-power_loss_all"]


def test_a_harness_error_in_an_expected_finding_stays_an_error(project):
    project.makepyfile(test_cases=textwrap.dedent(INNER_TEST).replace(
        '== "mini-flush1-hard"', '== "mini-flushdefault-power_loss_all"'))
    result = project.runpytest_subprocess("-rA", "-p", "no:xdist")
    result.assert_outcomes(passed=2, failed=1, errors=1)


class TopicsTimeOut:
    """A cluster whose topic creation times out the way ``AdminCluster``'s bounded wait does
    (the runner's own logic is under test, not a broker)."""

    def describe(self):
        return {"backend": "stand-in"}

    def log_files(self):
        return {}

    def create_topics(self, topics, timeout=30.0):
        from pytest_kreplica.errors import ClusterError

        raise ClusterError(f"waited 30 s for topics {[t.name for t in topics]} created; last "
                           f"seen: create_topics: KafkaTimeoutError: timed out")


def test_a_harness_error_in_a_case_writes_a_harness_verdict_and_judges_nothing(tmp_path):
    import json

    from pytest_kreplica.errors import HarnessError
    from pytest_kreplica.scenarios.runner import run_case

    case = load_matrix(write(tmp_path, MATRIX)).cases[0]
    run_dir = tmp_path / "run"
    with pytest.raises(HarnessError) as info:
        run_case(case, TopicsTimeOut(), run_dir)
    message = str(info.value)
    assert message.startswith(f"harness error in case {case.case_id}: waited 30 s for topics")
    assert "nothing was judged about the broker" in message and str(run_dir) in message
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["passed"] is None and verdict["valid"] is None
    assert verdict["reason"].startswith("harness: waited 30 s for topics")
    assert verdict["harness"]["errors"] == [message.split(": ", 1)[1].split(
        "; nothing was judged")[0]]


def test_a_spark_job_that_died_is_a_check_error_not_a_bad_run(tmp_path):
    from py4j.protocol import Py4JError

    from pytest_kreplica.errors import CheckError, HarnessError
    from pytest_kreplica.validation.checker.core import _spark_errors

    with pytest.raises(CheckError) as info, _spark_errors(tmp_path):
        raise Py4JError("An error occurred while calling o81.collectToPython\nmore")
    assert isinstance(info.value, HarnessError)
    assert str(info.value).startswith(f"{tmp_path}: Spark could not check this run: An "
                                      "error occurred while calling o81.collectToPython")


def test_a_check_that_died_ends_the_case_as_a_harness_error_with_its_verdict(tmp_path,
                                                                             monkeypatch):
    """The workload ran; then the history check's Spark job died: verdict.json says
    harness, with what the check expected and saw, and nothing about the broker."""
    import json

    from pytest_kreplica.errors import CheckError, HarnessError
    from pytest_kreplica.scenarios import runner

    def died(run_dir, semantics, spark_master=None):
        raise CheckError(f"{run_dir}: Spark could not check this run: Py4JError: the JVM "
                         "exited (Spark log: spark.log)")

    monkeypatch.setattr(runner, "_produce_and_drain", lambda *args: None)
    monkeypatch.setattr(runner, "check", died)
    case = load_matrix(write(tmp_path, MATRIX)).cases[0]
    run_dir = tmp_path / "run"
    with pytest.raises(HarnessError) as info:
        runner.run_case(case, TopicsTimeOut(), run_dir, replica_check=False)
    assert "validation: " in str(info.value) and "the JVM exited" in str(info.value)
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["passed"] is None and verdict["valid"] is None
    (error,) = verdict["harness"]["errors"]
    assert error.startswith(f"validation: {run_dir}: Spark could not check this run")
    assert verdict["reason"] == f"harness: {error}"
