"""With replicas.json present, lost and unseen ids are looked up in the replicas' logs
(the replica-log verifier's ``locate_missing``): kept by the broker or lost by it."""

from __future__ import annotations

import pytest

from pytest_kreplica.validation.checker import check
from tests.checker.conftest import lost_in_and_out_of_the_log


@pytest.mark.parametrize("in_pass", [None, 1], ids=["in-the-counting-pass", "second-read"])
def test_lost_in_log_and_unseen_not_in_log(history, spark_session, monkeypatch, in_pass):
    """``second-read``: more missing ids than the counting pass brings back (here 1), so
    the look-up reads them from the per-id table again, with the input's own ids."""
    pytest.importorskip("pytest_kreplica.validation.replicas.locate")
    from pytest_kreplica.validation.checker import findings

    if in_pass is not None:
        monkeypatch.setattr(findings, "MISSING_IN_PASS", in_pass)
    run = lost_in_and_out_of_the_log(history())
    verdict = check(run)
    assert (verdict.counts["lost"], verdict.counts["unseen"]) == (1, 1)
    assert (verdict.counts["in_log"], verdict.counts["not_in_log"]) == (1, 1)
    assert [e["id"] for e in verdict.examples["in_log"]] == ["m3"]
    assert [e["id"] for e in verdict.examples["not_in_log"]] == ["m6"]


def test_no_missing_ids_means_zero_counts(history, spark_session):
    h = history()
    h.acked(3).polls(1, range(3))
    run = h.close()
    (run / "replicas.json").write_text('{"nodes": {}, "partitions": [], "at_rest": true}')
    verdict = check(run)
    assert verdict.valid
    assert (verdict.counts["in_log"], verdict.counts["not_in_log"]) == (0, 0)
