"""The packaged plan (``pytest_kreplica.plan``) and the checkout's ``tests/system`` collect the
same cases, the shipped matrices are found without a project directory, and one matrix of
one scenario (``--kreplica-matrix basic``) collects without an INTERNALERROR (the scenario
tests it gives no case get an empty parametrization). Collection only: no cluster. The
README's own commands run in tests/integration/test_quickstart.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_kreplica.errors import MatrixError
from pytest_kreplica.matrix import SHIPPED, Catalog, shipped_dir

REPO = Path(__file__).resolve().parents[2]


def collect(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's package, not another
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def case_ids(out: str) -> list[str]:
    """``test_x[case id]`` of every collected item, without the file part of the node id."""
    return sorted(line.split("::", 1)[1] for line in out.splitlines() if "::" in line)


def test_one_matrix_of_one_scenario_collects_without_internal_error():
    result = collect(REPO, "tests/system", "--kreplica-matrix", "basic", "-n", "2")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert any(i.startswith("test_replication[basic-") for i in case_ids(result.stdout)), out


def test_packaged_plan_collects_what_tests_system_does(tmp_path):
    """From an empty directory (no matrices, no ini file), ``--pyargs`` finds the shipped
    matrices and the same case ids and markers select the same cases."""
    for selection in ("smoke", "leader_failure and ci", "mirror_maker_failure and failure_hard"):
        plan = collect(tmp_path, "--pyargs", "pytest_kreplica.plan", "-m", selection)
        system = collect(REPO, "tests/system", "-m", selection)
        assert plan.returncode == 0 and system.returncode == 0, plan.stdout + system.stdout
        assert case_ids(plan.stdout), plan.stdout
        assert case_ids(plan.stdout) == case_ids(system.stdout), selection


def test_shipped_matrices_are_the_repositorys(tmp_path):
    shipped = sorted(p.name for p in shipped_dir().glob("*.yaml"))
    assert shipped == sorted(p.name for p in (REPO / "matrices").glob("*.yaml"))
    catalog = Catalog(tmp_path / "matrices")  # no such directory, not configured: shipped
    assert [p.stem for p in catalog.default_paths()] == [Path(n).stem for n in shipped]
    assert {e.source for e in catalog.entries.values()} == {SHIPPED}
    # the checkout's matrices/ is the shipped directory itself, not a project's
    assert {e.source for e in Catalog(REPO / "matrices").entries.values()} == {SHIPPED}


def test_project_directory_overrides_a_shipped_name(tmp_path):
    (tmp_path / "matrices").mkdir()
    (tmp_path / "matrices" / "smoke.yaml").write_text("dimensions: {acks: [1]}\n")
    (tmp_path / "matrices" / "mine.yaml").write_text("dimensions: {acks: [0]}\n")
    catalog = Catalog(tmp_path / "matrices")
    assert catalog.entries["smoke"].source == "project"
    assert catalog.entries["leader-failure"].source == SHIPPED
    assert catalog.resolve(["smoke", "leader-failure"]) == [
        tmp_path / "matrices" / "smoke.yaml", shipped_dir() / "leader-failure.yaml"]
    assert [p.name for p in catalog.default_paths()] == ["mine.yaml", "smoke.yaml"]


def test_a_configured_missing_directory_is_an_error(tmp_path):
    with pytest.raises(MatrixError, match="kreplica_matrices_dir: no such directory"):
        Catalog(tmp_path / "nowhere", required=True).default_paths()
