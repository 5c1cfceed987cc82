"""With replicas.json present, lost and unseen ids are looked up in the replicas' logs
(the replica-log verifier's ``locate_missing``): kept by the broker or lost by it."""

from __future__ import annotations

import json

import pytest

from pytest_kreplica.validation.checker import check


@pytest.mark.parametrize("in_pass", [None, 1], ids=["in-the-counting-pass", "second-read"])
def test_lost_in_log_and_unseen_not_in_log(history, spark_session, monkeypatch, in_pass):
    """``second-read``: more missing ids than the counting pass brings back (here 1), so
    the look-up reads them from the per-id table again, with the input's own ids."""
    pytest.importorskip("pytest_kreplica.validation.replicas.locate")
    from pytest_kreplica.validation.checker import findings
    from pytest_kreplica.validation.replicas.synth import (
        build_batch,
        message_values,
        write_partition,
    )

    if in_pass is not None:
        monkeypatch.setattr(findings, "MISSING_IN_PASS", in_pass)
    h = history()
    h.acked(7).polls(1, [0, 1, 2]).event("rebalance", process=1).polls(1, [4, 5])
    run = h.close()  # m3 lost (read past), m6 unseen (nothing read past it)
    ids = [f"m{i}" for i in range(6)]  # the broker kept m0..m5; m6 never reached the log
    write_partition(run / "replicas" / "1" / "t-0",
                    [build_batch(0, message_values(ids[:3])),
                     build_batch(3, message_values(ids[3:]))], per_segment=2)
    (run / "replicas.json").write_text(json.dumps({
        "nodes": {"1": "replicas/1"},
        "partitions": [{"topic": "t", "partition": 0, "leader": 1, "replicas": [1],
                        "isr": [1], "high_watermark": 6}],
        "at_rest": True}))
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
