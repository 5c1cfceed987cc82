"""``Case``: its attributes are the dimension table's, typed, and the spelled-out class that
type checkers read (``case.py`` under ``TYPE_CHECKING``) says exactly the same."""

from __future__ import annotations

import ast
import dataclasses
import pickle
import typing
from pathlib import Path

import pytest

from pytest_kreplica.matrix import DIMENSIONS, Case, parse_matrix
from pytest_kreplica.matrix import case as case_module

EXPECTED = [("matrix", "str"), ("scenario", "str"), ("case_id", "str"),
            *((d.name, d.type) for d in DIMENSIONS.values()), ("markers", "tuple[str, ...]"),
            ("source", "str")]


def _stub_fields() -> list[tuple[str, str]]:
    tree = ast.parse(Path(case_module.__file__).read_text(encoding="utf-8"))
    for node in tree.body:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            stub = next(n for n in node.body if isinstance(n, ast.ClassDef) and n.name == "Case")
            return [(n.target.id, ast.unparse(n.annotation)) for n in stub.body
                    if isinstance(n, ast.AnnAssign)]
    raise AssertionError("case.py has no `if TYPE_CHECKING: class Case` for type checkers")


def test_generated_fields_are_the_dimension_table():
    assert [(f.name, f.type) for f in dataclasses.fields(Case)] == EXPECTED


def test_type_checker_stub_matches_the_table():
    assert _stub_fields() == EXPECTED


def test_annotations_resolve_to_real_types():
    hints = typing.get_type_hints(Case)
    assert hints["partitions"] is int
    assert hints["segment_bytes"] == int | None
    assert hints["idempotence"] is bool


def test_every_dimension_is_an_attribute_and_nothing_else_is():
    case = parse_matrix(Path("m.yaml"), {"dimensions": {"partitions": [5]}}).cases[0]
    assert case.partitions == 5 and case.replication_factor == 3 and case.brokers == 3
    assert case.params == tuple((n, getattr(case, n)) for n in DIMENSIONS)
    assert case.as_dict()["semantics"] == "at-least-once"
    with pytest.raises(AttributeError):
        case.no_such_dimension  # noqa: B018 - no __getattr__ hides a typo any more
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.partitions = 2
    assert pickle.loads(pickle.dumps(case)) == case
    assert repr(case) == "Case('m', 'm-default')"
    assert case.source == "m.yaml"  # the file, written to run.json


def test_a_case_needs_every_dimension():
    with pytest.raises(TypeError, match="partitions"):
        Case(matrix="m", scenario="replication", case_id="m-1", markers=())
