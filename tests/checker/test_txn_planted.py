"""History version 2 (transactions, consumer groups): small planted histories with exact
expected counts, checked by the real Spark checker (the baseline knows version 1 only)."""

from __future__ import annotations

import pytest

from pytest_kreplica.validation.checker import ANOMALIES
from pytest_kreplica.validation.checker.verdict import is_valid

ALO, EO, AMO = "at-least-once", "exactly-once", "at-most-once"
EVERY = {ALO, EO, AMO}
TXN_NAMES = {"aborted_read", "precommitted_read", "lost_committed", "torn_transaction",
             "copied_twice", "uncopied", "not_copied", "write_cycle", "read_cycle",
             "mixed_cycle", "ru_aborted_read", "ru_precommitted_read"}


class Txn:
    """Writes a version 2 history through the real RunWriter (sends with ``txn``, the txns
    table, polls with isolation and generation, rebalances with assignments)."""

    def __init__(self, h):
        self.h = h
        h.meta(history_version=2)

    def pipeline_reads(self, *topics):
        """run.json names the topics the pipeline reads (what ``not_copied`` judges)."""
        self.h.meta(history_version=2, pipeline={"inputs": list(topics), "output": "u"})
        return self

    def txn(self, name, records, outcome="committed", process=0, topic="t", offsets=None):
        """``records``: (id, partition, offset) or, for a pipeline's copies, (id, partition,
        offset, source id), all acknowledged; ``offsets``: the consumer positions
        (topic, partition, offset) committed with it; the transaction ends now."""
        h = self.h
        begin = next(h.clock)
        for rid, partition, offset, *source in records:
            t0 = next(h.clock)
            h.writer.send(process=process, topic=topic, partition=partition, id=rid,
                          offset=offset, status="ok", invoke_ns=t0, complete_ns=next(h.clock),
                          txn=name, source=source[0] if source else None)
        end = next(h.clock)
        h.writer.txn(process=process, txn=name, status=outcome, begin_ns=begin, end_ns=end,
                     complete_ns=next(h.clock), offsets=offsets)
        return self

    def read(self, process, partition, records, isolation="read_committed", generation=1,
             txn=None, topic="t"):
        """One poll: ``records`` as (offset, id); ``txn``: the read-process-write
        transaction it belongs to."""
        h = self.h
        n = h.polls_made.get(process, 0)
        h.polls_made[process] = n + 1
        t = next(h.clock)
        for i, (offset, rid) in enumerate(records):
            h.writer.poll(process=process, poll=n, topic=topic, partition=partition,
                          offset=offset, id=rid, time_ns=t, index=i, isolation=isolation,
                          generation=generation, txn=txn)
        return self

    def rebalance(self, process, held, generation):
        self.h.writer.event("rebalance", process=process, time_ns=next(self.h.clock),
                            assignment=[("t", p) for p in held], generation=generation)
        return self


def clean_with_aborts_and_an_observer(t):
    t.txn("T1", [("m0", 0, 0), ("m1", 1, 0)])
    t.txn("T2", [("a0", 0, 2), ("a1", 1, 2)], "aborted")
    t.txn("T3", [("m2", 0, 4), ("m3", 1, 4)])
    # the read_uncommitted observer sees the aborted records: legitimate, and its reads do
    # not make the aborted offsets "known" to the read_committed consumer's skip rule
    t.read(9, 0, [(0, "m0"), (2, "a0"), (4, "m2")], isolation="read_uncommitted",
           generation=None)
    t.read(1, 0, [(0, "m0"), (4, "m2")]).read(1, 1, [(0, "m1"), (4, "m3")])
    return {}, set()


def read_uncommitted_group_member(t):
    """The weaker setting: a group member reading read_uncommitted (Kafka's consumer
    default) sees an aborted record and one before its commit. Both are reported, neither
    breaks the run, and its reads count for the version 1 rules (nothing lost)."""
    t.txn("T1", [("m0", 0, 0)])
    t.txn("T2", [("a0", 0, 1)], "aborted")
    t.read(1, 0, [(0, "m0"), (1, "a0"), (3, "m1")], isolation="read_uncommitted")
    t.txn("T3", [("m1", 0, 3)])
    return {"ru_aborted_read": 1, "ru_precommitted_read": 1}, set()


def aborted_read(t):
    t.txn("T1", [("m0", 0, 0)])
    t.txn("T2", [("a0", 0, 2)], "aborted")
    t.read(1, 0, [(0, "m0"), (2, "a0")])
    return {"aborted_read": 1}, EVERY


def precommitted_read(t):
    t.txn("T0", [("z0", 0, 0)])
    t.read(1, 0, [(0, "z0"), (1, "m0")])  # m0 read before T1 even asked to commit
    t.txn("T1", [("m0", 0, 1), ("m1", 0, 2)])
    t.read(1, 0, [(2, "m1")])
    return {"precommitted_read": 1}, EVERY


def lost_committed(t):
    t.txn("T1", [("m0", 0, 0), ("m1", 0, 1)])
    t.txn("T2", [("m2", 0, 3)])
    t.read(1, 0, [(0, "m0"), (3, "m2")])
    # m1 is lost (v1), the skip is a poll skip, T1 is lost and torn for reader 1
    return ({"lost": 1, "poll_skips": 1, "lost_committed": 1, "torn_transaction": 1},
            EVERY)


def torn_transaction(t):
    t.txn("T0", [("z0", 1, 0)])
    t.txn("T1", [("m0", 0, 0), ("m1", 1, 1)])
    t.txn("T2", [("m2", 0, 2), ("z2", 1, 3)])
    t.read(2, 1, [(0, "z0"), (1, "m1"), (3, "z2")])  # someone else read m1: not lost
    t.read(1, 0, [(0, "m0"), (2, "m2")]).read(1, 1, [(0, "z0"), (3, "z2")])
    return {"poll_skips": 1, "torn_transaction": 1}, EVERY


def no_tear_across_an_owner_change(t):
    t.txn("T0", [("z0", 1, 0)])
    t.txn("T1", [("m0", 0, 0), ("m1", 1, 1)])
    t.txn("T2", [("m2", 0, 2), ("z2", 1, 3)])
    t.read(1, 0, [(0, "m0")]).read(1, 1, [(0, "z0")])
    t.rebalance(1, [0], 2).rebalance(2, [1], 2)  # partition 1 moves to process 2
    t.read(2, 1, [(1, "m1")], generation=2)
    t.rebalance(2, [], 3).rebalance(1, [0, 1], 3)  # and back
    t.read(1, 0, [(2, "m2")], generation=3).read(1, 1, [(3, "z2")], generation=3)
    return {}, set()


def skip_across_a_rebalance_that_kept_the_partition(t):
    t.txn("T1", [("m0", 0, 0)]).txn("T2", [("m1", 0, 1)]).txn("T3", [("m2", 0, 2)])
    t.read(2, 0, [(1, "m1")], generation=5)
    t.read(1, 0, [(0, "m0")])
    t.rebalance(1, [0, 1], 2)  # a rebalance, but partition 0 stayed with process 1
    t.read(1, 0, [(2, "m2")], generation=2)
    return {"poll_skips": 1}, EVERY


def indeterminate_txn_unread_is_not_lost(t):
    t.txn("T1", [("m0", 0, 0)], "info")
    t.txn("T2", [("m1", 0, 2)])
    t.read(1, 0, [(2, "m1")])
    return {}, set()


def write_cycle(t):
    """T1 appends before T2 on partition 0 and after it on partition 1 (G0): Kafka allows
    it, so it is reported and the run stays valid."""
    t.txn("T1", [("a0", 0, 0), ("a1", 1, 1)])
    t.txn("T2", [("b0", 0, 1), ("b1", 1, 0)], process=1)
    t.read(1, 0, [(0, "a0"), (1, "b0")]).read(1, 1, [(0, "b1"), (1, "a1")])
    return {"write_cycle": 1}, set()


def back_edge_without_a_cycle(t):
    """T2 committed first but T1's record precedes it: a back edge in commit order, no
    cycle (and T3's interleaving with T2 on one partition only makes none either)."""
    t.txn("T2", [("b0", 0, 1), ("b1", 1, 0)], process=2)
    t.txn("T1", [("a0", 0, 0)])
    t.txn("T3", [("c1", 1, 1), ("c0", 0, 2)], process=3)
    t.read(1, 0, [(0, "a0"), (1, "b0"), (2, "c0")]).read(1, 1, [(0, "b1"), (1, "c1")])
    return {}, set()


def read_cycle(t):
    """Read-process-write: T1 read T2's record and T2 read T1's, both committed (G1c of
    write-read edges only): each read the other before it committed."""
    t.read(5, 1, [(0, "y0")], txn="T1")
    t.read(6, 0, [(0, "x0")], txn="T2")
    t.txn("T1", [("x0", 0, 0)])
    t.txn("T2", [("y0", 1, 0)])
    t.read(1, 0, [(0, "x0")]).read(1, 1, [(0, "y0")])
    return {"read_cycle": 1, "precommitted_read": 2}, EVERY


def mixed_cycle(t):
    """T1 appends before T2 on partition 0, and T1 read T2's record on partition 1:
    a cycle of one ww and one wr edge (G1c), allowed by Kafka's protocol."""
    t.txn("T2", [("b0", 0, 1), ("b1", 1, 0)])
    t.read(5, 1, [(0, "b1")], txn="T1")
    t.txn("T1", [("a0", 0, 0)], process=1)
    t.read(1, 0, [(0, "a0"), (1, "b0")]).read(1, 1, [(0, "b1")])
    return {"mixed_cycle": 1}, set()


def _pipeline_input(t):
    """Three committed input records on t/0 (offsets 0, 1, 2), read by the pipeline (5)."""
    t.txn("T1", [("m0", 0, 0), ("m1", 0, 1)]).txn("T2", [("m2", 0, 2)])
    t.read(5, 0, [(0, "m0"), (1, "m1")], txn="C1")
    return t


def pipeline_copies_once(t):
    """Exactly-once read-process-write: an aborted copy, then the rewound copy committed
    with the consumer position; m2 lies above that position, so it is not yet owed."""
    _pipeline_input(t)
    t.txn("C1", [("c0", 0, 0, "m0"), ("c1", 0, 1, "m1")], "aborted", process=5, topic="u",
          offsets=[("t", 0, 2)])
    t.read(6, 0, [(0, "m0"), (1, "m1")], txn="C2")
    t.txn("C2", [("c2", 0, 3, "m0"), ("c3", 0, 4, "m1")], process=6, topic="u",
          offsets=[("t", 0, 2)])
    t.read(1, 0, [(0, "m0"), (1, "m1"), (2, "m2")])
    t.read(1, 0, [(3, "c2"), (4, "c3")], topic="u")
    return {}, set()


def copied_twice(t):
    """The pipeline copied m0 and m1 in C1, committed, then again in C2 (a zombie that was
    not fenced): each source has two committed copies."""
    _pipeline_input(t)
    t.txn("C1", [("c0", 0, 0, "m0"), ("c1", 0, 1, "m1")], process=5, topic="u",
          offsets=[("t", 0, 2)])
    t.read(6, 0, [(0, "m0"), (1, "m1")], txn="C2")
    t.txn("C2", [("c2", 0, 2, "m0"), ("c3", 0, 3, "m1")], process=6, topic="u",
          offsets=[("t", 0, 2)])
    t.read(1, 0, [(0, "m0"), (1, "m1"), (2, "m2")])
    t.read(1, 0, [(0, "c0"), (1, "c1"), (2, "c2"), (3, "c3")], topic="u")
    return {"copied_twice": 2}, {EO}


def uncopied(t):
    """The pipeline committed position 3 on t/0 but copied only m0 and m2: m1 was consumed
    for good without a copy."""
    _pipeline_input(t)
    t.read(5, 0, [(2, "m2")], txn="C1")
    t.txn("C1", [("c0", 0, 0, "m0"), ("c2", 0, 1, "m2")], process=5, topic="u",
          offsets=[("t", 0, 3)])
    t.read(1, 0, [(0, "m0"), (1, "m1"), (2, "m2")])
    t.read(1, 0, [(0, "c0"), (1, "c2")], topic="u")
    return {"uncopied": 1}, {ALO, EO}


def not_copied(t):
    """The run says the pipeline reads t; it committed position 2 and stalled: m2, above
    that position, was never copied (a pipeline that copies nothing cannot pass)."""
    t.pipeline_reads("t")
    _pipeline_input(t)
    t.txn("C1", [("c0", 0, 0, "m0"), ("c1", 0, 1, "m1")], process=5, topic="u",
          offsets=[("t", 0, 2)])
    t.read(1, 0, [(0, "m0"), (1, "m1"), (2, "m2")])
    t.read(1, 0, [(0, "c0"), (1, "c1")], topic="u")
    return {"not_copied": 1}, {ALO, EO}


def a_pipeline_that_copied_everything(t):
    t.pipeline_reads("t")
    _pipeline_input(t)
    t.read(5, 0, [(2, "m2")], txn="C1")
    t.txn("C1", [("c0", 0, 0, "m0"), ("c1", 0, 1, "m1"), ("c2", 0, 2, "m2")], process=5,
          topic="u", offsets=[("t", 0, 3)])
    t.read(1, 0, [(0, "m0"), (1, "m1"), (2, "m2")])
    t.read(1, 0, [(0, "c0"), (1, "c1"), (2, "c2")], topic="u")
    return {}, set()


def unlabelled_reads_of_an_aborted_transaction(t):
    """A poll naming no isolation is Kafka's consumer default, read_uncommitted: its reads
    of an aborted and of a still open transaction are counted, not dropped unseen."""
    t.txn("T1", [("m0", 0, 0)])
    t.txn("T2", [("a0", 0, 1)], "aborted")
    t.read(1, 0, [(0, "m0"), (1, "a0")], isolation=None, generation=None)
    t.read(1, 0, [(3, "o0")], isolation=None, generation=None)
    t.txn("T3", [("o0", 0, 3)])  # its commit invoked after the read
    return {"ru_aborted_read": 1, "ru_precommitted_read": 1}, set()


CASES = [clean_with_aborts_and_an_observer, read_uncommitted_group_member, aborted_read,
         precommitted_read, lost_committed, torn_transaction, no_tear_across_an_owner_change,
         skip_across_a_rebalance_that_kept_the_partition, indeterminate_txn_unread_is_not_lost,
         write_cycle, back_edge_without_a_cycle, read_cycle, mixed_cycle,
         pipeline_copies_once, copied_twice, uncopied, not_copied,
         a_pipeline_that_copied_everything, unlabelled_reads_of_an_aborted_transaction]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_txn_planted(case, history, spark_session):
    from pytest_kreplica.validation.checker import check

    h = history()
    expected, invalid_under = case(Txn(h))
    verdict = check(h.close())
    found = {name: verdict.counts[name] for name in ANOMALIES if verdict.counts[name]}
    assert found == expected, verdict.summary()
    for semantics in (ALO, EO, AMO):
        assert is_valid(verdict.counts, semantics) == (semantics not in invalid_under), semantics
    for name in expected:
        assert verdict.examples.get(name), f"no example for {name}: {verdict.examples}"
    assert verdict.extra["history_version"] == 2


def test_version_1_rebalance_with_an_assignment_keeps_todays_rule(history, spark_session):
    """Without version 2 (no history_version, no txns table) a rebalance exempts every
    partition of its process, even when the event carries an assignment column."""
    from pytest_kreplica.validation.checker import check

    h = history()
    h.acked(3).polls(2, [1]).polls(1, [0])
    h.writer.event("rebalance", process=1, time_ns=next(h.clock), assignment=[("t", 0)])
    h.polls(1, [2])
    verdict = check(h.close())
    assert verdict.counts["poll_skips"] == 0 and verdict.valid, verdict.summary()
    assert "history_version" not in verdict.extra


def test_txn_cases_cover_the_transactional_anomalies():
    class Ignore:
        def __getattr__(self, _name):
            return self

        def __call__(self, *args, **kwargs):
            return self

    planted = {name for case in CASES for name in case(Ignore())[0]}
    assert planted >= TXN_NAMES and set(ANOMALIES) >= TXN_NAMES


def test_baseline_refuses_a_version_2_history(history):
    from pytest_kreplica.errors import InputError
    from pytest_kreplica.validation.checker.baseline import check_baseline

    h = history()
    Txn(h).txn("T1", [("m0", 0, 0)])
    with pytest.raises(InputError, match="history version 2"):
        check_baseline(h.close())
