"""Users' own matrices: ``extends:`` a shipped or project matrix (by name or path) with
dimensions, ``exclude`` and ``include`` overridden; a project's directory adding to and
overriding the shipped matrices; ``kreplica matrices`` listing them; a bad ``extends:`` as one
line naming the file, the key and the allowed values. Matrix logic and collection only."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_kreplica.errors import MatrixError
from pytest_kreplica.matrix import Catalog, load_all, load_matrix, shipped_dir
from pytest_kreplica.matrix.listing import table

REPO = Path(__file__).resolve().parents[2]


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def test_extends_a_shipped_matrix_and_overrides_dimensions_exclude_include(tmp_path):
    base = load_matrix(shipped_dir() / "leader-failure.yaml")
    mine = load_matrix(write(tmp_path, "my-leader.yaml", """
        extends: leader-failure
        strategy: product
        dimensions:
          failure: [hard]
          acks: [-1]
          partitions: [1, 5]
          compression: [none]
          producer_mode: [async]
          failures: [1]
        exclude: [{partitions: 5}]
        include: [{partitions: 10, compression: lz4}]
    """))
    assert mine.name == "my-leader" and mine.scenario == base.scenario
    assert mine.description == base.description  # not overridden: the base's
    # the base's client dimension is kept: the product runs each client
    assert [c.case_id for c in mine.cases] == [
        "my-leader-p1-none", "my-leader-p1-none-java", "my-leader-p1-none-librdkafka",
        "my-leader-p10-lz4"]
    case = mine.cases[0]
    assert (case.failure, case.acks, case.target) == ("hard", -1, "leader")  # target: base's
    assert "my_leader" in case.markers and "leader_failure" not in case.markers
    # dimensions the file does not name keep the base's values
    assert case.replication_factor == base.cases[0].replication_factor
    assert case.min_insync_replicas == base.cases[0].min_insync_replicas


def test_extends_by_path_and_a_project_matrix_overriding_a_shipped_one(tmp_path):
    project = tmp_path / "matrices"
    # the project's smoke builds on the shipped smoke (the same name reaches the shipped one)
    write(project, "smoke.yaml", "extends: smoke\ndimensions: {messages: [50]}\n")
    write(project, "tiny.yaml", "extends: smoke\ndimensions: {partitions: [1]}\ninclude: []\n")
    write(tmp_path / "elsewhere", "more.yaml", "extends: ../matrices/tiny.yaml\n"
                                               "exclude: [{compression: gzip}]\n")
    catalog = Catalog(project)
    shipped = load_matrix(shipped_dir() / "smoke.yaml")
    smoke, tiny = load_all(catalog.default_paths(), catalog=catalog)
    assert len(smoke.cases) == len(shipped.cases)
    assert {c.messages for c in smoke.cases} == {50}
    assert {c.messages for c in tiny.cases} == {50}  # tiny extends the project's smoke
    assert {c.partitions for c in tiny.cases} == {1}
    more = load_matrix(tmp_path / "elsewhere" / "more.yaml", catalog=catalog)
    assert {c.compression for c in tiny.cases} - {c.compression for c in more.cases} == {"gzip"}


@pytest.mark.parametrize(("text", "expected"), [  # the file whose extends: is wrong says it
    ("extends: leader-falure\n", "extends: unknown matrix 'leader-falure'; allowed: a matrix "
                                 "name (basic, clock-skew,"),
    ("extends: [leader-failure]\n", "extends: bad value ['leader-failure']; allowed: a matrix "
                                    "name (basic,"),
    ("extends: 3\n", "extends: bad value 3; allowed: a matrix name"),
    ("extends: nowhere.yaml\n", "extends: no such file"),
    ("extends: b.yaml\n", "b.yaml: extends: cycle a.yaml -> b.yaml -> a.yaml; allowed: a chain of "
                          "extends that ends in a matrix without one"),
])
def test_bad_extends_is_one_line_naming_file_key_and_allowed(tmp_path, text, expected):
    write(tmp_path, "b.yaml", "extends: a.yaml\n")
    path = write(tmp_path, "a.yaml", text)
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    assert str(info.value).startswith(f"{tmp_path}/") and expected in str(info.value)
    assert str(info.value).startswith(f"{path}: ") or expected.startswith("b.yaml")
    assert "\n" not in str(info.value)


def kreplica(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_kreplica.cli", "matrices", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_kreplica_matrices_lists_shipped_project_and_path(tmp_path):
    write(tmp_path / "matrices", "smoke.yaml", "extends: smoke\ndimensions: {partitions: [1]}\n")
    write(tmp_path / "matrices", "mine.yaml", "description: my own\nmarkers: [nightly]\n"
                                              "dimensions: {acks: [0, 1]}\n")
    extra = write(tmp_path / "x", "extra.yaml", "extends: basic\n")
    result = kreplica(tmp_path, str(extra))
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    assert result.stdout.splitlines()[0].split() == ["name", "source", "cases", "markers",
                                                     "description"]
    assert rows["mine"][:5] == ["mine", "project", "2", "mine", "nightly"]
    assert rows["smoke"][:3] == ["smoke", "project", "3"]  # overrides the shipped smoke
    assert rows["leader-failure"][:2] == ["leader-failure", "shipped"]
    basic = load_matrix(shipped_dir() / "basic.yaml")
    assert rows["extra"][:3] == ["extra", "path", str(len(basic.cases))]
    shipped = {p.stem for p in shipped_dir().glob("*.yaml")}
    assert shipped | {"mine", "extra"} == set(rows)
    assert [r[0] for r in table(tmp_path / "matrices", [])[1:]] == sorted(shipped | {"mine"})


def test_kreplica_matrices_with_a_bad_extends_is_one_line(tmp_path):
    bad = write(tmp_path / "matrices", "bad.yaml", "extends: nope\n")
    result = kreplica(tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"kreplica matrices: {bad}: extends: unknown matrix 'nope'; allowed: a matrix name "
        f"({', '.join(Catalog(tmp_path / 'matrices').names())}) or a path to a .yaml file"]


SUITE = """
    import pytest
    import pytest_kreplica as kreplica

    class TestMyBroker(kreplica.ReplicationSuite):
        kreplica_matrices = {matrices!r}

        @pytest.fixture(scope="class")
        def kreplica_environment(self):
            return kreplica.create_cluster
"""


@pytest.mark.parametrize("matrices", [("leader-failure",), ("mine",), ()])
def test_a_suite_without_a_matrices_directory_gets_the_shipped_matrices(pytester, matrices):
    if matrices == ("mine",):
        write(pytester.path, "mine.yaml", "extends: leader-failure\n")
        matrices = ("mine.yaml",)
    pytester.makepyfile(test_broker=textwrap.dedent(SUITE.format(matrices=matrices)))
    result = pytester.runpytest("--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    ids = [line.split("[", 1)[1].rstrip("]") for line in result.outlines
           if "::test_replication[" in line]
    expected = load_matrix(shipped_dir() / "leader-failure.yaml")
    if matrices == ():
        assert len(ids) > len(expected.cases) and any(i.startswith("smoke-") for i in ids)
    else:
        prefix = matrices[0].removesuffix(".yaml")
        assert ids == [c.case_id.replace("leader-failure", prefix, 1)
                       for c in expected.cases]


def test_a_bad_extends_stops_pytest_with_one_line(pytester):
    write(pytester.path / "matrices", "mine.yaml", "extends: {a: 1}\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert errors == [f"ERROR: {pytester.path / 'matrices' / 'mine.yaml'}: extends: bad value "
                      f"{{'a': 1}}; allowed: a matrix name "
                      f"({', '.join(Catalog(pytester.path / 'matrices').names())}) or a path "
                      f"to a .yaml file"]
    assert "Traceback" not in result.stdout.str()
