"""The one-line error a bad matrix gives (the file, the key, what is allowed), for the tests
that each refuse one combination."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kreplica.errors import MatrixError
from pytest_kreplica.matrix import load_matrix


def write_matrix(tmp_path, dimensions: str) -> Path:
    """``m.yaml``: a replication matrix whose ``dimensions`` are one flow-style mapping."""
    path = tmp_path / "m.yaml"
    path.write_text(f"scenario: replication\ndimensions: {dimensions}\n")
    return path


def matrix_error_line(tmp_path, dimensions: str) -> str:
    """Load a replication matrix with ``dimensions`` (YAML lines under ``dimensions:``),
    expect a ``MatrixError`` of one line naming the file, and return its text."""
    path = tmp_path / "m.yaml"
    path.write_text("scenario: replication\ndimensions:\n" + dimensions)
    with pytest.raises(MatrixError) as err:
        load_matrix(path)
    text = str(err.value)
    assert "\n" not in text and "m.yaml" in text, text
    return text
