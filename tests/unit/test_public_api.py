"""The public face: ``pytest_kreplica.__all__`` is exactly the table of docs/api.md, every
name resolves to an object defined where the table says, and ``import pytest_kreplica``
imports none of the package's modules (the plugin imports it at every pytest start)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_kreplica

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def documented() -> dict[str, str]:
    rows = re.findall(r"^\| `(\w+)` \| `([\w.]+)` \|", DOC.read_text(encoding="utf-8"), re.M)
    return dict(rows)


def test_exports_are_exactly_the_documented_names():
    assert sorted(pytest_kreplica.__all__) == sorted(documented())
    assert len(set(pytest_kreplica.__all__)) == len(pytest_kreplica.__all__)


@pytest.mark.parametrize("name", sorted(documented()))
def test_each_name_resolves_where_documented(name):
    module = documented()[name]
    value = getattr(pytest_kreplica, name)
    assert value is not None
    if module != "pytest_kreplica":
        home = sys.modules[f"pytest_kreplica.{module}"]
        assert getattr(home, name) is value


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        pytest_kreplica.no_such_name  # noqa: B018


def test_import_loads_no_submodule():
    code = ("import sys, pytest_kreplica; "
            "print([m for m in sys.modules if m.startswith('pytest_kreplica.')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=DOC.parents[1])
    assert out.stdout.strip() == "[]"
