"""The pytest plugin's own logic, driven through ``pytester``: options and their precedence,
parametrization from matrices, strict markers and marker selection, the one-line matrix
error, case ordering, and the summary table under xdist. No cluster is started here: the
test functions in the inner sessions record result rows themselves."""

from __future__ import annotations

import textwrap

import pytest

from tests import inner_project
from tests.inner_project import case_ids

MATRIX = """
    scenario: replication
    markers: [ci]
    dimensions:
      partitions: [1, 5]
      compression: [none, gzip]
      producer_mode: [sync, async]
    exclude: [{compression: gzip, producer_mode: sync}]
"""

CASE_TEST = """
    import pytest

    @pytest.mark.kreplica_scenario("replication")
    def test_case(kreplica_case):
        assert kreplica_case.scenario == "replication"
        assert kreplica_case.case_id.startswith(kreplica_case.matrix + "-")

    def test_plain():
        pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester):
    """An inner project: matrices/mini.yaml and a scenario test."""
    return inner_project.make(pytester, MATRIX, CASE_TEST)


def test_cases_become_parametrized_tests_in_matrix_order(project):
    result = project.runpytest("--collect-only", "-q", "--strict-markers")
    assert result.ret == 0
    assert case_ids(result) == ["mini-p1-none-sync", "mini-p1-none-async",
                                     "mini-p1-gzip-async", "mini-p5-none-sync",
                                     "mini-p5-none-async", "mini-p5-gzip-async"]


def test_marker_selection_with_strict_markers(project):
    result = project.runpytest("--strict-markers", "-m", "mini and compression_gzip", "-q")
    result.assert_outcomes(passed=2, deselected=5)
    result = project.runpytest("--strict-markers", "-m", "ci and producer_sync", "-q")
    result.assert_outcomes(passed=2, deselected=5)
    result = project.runpytest("--strict-markers", "-m", "ci and p_none", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # strict: unknown names in -m too
    result = project.runpytest("--strict-markers", "-m", "kreplica and not acks_1", "-q")
    result.assert_outcomes(passed=6, deselected=1)


def test_matrix_selection_by_name_and_path(project):
    (project.path / "matrices" / "other.yaml").write_text(
        "dimensions: {acks: [all, 1]}\n")
    outside = project.path / "elsewhere.yaml"
    outside.write_text("dimensions: {acks: [0]}\n")
    everything = case_ids(project.runpytest("--collect-only", "-q"))
    assert len(everything) == 6 + 2
    assert case_ids(project.runpytest("--collect-only", "-q",
                                           "--kreplica-matrix", "other")) == [
        "other-acks-1", "other-acks1"]
    only_path = project.runpytest("--collect-only", "-q", "--kreplica-matrix", str(outside),
                                  "--kreplica-matrix", "other")
    assert case_ids(only_path) == ["elsewhere-default", "other-acks-1", "other-acks1"]


@pytest.mark.parametrize(("matrix_text", "expected"), [
    ("dimensions: {acks: [2]}\n",
     "bad.yaml: dimensions.acks: bad value 2; allowed: -1 | all | 1 | 0"),
    ("dimensions: {replication_factor: [4], brokers: [3]}\n",
     "bad.yaml: case bad-default.replication_factor: 4 is above brokers 3"),
    ("dimensions: [oops\n", "bad.yaml: line 2: YAML syntax error"),
    ("dimensions: {acks: [1]}\ndimensions: {acks: [-1]}\n",
     "bad.yaml: line 2: key 'dimensions' appears twice"),
    ("scenario: replicaton\n", "bad.yaml: scenario: unknown scenario 'replicaton'"),
])
def test_malformed_matrix_stops_collection_with_one_line(project, matrix_text, expected):
    (project.path / "matrices" / "bad.yaml").write_text(matrix_text)
    result = project.runpytest("-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert len(errors) == 1, result.errlines
    assert errors[0].startswith("ERROR: ") and expected in errors[0]
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "passed" not in result.stdout.str()  # nothing ran


def test_malformed_matrix_under_xdist_is_one_line_too(project):
    (project.path / "matrices" / "bad.yaml").write_text("dimensions: {acks: [2]}\n")
    result = project.runpytest("-q", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.errlines if line.strip()] == [
        f"ERROR: {project.path / 'matrices' / 'bad.yaml'}: dimensions.acks: bad value 2; "
        "allowed: -1 | all | 1 | 0"]
    assert "INTERNALERROR" not in result.stdout.str()


def test_without_a_matrices_dir_the_shipped_matrices_run(project):
    (project.path / "matrices" / "mini.yaml").unlink()
    (project.path / "matrices").rmdir()
    result = project.runpytest("--collect-only", "-q", "-m", "smoke")
    assert result.ret == 0
    assert case_ids(result) and all(i.startswith("smoke-") for i in case_ids(result))


def test_configured_missing_matrices_dir_fails_instead_of_skipping(project):
    (project.path / "matrices" / "mini.yaml").unlink()
    (project.path / "matrices").rmdir()
    project.makeini("[pytest]\nkreplica_matrices_dir = mine\n")
    result = project.runpytest("-q")
    assert result.ret != 0
    out = result.stdout.str()
    assert f"{project.path / 'mine'}: kreplica_matrices_dir: no such directory" in out
    assert "Traceback" not in out and "1 passed" not in out


def test_unknown_matrix_name_is_one_line(project):
    result = project.runpytest("-q", "--kreplica-matrix", "nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "nope.yaml: --kreplica-matrix: no such matrix file; allowed:" in result.stderr.str()
    assert "mini, " in result.stderr.str() and "smoke" in result.stderr.str()  # shipped too


def test_bad_option_values_are_one_line(project):
    result = project.runpytest("--kreplica-backend", "vm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--kreplica-backend: bad value 'vm'; allowed: process | docker" in \
        result.stderr.str()
    result = project.runpytest("--kreplica-kafka-version", "4.x")
    assert "allowed: default | a version x.y.z" in result.stderr.str()


def test_bad_jit_mode_is_one_line(project, monkeypatch):
    monkeypatch.setenv("KREPLICA_SPARK_JIT", "fast")
    result = project.runpytest("-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "env KREPLICA_SPARK_JIT: 'fast' is not a JIT mode (allowed: quick, full)" in \
        result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_option_precedence_cli_ini_env_default(project, monkeypatch):
    project.makepyfile(test_opts="""
        def test_show(kreplica_options):
            o = kreplica_options
            print("OPTS", o.backend, o.kafka_version, o.replica_check, o.output is None,
                  o.spark_master)
    """)
    monkeypatch.delenv("KREPLICA_BACKEND", raising=False)
    monkeypatch.delenv("KREPLICA_KAFKA_VERSION", raising=False)

    def opts(*args: str) -> str:
        result = project.runpytest("-s", "-q", "-k", "test_show", *args)
        return next(line for line in result.outlines if line.startswith("OPTS"))

    assert opts() == "OPTS process None True True None"
    monkeypatch.setenv("KREPLICA_BACKEND", "docker")
    monkeypatch.setenv("KREPLICA_KAFKA_VERSION", "3.9.2")
    monkeypatch.setenv("KREPLICA_NO_REPLICA_CHECK", "1")
    assert opts() == "OPTS docker 3.9.2 False True None"
    project.makeini("""
        [pytest]
        kreplica_backend = process
        kreplica_kafka_version = 4.3.1
        kreplica_no_replica_check = false
        kreplica_spark_master = local[1]
    """)
    assert opts() == "OPTS process 4.3.1 True True local[1]"
    assert opts("--kreplica-backend", "docker", "--kreplica-kafka-version", "default",
                "--kreplica-no-replica-check") == "OPTS docker None False True local[1]"


def test_kafka_version_option_reaches_case_markers(project):
    result = project.runpytest("-q", "--strict-markers", "--kreplica-kafka-version", "3.9.2",
                               "-m", "kafka_3_9")
    result.assert_outcomes(passed=6, deselected=1)


def test_cases_needing_the_same_cluster_run_together(project):
    (project.path / "matrices" / "mini.yaml").write_text(
        "dimensions: {brokers: [3, 4], partitions: [1, 2]}\n")
    assert case_ids(project.runpytest("--collect-only", "-q")) == [
        "mini-p1-b3", "mini-p2-b3", "mini-p1-b4", "mini-p2-b4"]
    # expansion order alternates the cluster size; collection groups it
    (project.path / "matrices" / "mini.yaml").write_text(
        "dimensions: {partitions: [1, 2], brokers: [4, 3]}\n")
    assert case_ids(project.runpytest("--collect-only", "-q")) == [
        "mini-p1-b3", "mini-p2-b3", "mini-p1-b4", "mini-p2-b4"]


SUMMARY_TEST = """
    import pytest

    @pytest.mark.kreplica_scenario("replication")
    def test_case(kreplica_case, kreplica_record):
        valid = kreplica_case.compression != "gzip" or kreplica_case.partitions == 1
        kreplica_record({"case_id": kreplica_case.case_id,
                         "verdict": "valid" if valid else "invalid",
                         "counts": {"sent": 10 * kreplica_case.partitions, "acked": 9,
                                    "lost": 0 if valid else 3, "duplicated": 0},
                         "duration_s": 1.25, "run_dir": "runs/" + kreplica_case.case_id})
        assert valid

    @pytest.mark.kreplica_scenario("replication")
    def test_broken(kreplica_case):
        if kreplica_case.case_id.endswith("p5-none-async"):
            raise RuntimeError("cluster did not start")
"""


@pytest.mark.parametrize("workers", [None, "2"])
def test_summary_table_reaches_the_controller(project, workers):
    project.makepyfile(test_cases=textwrap.dedent(SUMMARY_TEST))
    args = ["-q", "-m", "mini"] + (["-n", workers] if workers else ["-p", "no:xdist"])
    # a subprocess: the summary's index.html loads numpy, which cannot be imported twice in
    # one process (an in-process pytester run unloads what it imported)
    result = project.runpytest_subprocess(*args)
    result.assert_outcomes(passed=10, failed=2)
    out = result.stdout.str()
    assert "kreplica matrix summary" in out
    table = out.split("kreplica matrix summary", 1)[1].splitlines()
    header = next(line for line in table if line.startswith("case "))
    assert header.split() == ["case", "verdict", "sent", "acked", "lost", "unseen", "dup",
                              "election", "duration", "run", "dir"]
    # each case has a row from test_case (what it recorded) and one from test_broken (which
    # recorded nothing); under -n 2 they arrive in either order, so find test_case's by what
    # it recorded
    rows: dict[str, list[list[str]]] = {}
    for line in table:
        if line.startswith("mini-"):
            rows.setdefault(line.split()[0], []).append(line.split())
    gzip = [r for r in rows["mini-p5-gzip-async"] if r[2] != "-"]
    assert [r[:5] for r in gzip] == [["mini-p5-gzip-async", "invalid", "50", "9", "3"]]
    (sync,) = [r for r in rows["mini-p1-none-sync"] if r[2] != "-"]
    assert sync[1:3] == ["valid", "10"]
    assert sync[-1] == "runs/mini-p1-none-sync"
    assert "1.2s" in sync or "1.3s" in sync
    # test_broken recorded nothing: its failing case still gets a row, as failed
    errors = [line for line in table if line.startswith("mini-p5-none-async")
              and " failed" in line]
    assert errors, table


def test_summary_extension_hook(project):
    project.makeconftest("""
        def pytest_kreplica_summary(config, rows, terminalreporter):
            terminalreporter.write_line(f"INDEX {len(rows)} rows")
    """)
    project.makepyfile(test_cases=textwrap.dedent(SUMMARY_TEST))
    result = project.runpytest_subprocess("-q", "-k", "not test_broken")
    assert "INDEX 6 rows" in result.stdout.str()


def test_plugin_import_stays_light():
    """Loading the plugin (every pytest run) must not pull in clients, Spark or plotting."""
    import subprocess
    import sys

    code = ("import sys, pytest_kreplica.plugin; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'kafka', 'pyspark', "
            "'matplotlib', 'docker', 'pyarrow', 'yaml', 'allpairspy', 'psutil'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
