"""Clock-fault plumbing without a JVM: the per-node offset files and environment, the sweep
of libfaketime's leftovers, how the library is obtained, the registry entries, the matrix
and the cluster spec they ask for."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_kreplica.cluster.facilities.impl import debpkg, faketime
from pytest_kreplica.cluster.pool import cluster_spec, spec_key
from pytest_kreplica.errors import EnvironmentProblem, InputError
from pytest_kreplica.faults import clock
from pytest_kreplica.faults.registry import FAILURES, RANDOM_FAILURES, failures_on
from pytest_kreplica.matrix import load_matrix
from pytest_kreplica.plugin import firstrun
from tests.matrix_lines import matrix_error_line

CLOCK_FAILURES = ("clock_skew", "clock_skew_back", "clock_strobe")
CLOCK = frozenset({"fake_clock"})


@pytest.fixture
def clocks(tmp_path):
    homes = {n: tmp_path / f"node-{n}" for n in (1, 2, 3)}
    for home in homes.values():
        home.mkdir()
    return faketime.Clocks(tmp_path / "libfaketime.so.1", homes)


def test_offsets_are_per_node_files_libfaketime_reads(clocks):
    clocks.set_offset(2, 60)
    clocks.set_offset(3, -60.5)
    assert clocks.offset_file(2).read_text() == "+60.000\n"  # libfaketime's "+<seconds>"
    assert not clocks.offset_file(1).exists()  # Clocks.plan writes +0 for every node
    assert clocks.offset(3) == -60.5
    assert not list(clocks.homes[2].glob("*.tmp"))  # written atomically


def test_the_node_environment_preloads_with_the_documented_jvm_settings(clocks, monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/other.so")
    env = clocks.env(2)
    assert env["LD_PRELOAD"] == f"{clocks.library} /other.so"
    assert env["FAKETIME_TIMESTAMP_FILE"] == str(clocks.homes[2] / faketime.OFFSET_FILE)
    assert env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"  # else the JVM hangs (README)
    assert env["FAKETIME_FORCE_MONOTONIC_FIX"] == "0"  # else every clock call locks
    assert env["FAKETIME_CACHE_DURATION"] == "1" and "FAKETIME_NO_CACHE" not in env


def test_sweep_removes_the_objects_of_dead_processes_only(tmp_path, monkeypatch):
    monkeypatch.setattr(faketime, "SHM_DIR", tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    alive = subprocess.Popen(["sleep", "30"])
    try:
        names = [f"faketime_shm_{dead.pid}", f"sem.faketime_sem_{dead.pid}",
                 f"faketime_shm_{alive.pid}", "faketime_other", "unrelated"]
        for name in names:
            (tmp_path / name).write_text("")
        removed = faketime.sweep()
    finally:
        alive.kill()
        alive.wait()
    assert sorted(p.name for p in removed) == sorted(names[:2])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[2:])


def test_the_system_library_is_preferred(monkeypatch, tmp_path):
    lib = tmp_path / "x86_64-linux-gnu" / "faketime" / "libfaketime.so.1"
    lib.parent.mkdir(parents=True)
    lib.write_text("")
    monkeypatch.setattr(faketime, "SYSTEM_GLOB", str(tmp_path / "*" / "faketime" / lib.name))
    monkeypatch.setattr(faketime.once, "prepare", lambda *a, **k: pytest.fail("fetched"))
    assert faketime.ensure_library() == lib


def test_without_apt_the_pinned_pool_package_must_match_its_digest(monkeypatch, tmp_path):
    class Answer:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return b"not the package"

    monkeypatch.setattr("urllib.request.urlopen", lambda url, timeout: Answer())
    monkeypatch.setattr(debpkg.shutil, "which", lambda name: None if name == "apt-get"
                        else f"/usr/bin/{name}")
    with pytest.raises(EnvironmentProblem) as err:
        faketime._fetch_and_unpack(tmp_path / "lib" / faketime.LIBRARY)
    text = str(err.value)
    assert "sha256" in text and faketime.POOL_SHA256 in text and "apt-get install" in text


def test_registry_entries_run_on_process_and_docker_never_random_and_watch_the_isr():
    assert set(CLOCK_FAILURES) == set(clock.CLOCK_FAULTS)
    assert {n for n, f in FAILURES.items() if "fake_clock" in f.facilities} == set(CLOCK_FAILURES)
    for name in CLOCK_FAILURES:
        failure = FAILURES[name]
        assert failure.backends == ("process", "docker") and not failure.random
        assert failure.watch_isr and not failure.moves_leadership
        assert failure.label and failure.colour and name in failures_on("docker")
        assert name not in RANDOM_FAILURES and name not in failures_on("external")
    assert len({FAILURES[n].colour for n in FAILURES}) == len(FAILURES)  # legend tells apart


def test_clock_fault_cases_get_a_preloaded_cluster_of_their_own():
    def case(failure):
        return SimpleNamespace(brokers=3, kafka_version=None, backend="process",
                               failure=failure)
    plain, skewed = cluster_spec(case("hard")), cluster_spec(case("clock_strobe"))
    assert not plain.facilities and skewed.facilities == CLOCK
    assert spec_key(skewed) == spec_key(plain) + "-clock"


def test_a_cluster_without_clocks_refuses_a_clock_fault():
    with pytest.raises(InputError, match="libfaketime"):
        clock.strike(SimpleNamespace(facility=lambda name: None), 1, "clock_skew")


def test_a_clock_fault_on_an_external_cluster_is_one_matrix_line(tmp_path):
    text = matrix_error_line(tmp_path, "  backend: [external]\n  failure: [clock_skew]\n")
    assert "needs backend process or docker" in text


def test_the_clock_matrix_has_a_small_ci_case():
    matrix = load_matrix(Path(__file__).parents[2] / "matrices" / "clock-skew.yaml")
    assert sorted({c.failure for c in matrix.cases}) == sorted(CLOCK_FAILURES)
    ci = [c for c in matrix.cases if "ci" in c.markers]
    assert [(c.failure, c.acks, c.backend) for c in ci] == [("clock_skew", -1, "process")]


def test_first_run_fetches_the_library_for_clock_fault_cases(monkeypatch):
    fetched = []
    monkeypatch.setattr(faketime, "ensure_library", lambda: fetched.append(1))
    monkeypatch.setattr(firstrun, "_start_spark_archive", lambda: None)
    monkeypatch.setattr("pytest_kreplica.cluster.kafka.distribution.resolve",
                        lambda version, parts: (_ for _ in ()).throw(RuntimeError(parts)))
    case = SimpleNamespace(brokers=3, kafka_version=None, backend="process",
                           failure="clock_skew", scenario="replication", compat="mirror-pair",
                           target_kafka_version=None)
    needs = firstrun.case_needs(case)
    assert needs == {(None, "process", ("broker", "fake_clock"))}
    firstrun.prepare(needs)  # resolve "fails" (stubbed): the library step ran before it
    assert fetched == [1]
