"""Loss evidence bounded in time and gathered on every partition the struck node led: a
leader change explains a lost acks=1 record only when the record was acknowledged while it
could still have been on the leader alone (not before the window's start, drawn from the
follower lag bound the cluster ran with), and only on a partition whose own leadership the
fault moved - a pause included, on the facts the nemesis read, never on the failure type."""

from __future__ import annotations

from pytest_kreplica.validation.evidence import (
    LEADER_CHANGE,
    UNCLEAN,
    excusing_events,
    find_excuse,
    window_start_ns,
)
from pytest_kreplica.validation.tradeoffs import judge
from tests.planted_loss import leader_kill, write_lost_m3
from tests.unit.test_tradeoffs import COUNTS, snapshot

S = 10**9  # ns per s
STRIKE = 200 * S
LAG_MS = 5000


def kill(**over):
    """A SIGKILL of the leader of t-0, ISR whole, node 2 elected from it 1 s later."""
    return {"index": 1, "failure": "hard", "target": "leader", "topic": "t", "partition": 0,
            "node": 1, "leader_before": 1, "isr_before": [1, 2, 3], "led_before": ["t-0"],
            "before_ns": STRIKE - S, "lag_bound_ms": LAG_MS, "strike_ns": STRIKE,
            "struck_ns": STRIKE + 1000, "restore_ns": STRIKE + 5 * S, "new_leader": 2,
            "election_s": 1.0, "elected_from_isr": True, **over}


def pause_of_a_follower(leaders_after):
    """A SIGSTOP of node 1, a follower of the watched t-5 and the leader of t-0 and t-1."""
    return {"index": 1, "failure": "soft", "target": "follower", "topic": "t",
            "partition": 5, "node": 1, "leader_before": 2, "isr_before": [1, 2, 3],
            "led_before": ["t-0", "t-1"], "before_ns": STRIKE - S, "lag_bound_ms": LAG_MS,
            "strike_ns": STRIKE, "restore_ns": STRIKE + 10 * S,
            "recovered_ns": STRIKE + 12 * S, "new_leader": None, "election_s": None,
            "elected_from_isr": None,
            "partitions_before": {f"t-{p}": {"leader": leader, "isr": [1, 2, 3]}
                                  for p, leader in ((0, 1), (1, 1), (5, 2))},
            "leaders_after": leaders_after}


def test_the_window_starts_one_and_a_half_lag_bounds_and_the_margin_before_the_isr_read():
    assert window_start_ns(kill()) == STRIKE - S - int(1.5 * LAG_MS * 10**6) - 2 * S
    assert window_start_ns(kill(lag_bound_ms=None)) is None
    (event,) = excusing_events([kill()], {"acks": 1})
    assert event["from_ns"] == window_start_ns(kill()) and event["until_ns"] == STRIKE + 1000
    assert "10.5 s before the strike" in event["why"] and "5000 ms" in event["why"]


def test_a_record_acknowledged_two_minutes_before_a_clean_election_is_not_excused():
    events = excusing_events([kill()], {"acks": 1})
    early = STRIKE - 120 * S
    assert find_excuse(events, "t", 0, early, early + 10**6) is None


def test_a_record_acknowledged_inside_the_window_is_excused():
    events = excusing_events([kill()], {"acks": 1})
    assert find_excuse(events, "t", 0, STRIKE - 3 * S, STRIKE - 3 * S + 10**6) is not None
    # sent before the start, acknowledged after it: it may have reached the leader late
    assert find_excuse(events, "t", 0, STRIKE - 20 * S, STRIKE - 5 * S) is not None
    # acknowledgement unknown: only the send time counts
    assert find_excuse(events, "t", 0, STRIKE - 20 * S) is None


def test_the_two_minutes_earlier_loss_is_refused_by_the_trade_off(tmp_path):
    """The planted run acknowledged m3 at 14 ns; a kill 2 minutes later explains nothing."""
    write_lost_m3(tmp_path)
    snapshot(tmp_path, ["m0", "m1", "m2", "m4", "m5"])
    late = kill(strike_ns=120 * S + 14, struck_ns=120 * S + 15, before_ns=120 * S)
    t = judge("at-least-once", COUNTS, tmp_path, [late], {"acks": 1})
    assert t["accepted"] is False
    assert "no fault explains its loss" in t["reason"]
    assert "acknowledged from 9.500 s before the strike" in t["reason"]
    assert "acknowledged 120.000 s before the strike" in t["reason"]
    t = judge("at-least-once", COUNTS, tmp_path, leader_kill(), {"acks": 1})
    assert t["accepted"] is True, t["reason"]
    assert t["evidence"][0]["from_ns"] is not None and "until_ns" in t["evidence"][0]


def test_without_a_lag_bound_a_leader_change_excuses_nothing(tmp_path):
    write_lost_m3(tmp_path)
    snapshot(tmp_path, ["m0", "m1", "m2", "m4", "m5"])
    bare = [{**leader_kill()[0], "lag_bound_ms": None}]
    t = judge("at-least-once", COUNTS, tmp_path, bare, {"acks": 1})
    assert t["accepted"] is False and "no follower lag bound" in t["reason"]


def test_an_unclean_election_keeps_no_start():
    events = excusing_events([kill(elected_from_isr=False)], {"acks": -1})
    assert [(e["kind"], e["from_ns"]) for e in events] == [(UNCLEAN, None)]
    assert find_excuse(events, "t", 0, STRIKE - 120 * S, STRIKE - 120 * S + 1) is not None


def test_a_pause_that_moved_another_partitions_leadership_excuses_loss_there():
    events = excusing_events([pause_of_a_follower({"t-0": 2, "t-1": 1, "t-5": 2})],
                             {"acks": 1})
    assert [(e["topic"], e["partition"], e["new_leader"]) for e in events] == [("t", 0, 2)]
    (event,) = events
    assert event["kind"] == LEADER_CHANGE.format(acks=1) and event["leader_before"] == 1
    assert event["until_ns"] == STRIKE + 12 * S  # a paused leader: until back in sync
    assert find_excuse(events, "t", 0, STRIKE + 11 * S, STRIKE + 11 * S) is not None
    assert find_excuse(events, "t", 1, STRIKE + 11 * S, STRIKE + 11 * S) is None
    assert find_excuse(events, "t", 0, STRIKE - 120 * S, STRIKE - 119 * S) is None


def test_a_pause_that_moved_no_leadership_excuses_nothing():
    kept = pause_of_a_follower({"t-0": 1, "t-1": 1, "t-5": 2})
    assert excusing_events([kept], {"acks": 1}) == []
    unread = pause_of_a_follower(None)  # the reads after the recovery got no answer
    assert excusing_events([unread], {"acks": 1}) == []
    legacy = {k: v for k, v in kept.items() if k not in ("partitions_before", "leaders_after")}
    assert excusing_events([legacy], {"acks": 1}) == []  # led_before alone is no move


def test_a_kill_excuses_a_partition_it_led_only_where_its_leadership_moved():
    other = kill(partitions_before={"t-0": {"leader": 1, "isr": [1, 2, 3]},
                                    "t-1": {"leader": 1, "isr": [1, 2, 3]},
                                    "t-2": {"leader": 1, "isr": [1, 2, 3]}},
                 leaders_after={"t-0": 2, "t-1": 3, "t-2": 1})
    events = excusing_events([other], {"acks": 1})
    assert [(e["partition"], e["new_leader"]) for e in events] == [(0, 2), (1, 3)]


def test_the_watched_partition_as_before():
    """A kill without a new leader seen still explains the watched partition (the process
    is gone), a pause explains it only once a new leader was seen, and under acks=all
    nothing but an unclean election counts."""
    gone = kill(new_leader=None, election_s=None, elected_from_isr=None)
    assert [e["partition"] for e in excusing_events([gone], {"acks": 1})] == [0]
    paused = kill(failure="soft", recovered_ns=STRIKE + 9 * S)
    (event,) = excusing_events([paused], {"acks": 1})
    assert event["until_ns"] == STRIKE + 9 * S and event["new_leader"] == 2
    kept = kill(failure="soft", new_leader=None, election_s=None, elected_from_isr=None)
    assert excusing_events([kept], {"acks": 1}) == []
    assert excusing_events([kill()], {"acks": -1}) == []


class _Cluster:
    """Three nodes; node 1 leads t-0 and t-1, node 2 leads t-5; pausing node 1 moves the
    leadership of t-0 only (its session ran out there; t-1 had no other replica in sync)."""

    finds_controller = False

    def __init__(self):
        self.leaders = {("t", 0): 1, ("t", 1): 1, ("t", 5): 2}
        self.paused: set[int] = set()

    def node_state(self, node):
        from pytest_kreplica.cluster.base import NodeState

        return NodeState.PAUSED if node in self.paused else NodeState.RUNNING

    def partition_state(self, topic, partition, timeout=30.0):
        from pytest_kreplica.cluster.base import PartitionState

        return PartitionState(topic, partition, self.leaders[(topic, partition)], 0,
                              (1, 2, 3), (1, 2, 3))

    def partition_views(self, topic, partition, timeout=30.0):
        return {None: self.partition_state(topic, partition)}

    def pause(self, node):
        self.leaders[("t", 0)] = 2
        self.paused.add(node)

    def resume(self, node):
        self.paused.discard(node)

    def wait_healthy(self, topics, timeout):
        pass

    def follower_lag_bound_ms(self):
        return LAG_MS


class _Writer:
    def event(self, kind, **fields):
        pass


def test_the_nemesis_records_every_partitions_leadership_around_a_pause():
    from pytest_kreplica.faults.nemesis import Nemesis
    from pytest_kreplica.faults.plan import FaultPlan, FaultSpec

    plan = FaultPlan(seed=1, failure="soft", target="follower", downtime_s=0.1)
    nemesis = Nemesis(_Cluster(), _Writer(), plan, [("t", 0), ("t", 1), ("t", 5)])
    # pick 0.9002: the watched partition t-5 (led by 2), its follower node 1
    rec = nemesis.run_fault(FaultSpec(1, "soft", "follower", 0.0, 0.1, 0.9002))
    assert rec.error is None and rec.node == 1 and (rec.topic, rec.partition) == ("t", 5)
    assert rec.lag_bound_ms == LAG_MS and rec.before_ns <= rec.strike_ns
    assert rec.partitions_before == {"t-0": {"leader": 1, "isr": [1, 2, 3]},
                                     "t-1": {"leader": 1, "isr": [1, 2, 3]},
                                     "t-5": {"leader": 2, "isr": [1, 2, 3]}}
    assert rec.led_before == ["t-0", "t-1"]
    assert rec.leaders_after == {"t-0": 2, "t-1": 1, "t-5": 2}
    assert rec.after_ns >= rec.recovered_ns
    events = excusing_events([rec.to_dict()], {"acks": 1})
    assert [(e["topic"], e["partition"], e["new_leader"]) for e in events] == [("t", 0, 2)]
