"""A history written rolled into Parquet parts gets the same verdict from the Spark checker
(and the baseline) as the same history written as JSON Lines."""

from __future__ import annotations

import pytest

from pytest_kreplica.history import Roll

from .conftest import History


def _plant(h: History) -> None:
    """Lost, unseen, duplicated, inconsistent offsets, unexpected and a poll skip, across
    several parts."""
    h.acked(40).send("f0", status="fail").send("i0", status="info")
    h.send("u0", 0, partition=1)  # unseen: nothing of t-1 is ever polled
    h.send("dup", 40).send("dup", 41)  # duplicated
    h.polls(1, [o for o in range(39) if o != 7])  # m7 and m39 lost
    h.poll(1, [(41, "dup"), (41, "ghost")])  # inconsistent offset, unexpected id
    h.event("rebalance", process=2).polls(2, [0, 1, 5, 6])  # poll skip 1 -> 5


@pytest.mark.parametrize("semantics", ["at-least-once", "exactly-once"])
def test_rolled_and_jsonl_histories_get_the_same_verdict(tmp_path, checker, semantics):
    runs = []
    for name, roll in (("json", None), ("rolled", Roll(rows=7))):
        h = History(tmp_path / name, roll=roll)
        _plant(h)
        runs.append(h.meta(semantics=semantics).close())
    assert (runs[1] / "sends.parquet" / "part-00005.parquet").exists()  # really rolled
    assert not (runs[1] / "sends.jsonl").exists()
    plain, rolled = (checker(run) for run in runs)
    assert plain.valid is False
    for anomaly in ("lost", "unseen", "duplicated", "inconsistent_offsets", "unexpected",
                    "poll_skips"):
        assert plain.counts[anomaly] > 0, anomaly
    assert rolled.counts == plain.counts
    assert rolled.valid == plain.valid
