"""What a case must have checked (``outcome.coverage_problems``): under every semantics a
consumer must have read something, and a history of aborted transactions only is named for
what it is (nothing committed), not "nothing sent"."""

from __future__ import annotations

import pytest

from pytest_kreplica.validation.outcome import READ_COVERAGE, coverage_problems

ACKED_UNREAD = {"sent": 3, "acked": 3, "polled": 0}


@pytest.mark.parametrize("semantics", sorted(READ_COVERAGE))
def test_a_case_whose_consumers_read_nothing_checked_nothing(tmp_path, semantics):
    (problem,) = coverage_problems(tmp_path, ACKED_UNREAD, {}, semantics)
    assert problem.startswith("nothing was polled (3 acknowledged): under " + semantics)
    assert coverage_problems(tmp_path, {**ACKED_UNREAD, "polled": 1}, {}, semantics) == []


def test_the_semantics_comes_from_run_json_without_an_argument(tmp_path):
    (problem,) = coverage_problems(tmp_path, ACKED_UNREAD, {"semantics": "at-most-once"})
    assert "under at-most-once no record may be read twice" in problem


def test_only_aborted_transactions_is_nothing_committed(tmp_path):
    counts = {"sent": 0, "acked": 0, "polled": 0, "txns_aborted": 4, "txns_committed": 0}
    (problem,) = coverage_problems(tmp_path, counts, {})
    assert problem.startswith("nothing was committed: all 4 transaction(s) aborted")
    (problem,) = coverage_problems(tmp_path, {"sent": 0}, {})
    assert problem.startswith("nothing was sent")
