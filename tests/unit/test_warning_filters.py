"""The project's pytest configuration hides third-party deprecation notices (kafka-python's
protocol loader printed 436 per smoke run) and keeps the project's own."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

INNER = """
    import warnings

    def test_third_party_and_own():
        import kafka.admin  # noqa: F401  (loads the protocol schemas)
        exec(compile("import warnings; warnings.warn('own notice', DeprecationWarning)",
                     "own.py", "exec"), {"__name__": "pytest_kreplica.fake"})
        warnings.warn("foreign notice", DeprecationWarning)  # this module: not ours either
"""


def test_third_party_deprecations_hidden_own_kept(tmp_path):
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(INNER))
    run = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"),
                          "--rootdir", str(tmp_path), "-p", "no:cacheprovider", "-p", "no:xdist",
                          str(tmp_path / "test_inner.py")],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "own notice" in run.stdout
    assert "is deprecated" not in run.stdout  # importlib.resources read_text / open_text
    assert "foreign notice" not in run.stdout
