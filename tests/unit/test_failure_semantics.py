"""The matrix rules of the failure scenarios: which semantics a case expects, the ``marks``
subsets (the reduced ``ci`` cases), random faults, and the one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kreplica.errors import MatrixError
from pytest_kreplica.faults import FAILURE_VALUES
from pytest_kreplica.matrix import parse_matrix


def _cases(doc):
    return {c.case_id: c for c in parse_matrix(Path("m.yaml"), doc).cases}


def _semantics(**dims):
    doc = {"dimensions": {k: [v] for k, v in dims.items()}}
    (case,) = _cases(doc).values()
    return case.semantics


@pytest.mark.parametrize("dims,expected", [
    ({"failure": "hard", "acks": -1, "min_insync_replicas": 2}, "at-least-once"),
    ({"failure": "soft", "acks": "all"}, "at-least-once"),
    # issue 12: never at-most-once by configuration; a loss needs its evidence (tradeoffs)
    ({"failure": "hard", "acks": 1}, "at-least-once"),
    ({"failure": "clean", "acks": 0}, "at-least-once"),
    ({"failure": "hard", "acks": -1, "unclean_leader_election": True}, "at-least-once"),
    ({"failure": "none", "acks": 1}, "at-least-once"),
    ({"failure": "none", "acks": -1, "idempotence": True}, "exactly-once"),
    ({"failure": "hard", "acks": 1, "semantics": "at-least-once"}, "at-least-once"),
])
def test_semantics_rule(dims, expected):
    assert _semantics(**dims) == expected


def test_marks_put_a_marker_on_matching_cases_only():
    doc = {"dimensions": {"failure": ["clean", "hard"], "partitions": [1, 5]},
           "marks": {"ci": [{"failure": "hard", "partitions": 1}]}}
    marked = {cid for cid, c in _cases(doc).items() if "ci" in c.markers}
    assert marked == {"m-p1-hard"}
    matrix = parse_matrix(Path("m.yaml"), doc)
    assert matrix.subset_markers == ("ci",)


@pytest.mark.parametrize("doc,message", [
    ({"marks": ["ci"]}, "m.yaml: marks: must be a mapping"),
    ({"marks": {"not a name": [{"failure": "hard"}]}}, "m.yaml: marks: bad marker name"),
    ({"marks": {"ci": [{"colour": "red"}]}}, "m.yaml: marks.ci[0].colour: unknown dimension"),
    ({"dimensions": {"failure": ["hard"], "target": ["random"], "replication_factor": [1]}},
     "target: random needs replication_factor >= 2"),
    ({"dimensions": {"failure": ["meteor"]}},
     "allowed: " + " | ".join(FAILURE_VALUES)),  # the registry's vocabulary
])
def test_errors_are_one_line(doc, message):
    with pytest.raises(MatrixError) as err:
        parse_matrix(Path("m.yaml"), doc)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_random_faults_and_duration_are_dimensions():
    (case,) = _cases({"dimensions": {"failure": ["random"], "target": ["random"],
                                     "duration": [120]}}).values()
    assert (case.failure, case.target, case.duration) == ("random", "random", 120.0)
    assert {"failure_random", "target_random"} <= set(case.markers)
