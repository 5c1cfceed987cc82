"""The at-most-once trade-off: offsets reused after a lost acknowledged record are accepted
only when the loss explains every one of them."""

from __future__ import annotations

from pytest_kreplica.history import RunWriter
from pytest_kreplica.tradeoffs import judge, offset_reuse


def _run(tmp_path, extra_polls=()):
    with RunWriter(tmp_path) as w:
        for i in range(6):
            w.send(0, "t", 0, f"m{i}", i, "ok", i, i + 1)
        # m3 was acknowledged at offset 3 by a leader that died; the new leader wrote m4 there
        w.send(0, "t", 0, "m4b", 3, "ok", 10, 11)
        for i, mid in enumerate(["m0", "m1", "m2", "m4b", "m4", "m5"]):
            w.poll(1, i, "t", 0, i if mid != "m4b" else 3, mid, 20 + i)
        for poll in extra_polls:
            w.poll(*poll)
    return tmp_path


def test_offset_reuse_by_a_lost_record_is_explained(tmp_path):
    run = _run(tmp_path)
    reuse = offset_reuse(run)
    assert reuse["inconsistent_offsets"] == 1 and reuse["explained_by_loss"] == 1
    verdict = judge("at-most-once", {"lost": 1, "inconsistent_offsets": 1}, run)
    assert verdict["accepted"] is True and "1 lost" in verdict["reason"]


def test_readers_that_disagree_are_never_a_tradeoff(tmp_path):
    run = _run(tmp_path, extra_polls=[(2, 0, "t", 0, 3, "m3", 30)])  # another reader saw m3
    reuse = offset_reuse(run)
    assert reuse["unexplained"] == 1
    assert reuse["unexplained_examples"][0]["polled"] == ["m3", "m4b"]
    assert judge("at-most-once", {"inconsistent_offsets": 1}, run)["accepted"] is False


def test_other_anomalies_or_semantics_are_not_a_tradeoff(tmp_path):
    run = _run(tmp_path)
    assert judge("at-most-once", {"inconsistent_offsets": 1, "duplicated": 2},
                 run)["accepted"] is False
    assert judge("at-least-once", {"inconsistent_offsets": 1, "lost": 1}, run) is None
    assert judge("at-most-once", {"lost": 3}, run) is None  # valid already
