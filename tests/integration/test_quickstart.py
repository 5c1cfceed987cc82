"""The quick start (docs/quickstart.md) proven from a wheel, and every shell command of the
README and the quick start run as written.

The wheel is built with ``python -m build --wheel`` from a copy of this checkout's files (git's
tracked and untracked-but-not-ignored ones, symlinks kept as symlinks, so the build writes no
``build/`` or egg-info here) and installed with ``--no-deps`` into a fresh venv outside the
checkout. The venv reaches the dependencies already installed for this run (pyspark is 500 MB)
through a ``.pth`` that adds this environment's site-packages after its own: the wheel's copy
of ``pytest_kreplica`` comes first, which ``test_the_venv_imports_the_wheels_copy`` checks.
(``venv --system-site-packages`` would reach the base interpreter's packages, not a tox env's.)

From an empty directory the venv lists the shipped matrices, collects a ``ReplicationSuite``
subclass exactly as the checkout's ``tests/suite`` collects, collects the smoke plan's six
cases with the quick start's command and runs two of them (one per partition count and acks
setting) against real clusters: CI's first step runs all six from the checkout, so the wheel
adds only what differs, the installed package. The jars come from the shared
``KREPLICA_CACHE``. Their run directories are then the ``RUN_DIR`` of the documented commands.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from pytest_kreplica.cache import cache_dir
from tests import doc_commands

REPO = Path(__file__).resolve().parents[2]
SMOKE = "pytest --pyargs pytest_kreplica.plan -m smoke -n 2 --kreplica-output kreplica-results"
# one case per partition count and acks setting of the smoke matrix
FROM_THE_WHEEL = ("smoke-p1-none-acks-1-sync", "smoke-p5-lz4-acks1-async")
PLAN = ("__init__.py", "test_replication.py", "test_mirror.py", "test_upgrade.py")


def run(args: list[str] | str, cwd: Path, env: dict[str, str], timeout: int = 300,
        ) -> subprocess.CompletedProcess[str]:
    shell = isinstance(args, str)
    result = subprocess.run(["bash", "-c", args] if shell else args, cwd=cwd, env=env,
                            text=True, capture_output=True, timeout=timeout)
    return result


def case_ids(out: str) -> list[str]:
    """The collected node ids without their file part."""
    return sorted(line.split("::", 1)[1] for line in out.splitlines() if "::" in line)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("quickstart")
    assert not base.resolve().is_relative_to(REPO), "the temp directory is inside the checkout"
    return base


@pytest.fixture(scope="module")
def source(work) -> Path:
    """A copy of the checkout's files as git sees them (symlinks kept)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO, capture_output=True, check=True,
                            timeout=60).stdout.decode().split("\0")
    target = work / "src"
    for name in filter(None, listed):
        origin, copy = REPO / name, target / name
        if not origin.exists() and not origin.is_symlink():
            continue  # deleted in the work tree, not yet in the index
        copy.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_symlink():
            copy.symlink_to(origin.readlink())
        else:
            shutil.copy2(origin, copy)
    assert (target / "pytest_kreplica" / "matrices").is_symlink()
    return target


@pytest.fixture(scope="module")
def wheel(work, source) -> Path:
    dist = work / "dist"
    result = run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(source)],
                 work, doc_commands.clean_env(), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (built,) = dist.glob("pytest_kreplica-*.whl")
    return built


class Venv:
    def __init__(self, root: Path):
        self.root = root
        self.python = root / "bin" / "python"
        self.env = doc_commands.clean_env(
            PATH=f"{root / 'bin'}:{doc_commands.clean_env()['PATH']}", VIRTUAL_ENV=str(root),
            PYSPARK_PYTHON=str(self.python), KREPLICA_CACHE=str(cache_dir()))
        self.env.pop("PYTHONPATH", None)


@pytest.fixture(scope="module")
def venv(work, wheel) -> Venv:
    root = work / "venv"
    made = run([sys.executable, "-m", "venv", str(root)], work, doc_commands.clean_env())
    assert made.returncode == 0, made.stderr
    env = Venv(root)
    site = run([str(env.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               work, env.env).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    Path(site, "kreplica-deps.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in ours))
    installed = run([str(env.python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                     "--force-reinstall", str(wheel)], work, env.env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return env


@pytest.fixture(scope="module")
def smoke(work, venv) -> tuple[subprocess.CompletedProcess[str], Path]:
    empty = work / "empty"
    empty.mkdir()
    chosen = " or ".join(FROM_THE_WHEEL)
    return run(f"{SMOKE} -k '{chosen}'", empty, venv.env, timeout=1200), empty / "kreplica-results"


def test_the_quick_starts_command_collects_the_six_smoke_cases(venv, work):
    empty = work / "collect"
    empty.mkdir()
    result = run(f"{SMOKE} --collect-only -q -n 0", empty, venv.env)
    assert result.returncode == 0, result.stdout + result.stderr
    ids = [i.split("[", 1)[1].rstrip("]") for i in case_ids(result.stdout)]
    assert len(ids) == 6 and all(i.startswith("smoke-") for i in ids), result.stdout
    assert set(FROM_THE_WHEEL) <= set(ids), ids


def test_the_wheel_carries_the_matrices_and_the_plan(wheel):
    with zipfile.ZipFile(wheel) as archive:
        infos = {i.filename: i for i in archive.infolist()}
    shipped = sorted(n.split("/")[-1] for n in infos if n.startswith("pytest_kreplica/matrices/"))
    assert shipped == sorted(p.name for p in (REPO / "matrices").glob("*.yaml"))
    assert all(n.endswith(".yaml") for n in shipped)
    for name in shipped:  # files with the matrix's text, not links
        info = infos[f"pytest_kreplica/matrices/{name}"]
        assert (info.external_attr >> 16) & 0o170000 != 0o120000, name
        assert info.file_size == (REPO / "matrices" / name).stat().st_size, name
    for module in PLAN:
        assert f"pytest_kreplica/plan/{module}" in infos, module
    assert any(n.endswith(".dist-info/entry_points.txt") for n in infos)
    # the quick start installs the wheel by its file name (an allow-listed, skipped line)
    assert f"pip install dist/{wheel.name}" in (REPO / "docs" / "quickstart.md").read_text()


def test_the_venv_imports_the_wheels_copy(venv, work):
    probe = ("import sys, pytest_kreplica, pytest_kreplica.plugin, pytest_kreplica.plan;"
             "from pytest_kreplica.matrix import shipped_dir;"
             "print(pytest_kreplica.__file__); print(pytest_kreplica.plugin.__file__);"
             "print(pytest_kreplica.plan.__file__); print(shipped_dir() / 'smoke.yaml');"
             "print(sys.executable)")
    result = run([str(venv.python), "-c", probe], work, venv.env)
    assert result.returncode == 0, result.stderr
    for line in result.stdout.split():
        assert Path(line).is_relative_to(venv.root), result.stdout
        assert Path(line).exists(), line
    assert shutil.which("kreplica", path=venv.env["PATH"]) == str(venv.root / "bin" / "kreplica")


def test_kreplica_matrices_lists_the_shipped_ones(venv, work):
    empty = work / "matrices-listing"
    empty.mkdir()
    result = run("kreplica matrices", empty, venv.env)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    assert sorted(r[0] for r in rows) == sorted(p.stem for p in (REPO / "matrices").glob("*.yaml"))
    assert {r[1] for r in rows} == {"shipped"}
    assert ["smoke", "shipped", "6"] in [r[:3] for r in rows]


def test_a_suite_subclass_collects_what_tests_suite_does(venv, work):
    """The checkout's ReplicationSuite test file, copied to a directory of its own and run
    with the wheel, collects the same case ids as in the checkout."""
    project = work / "suite"
    project.mkdir()
    for name in ("test_suite.py", "suite-ci.yaml"):
        shutil.copy(REPO / "tests" / "suite" / name, project / name)
    outside = run("pytest test_suite.py --collect-only -q -p no:cacheprovider", project,
                  venv.env)
    inside = run([sys.executable, "-m", "pytest", "tests/suite", "--collect-only", "-q",
                  "-p", "no:cacheprovider"], REPO,
                 doc_commands.clean_env(PYTHONPATH=str(REPO)))
    assert outside.returncode == 0 and inside.returncode == 0, outside.stdout + inside.stdout
    assert case_ids(outside.stdout), outside.stdout
    assert case_ids(outside.stdout) == case_ids(inside.stdout)


def test_smoke_cases_pass_from_the_wheel(smoke):
    result, output = smoke
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-5000:]
    assert "2 passed" in result.stdout.splitlines()[-1], out[-3000:]
    runs = sorted(p.parent for p in output.glob("*/verdict.json"))
    assert sorted(p.name for p in runs) == sorted(FROM_THE_WHEEL), runs
    for run_dir in runs:
        verdict = json.loads((run_dir / "verdict.json").read_text())
        assert verdict["passed"] is True, (run_dir.name, verdict.get("reason"))
        assert (run_dir / "report.html").is_file()
    index = (output / "index.html").read_text()
    assert all(p.name in index for p in runs)


@pytest.fixture
def run_dir(smoke, tmp_path) -> Path:
    """A copy of one smoke case's run directory (``kreplica report`` rewrites it)."""
    result, output = smoke
    assert result.returncode == 0, result.stdout[-3000:]
    first = sorted(output.glob("smoke-*"))[0]
    return Path(shutil.copytree(first, tmp_path / first.name, symlinks=True))


def test_every_documented_command_runs(source, run_dir, tmp_path):
    """README commands from the root of a checkout (a copy: some write files there), the
    quick start's from an empty directory, both with this checkout's package."""
    env = doc_commands.clean_env(PYTHONPATH=str(REPO))
    project = tmp_path / "project"
    project.mkdir()
    failures, ran = [], []
    for page, cwd in ((REPO / "README.md", source), (REPO / "docs" / "quickstart.md", project)):
        failed, done = doc_commands.run_page(page, cwd, env, run_dir=run_dir)
        failures += failed
        ran += [(page.name, s.kind) for s in done]
    assert failures == [], "\n".join(failures)
    for page in ("README.md", "quickstart.md"):
        assert (page, "run") in ran and (page, "collect") in ran, ran
    assert ("quickstart.md", "file") in ran
