"""A small history is checked with its own Spark settings (one shuffle partition, no adaptive
execution, no generated code: ``spark.sized_shuffle``) and its plan in one task, without an
exchange and without collapsing its clean ids (``rules.build(one_task=True)``); a large one
with the session's settings. Every
other checker test uses small histories, so this one checks the same histories both ways and
wants the same verdict, and the session's settings back afterwards."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

import pytest_kreplica.validation.engine.spark as engine
from pytest_kreplica.validation.checker import check, core, rules, spark_tables, tables, windows
from tests.checker import test_planted as planted
from tests.checker.test_txn_planted import Txn, copied_twice, write_cycle

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "histories"


def _both_ways(run_dir, monkeypatch):
    """The verdict in one task, and as a large history's, in window-1 buckets of two offsets
    rather than 65,536 (the same code, more buckets): poll skips, lost records and
    inconsistent offsets are then judged across buckets (``windows.by_offset``)."""
    small = check(run_dir).to_dict()
    with monkeypatch.context() as m:
        m.setattr(engine, "SMALL_INPUT_BYTES", 0)  # as if the history were large
        m.setattr(windows, "BUCKET_BITS", 1)
        large = check(run_dir).to_dict()
    return small, large


@pytest.mark.parametrize("name", ["clean", "lost", "mirrored", "mirrored-hard"])
def test_a_fixture_gets_the_same_verdict_either_way(name, monkeypatch, spark_session):
    small, large = _both_ways(FIXTURES / name, monkeypatch)
    assert small == large
    assert small["counts"]["acked"] > 0 and small["counts"]["polled"] > 0, small


# one planted case per anomaly (tests/checker/test_planted.py): a small history's examples
# come from the per-id rows themselves, a large one's after its clean ids are collapsed
# (the fixtures above have lost records, and a mirrored run's)
ONE_PER_ANOMALY = [planted.unseen_tail, planted.recovered_indeterminate, planted.aborted_read,
                   planted.unexpected_record, planted.duplicated_by_two_acks,
                   planted.inconsistent_two_acks_one_offset, planted.nonmonotonic_poll,
                   planted.skips_count_per_pair,
                   planted.nonmonotonic_sends_reported_not_invalidating]


@pytest.mark.parametrize("case", ONE_PER_ANOMALY, ids=lambda c: c.__name__)
def test_a_planted_anomaly_gets_the_same_verdict_either_way(case, history, monkeypatch,
                                                           spark_session):
    h = history()
    expected, _ = case(h)
    small, large = _both_ways(h.close(), monkeypatch)
    assert small == large
    assert {k: v for k, v in small["counts"].items() if k in expected} == expected
    assert all(small["examples"].get(name) for name in expected), small["examples"]


def test_rows_at_no_known_offset_share_no_bucket_with_known_ones(history, monkeypatch,
                                                                 spark_session):
    """A large history's window 1 compares raw offsets and ids, because no bucket mixes
    known rows with others (``windows._bucket``). A failed send is at no known offset, even
    with an offset: as the first row, beside records polled at offsets 1 and 5, its offset 3
    must not count as a record between those two polls. (Offsets below 0, which once shared
    a bucket with such rows, are refused by the history's contract.)"""
    h = history()
    h.send("f0", 3, status="fail").send("m1", 1).send("m5", 5)
    h.poll(1, [(1, "m1"), (5, "m5")])
    small, large = _both_ways(h.close(), monkeypatch)
    assert small == large
    assert small["counts"]["poll_skips"] == 0, small
    assert (small["counts"]["acked"], small["counts"]["polled"]) == (2, 2), small


@pytest.mark.parametrize("case", [write_cycle, copied_twice], ids=lambda c: c.__name__)
def test_a_transactional_history_gets_the_same_verdict_either_way(case, history, monkeypatch,
                                                                  spark_session):
    h = history()
    expected, _ = case(Txn(h))
    small, large = _both_ways(h.close(), monkeypatch)
    assert small == large
    assert {k: v for k, v in small["counts"].items() if k in expected} == expected


def test_a_small_transactional_check_frees_the_tables_it_kept(history, monkeypatch,
                                                              spark_session):
    """Its three kept tables (``localCheckpoint``) are freed when the check ends: a classic
    session's cleaner never freed them in a long-lived session (``spark.kept_frames``)."""
    jsc = getattr(spark_session, "_jsc", None)
    if jsc is None:
        pytest.skip("a classic session's matter: a Connect DataFrame frees its kept copy itself")
    kept_counts = []
    real = core.kept_frames

    @contextlib.contextmanager
    def counting():
        with real() as kept:
            yield kept
            kept_counts.append(len(kept))

    monkeypatch.setattr(core, "kept_frames", counting)
    before = jsc.getPersistentRDDs().size()
    h = history()
    expected, _ = write_cycle(Txn(h))
    verdict = check(h.close())
    assert {k: v for k, v in verdict.counts.items() if k in expected} == expected
    assert kept_counts == [3]  # sends, polls and the outcomes were kept ...
    assert jsc.getPersistentRDDs().size() == before  # ... and are freed


def test_the_session_gets_its_own_settings_back(spark_session):
    keys = list(engine.SMALL_INPUT_CONF)
    before = {k: spark_session.conf.get(k, None) for k in keys}
    with engine.sized_shuffle(spark_session, 1000):
        inside = {k: spark_session.conf.get(k) for k in keys}
        assert spark_session.range(5).selectExpr("sum(id * 2)").first()[0] == 20
    assert inside == engine.SMALL_INPUT_CONF
    assert {k: spark_session.conf.get(k, None) for k in keys} == before


@pytest.mark.parametrize("one_task", [True, False])
def test_a_small_plan_has_no_exchange_and_a_large_one_has(one_task, spark_session, capsys):
    run_dir = FIXTURES / "lost"
    sends, polls = (spark_tables.read_spark(spark_session, tables.find_table(run_dir, name),
                                      row=rules.ROW) for name in ("sends", "polls"))
    frames = rules.build(sends, polls, {}, one_task=one_task)
    capsys.readouterr()
    frames.per_id.explain()
    plan = capsys.readouterr().out
    assert ("Exchange" in plan) is not one_task, plan
    assert ("Coalesce 1" in plan) is one_task, plan
    assert frames.per_id.where("lost").count() == 2  # the fixture's two lost ids, either way
