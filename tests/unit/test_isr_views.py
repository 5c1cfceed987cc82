"""The ISR a fault is judged against: every broker's view, agreed or joined (``isrviews``)."""

import pytest

from pytest_kreplica.cluster.base import PartitionState
from pytest_kreplica.errors import ClusterError
from pytest_kreplica.faults.isrviews import isr_before


def _view(isr, leader=3, epoch=1):
    return PartitionState("t", 0, leader, epoch, (1, 2, 3), tuple(isr))


class _Brokers:
    """Answers each look with the next set of per-broker views (the last one repeats)."""

    def __init__(self, *looks):
        self.looks, self.asked = list(looks), 0

    def partition_views(self, topic, partition, timeout=30.0):
        self.asked += 1
        look = self.looks[min(self.asked, len(self.looks)) - 1]
        if isinstance(look, Exception):
            raise look
        return look


def test_views_that_agree_give_their_isr_at_the_first_look():
    brokers = _Brokers({1: _view([1, 3]), 2: _view([3, 1]), 3: _view([1, 3])})
    assert isr_before(brokers, "t", 0) == ([1, 3], None)
    assert brokers.asked == 1


def test_a_broker_behind_is_waited_for_until_it_agrees():
    """The CI failure: one broker still showed [1, 3] after node 2 had rejoined."""
    behind = {1: _view([1, 3]), 2: _view([1, 2, 3]), 3: _view([1, 2, 3])}
    caught_up = {n: _view([1, 2, 3]) for n in (1, 2, 3)}
    brokers = _Brokers(behind, behind, caught_up)
    assert isr_before(brokers, "t", 0, timeout=5) == ([1, 2, 3], None)
    assert brokers.asked == 3


def test_views_that_never_agree_give_their_union_and_name_each_view():
    views = {1: _view([1, 3]), 2: _view([2, 3], epoch=2)}
    isr, note = isr_before(_Brokers(views), "t", 0, timeout=0.3)
    assert isr == [1, 2, 3]
    assert note.startswith("brokers disagreed on the ISR")
    assert "node 1: leader 3 epoch 1 isr [1, 3]" in note and "node 2: leader 3 epoch 2" in note


def test_one_look_only_when_asked_for_none():
    brokers = _Brokers({1: _view([1, 3]), 2: _view([1, 2, 3])}, {1: _view([1, 2, 3])})
    isr, note = isr_before(brokers, "t", 0, timeout=0)
    assert (isr, brokers.asked) == ([1, 2, 3], 1) and note


def test_no_broker_answering_is_an_error_not_an_empty_isr():
    brokers = _Brokers(ClusterError("no running node accepts connections"))
    with pytest.raises(ClusterError, match="no running node accepts connections"):
        isr_before(brokers, "t", 0, timeout=0.3)
