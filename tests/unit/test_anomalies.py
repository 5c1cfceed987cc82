"""The anomaly registry is the one list: the Spark rules, the verdict, the loss trade-off and
the report each cover exactly its names (the baseline and the rules counting each one on a
planted history is tests/checker/test_planted.py)."""

from __future__ import annotations

from pytest_kreplica.history import SEMANTICS
from pytest_kreplica.report import html
from pytest_kreplica.validation import tradeoffs
from pytest_kreplica.validation.checker import rules
from pytest_kreplica.validation.checker.anomalies import (
    ANOMALIES,
    ANOMALY_TABLE,
    EXCUSABLE,
    INVALIDATING,
    LOOKUP_COUNTS,
    NAMES,
)
from pytest_kreplica.validation.checker.verdict import TOTALS, Verdict

# shared/HISTORY.md, "Validity by semantics": the contract the registry must encode
CONTRACT = {
    "at-least-once": {"lost", "unseen", "inconsistent_offsets", "aborted_reads", "unexpected",
                      "nonmonotonic_polls", "poll_skips"},
    "exactly-once": {"lost", "unseen", "duplicated", "inconsistent_offsets", "aborted_reads",
                     "unexpected", "nonmonotonic_polls", "poll_skips"},
    "at-most-once": {"duplicated", "inconsistent_offsets", "aborted_reads", "unexpected",
                     "nonmonotonic_polls", "poll_skips"},
}
# docs/history.md, version 2: the transactional and read-process-write anomalies
TXN_BREAK = {"aborted_read": set(CONTRACT), "precommitted_read": set(CONTRACT),
             "torn_transaction": set(CONTRACT), "lost_committed": {"at-least-once",
                                                                   "exactly-once"},
             "read_cycle": set(CONTRACT), "copied_twice": {"exactly-once"},
             "uncopied": {"at-least-once", "exactly-once"},
             "not_copied": {"at-least-once", "exactly-once"}}
for _name, _semantics in TXN_BREAK.items():
    for _s in _semantics:
        CONTRACT[_s] = CONTRACT[_s] | {_name}


def test_registry_encodes_the_contract():
    assert len(NAMES) == len(ANOMALY_TABLE) == 22  # no name twice
    assert {s: set(v) for s, v in INVALIDATING.items()} == CONTRACT
    assert set(SEMANTICS) == set(INVALIDATING)
    reported_only = {a.name for a in ANOMALY_TABLE if not a.invalidating}
    assert reported_only == {"nonmonotonic_sends", "recovered", "write_cycle", "mixed_cycle",
                             "ru_aborted_read", "ru_precommitted_read"}
    assert all(a.meaning and a.label and a.counted_per in ("id", "offset", "pair", "transaction",
                                                           "cycle")
               for a in ANOMALY_TABLE)


def test_spark_rules_count_exactly_the_registry():
    from pytest_kreplica.validation.checker import cycles, txn

    assert sorted((*rules.ID_FLAGS, *rules.PAIR_COUNTS, *txn.TXN_ANOMALIES,
                   *cycles.CYCLE_ANOMALIES)) == sorted(NAMES)


def test_verdict_counts_and_validity_follow_the_registry():
    verdict = Verdict.from_counts({}, "at-least-once")
    assert set(verdict.counts) == {*NAMES, *TOTALS}
    for semantics in SEMANTICS:
        for name in NAMES:
            broken = Verdict.from_counts({name: 1}, semantics)
            assert broken.valid is (semantics not in ANOMALIES[name].breaks), (name, semantics)
            assert broken.failures() == ([name] if not broken.valid else [])


def test_tradeoff_excuses_only_what_the_registry_allows():
    assert set(EXCUSABLE) == {"lost", "unseen", "inconsistent_offsets"}
    assert tradeoffs.EXCUSABLE is EXCUSABLE
    # an invalidating anomaly the registry does not excuse refuses the trade-off
    doc = tradeoffs.judge("at-least-once", {"lost": 1, "poll_skips": 2}, ".")
    assert doc["accepted"] is False and "poll_skips" in doc["reason"]


def test_report_shows_every_registered_anomaly_coloured_by_semantics():
    assert (*NAMES, *LOOKUP_COUNTS) == html.REPORTED
    columns = html.index_columns([{"counts": {name: 1 for name in html.REPORTED}}])
    assert set(columns) - {"sent", "acked"} == set(html.REPORTED)
    for semantics in SEMANTICS:
        for name in NAMES:
            want = " bad" if name in CONTRACT[semantics] else " warn"
            assert html._count_class(name, 1, semantics) == want, (name, semantics)
    assert html._count_class("in_log", 1, "at-least-once") == " warn"
