"""An inner pytest project for the plugin's own tests (``pytester``): a matrix in
``matrices/mini.yaml`` and a scenario test file, and the case ids a run of it printed."""

from __future__ import annotations

import textwrap

import pytest


def make(pytester: pytest.Pytester, matrix: str, case_test: str) -> pytest.Pytester:
    """``pytester``'s directory as a project with ``matrix`` and ``test_cases.py``."""
    pytester.mkdir("matrices")
    (pytester.path / "matrices" / "mini.yaml").write_text(textwrap.dedent(matrix))
    pytester.makepyfile(test_cases=textwrap.dedent(case_test))
    return pytester


def case_ids(result: pytest.RunResult) -> list[str]:
    """The ids of ``test_case[...]`` in a run's output, in the order printed."""
    return [line.split("[", 1)[1].rstrip("]") for line in result.outlines
            if "::test_case[" in line]
