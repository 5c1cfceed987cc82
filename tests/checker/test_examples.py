"""What the Spark checker's examples show, field by field: the examples are carried through
the counting pass as row numbers and read back from the input afterwards (checker/findings.py),
so each kind of example is pinned here: a pair rule's two rows, the two ids at an
inconsistent offset, a lost id's acknowledged position, a duplicated id's positions."""

from __future__ import annotations

import pytest

from pytest_kreplica.validation.checker import check

from .test_planted import (
    duplicated_redelivery,
    inconsistent_poll_vs_ack,
    mirrored_lost,
    nonmonotonic_sends_reported_not_invalidating,
    poll_skip,
)


@pytest.fixture
def examples_of(history, spark_session):
    def run(case) -> dict:
        h = history()
        case(h)
        return check(h.close()).examples
    return run


def test_a_poll_skip_shows_both_polls(examples_of):
    assert examples_of(poll_skip)["poll_skips"] == [
        {"id": "m4", "prev_id": "m1", "topic": "t", "partition": 0, "offset": 4,
         "prev_offset": 1, "process": 1, "poll": 1, "prev_poll": 0}]


def test_a_nonmonotonic_send_shows_both_sends(examples_of):
    assert examples_of(nonmonotonic_sends_reported_not_invalidating)["nonmonotonic_sends"] == [
        {"id": "b", "prev_id": "a", "topic": "t", "partition": 0, "offset": 3,
         "prev_offset": 5, "process": 0}]


def test_an_inconsistent_offset_shows_both_ids_and_the_lost_id_its_ack(examples_of):
    examples = examples_of(inconsistent_poll_vs_ack)
    assert examples["inconsistent_offsets"] == [
        {"id": "m1", "other_id": "other", "topic": "t", "partition": 0, "offset": 1}]
    assert examples["lost"] == [
        {"id": "m1", "topic": "t", "partition": 0, "offset": 1, "process": 0}]
    assert [e["id"] for e in examples["unexpected"]] == ["other"]


def test_a_duplicate_shows_every_position(examples_of):
    [dup] = examples_of(duplicated_redelivery)["duplicated"]
    assert dup["id"] == "m2"
    assert sorted({p["offset"] for p in dup["positions"]}) == [2, 4]
    assert {p.get("poll") is not None for p in dup["positions"]} == {True, False}


def test_a_mirrored_loss_names_the_source_cluster(examples_of):
    assert examples_of(mirrored_lost)["lost"] == [
        {"id": "m2", "cluster": "source", "topic": "t", "partition": 0, "offset": 2,
         "process": 0}]
