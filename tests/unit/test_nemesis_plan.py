"""Pure logic of the nemesis: seeded schedules, victim choice and the recorded timings.
The faults themselves are tested against a real cluster in tests/integration."""

from __future__ import annotations

import pytest

from pytest_kreplica.cluster.base import PartitionState
from pytest_kreplica.errors import InputError
from pytest_kreplica.faults import (
    FAULT_RECORD_PHASES,
    FaultPlan,
    FaultRecord,
    Nemesis,
    scenario_checks,
)
from pytest_kreplica.faults.registry import FAILURES


def test_same_seed_same_schedule_other_seed_other_schedule():
    a = FaultPlan(seed=42, failure="random", target="random", failures=6).preview()
    b = FaultPlan(seed=42, failure="random", target="random", failures=6).preview()
    c = FaultPlan(seed=43, failure="random", target="random", failures=6).preview()
    assert a == b
    assert a != c
    assert [s.index for s in a] == [1, 2, 3, 4, 5, 6]


def test_fixed_failure_and_target_are_kept_and_delays_within_bounds():
    plan = FaultPlan(seed=1, failure="hard", target="follower", failures=3, downtime_s=4.0,
                     delay_s=(0.5, 1.5))
    specs = plan.preview()
    assert len(specs) == 3
    assert {(s.failure, s.target, s.downtime_s) for s in specs} == {("hard", "follower", 4.0)}
    assert all(0.5 <= s.delay_s <= 1.5 and 0 <= s.pick < 1 for s in specs)


def test_random_draws_cover_every_failure_and_target():
    specs = FaultPlan(seed=7, failure="random", target="random", failures=60).preview(60)
    assert {s.failure for s in specs} == {"clean", "hard", "soft"}
    assert {s.target for s in specs} == {"leader", "follower", "controller"}


def test_duration_plan_is_unbounded_until_stopped():
    plan = FaultPlan(seed=3, failure="hard", target="leader", duration_s=60.0)
    assert len(plan.preview(limit=50)) == 50


@pytest.mark.parametrize("key,value", [("failure", "flood"), ("target", "broker")])
def test_unsupported_values_are_one_line_input_errors(key, value):
    kwargs = {"failure": "hard", "target": "leader", key: value}
    with pytest.raises(InputError, match=f"{key} '{value}' is not allowed; allowed: "):
        FaultPlan(seed=1, **kwargs)


def test_plan_dict_carries_seed_and_schedule():
    d = FaultPlan(seed=9, failure="soft", target="controller", failures=2).to_dict()
    assert d["seed"] == 9 and len(d["schedule"]) == 2
    assert d["schedule"][0]["failure"] == "soft"


class _Roles:
    """Answers the two role questions the victim choice asks; nothing else."""

    def active_controller(self):
        return 3


STATE = PartitionState("t", 0, leader=2, leader_epoch=4, replicas=(1, 2, 3), isr=(1, 2, 3))


@pytest.mark.parametrize("target,allowed", [("leader", {2}), ("follower", {1, 3}),
                                            ("controller", {3})])
def test_victim_follows_the_role(target, allowed):
    nem = Nemesis(_Roles(), None, FaultPlan(seed=1, failure="hard", target=target),
                  [("t", 0)])
    victims = {nem._choose_victim(spec, STATE)
               for spec in FaultPlan(seed=5, failure="hard", target=target,
                                     failures=20).preview()}
    assert victims == allowed


def test_follower_of_a_single_replica_is_an_input_error():
    nem = Nemesis(_Roles(), None, FaultPlan(seed=1, failure="hard", target="follower"),
                  [("t", 0)])
    alone = PartitionState("t", 0, leader=1, leader_epoch=0, replicas=(1,), isr=(1,))
    spec = FaultPlan(seed=1, failure="hard", target="follower").preview()[0]
    with pytest.raises(InputError, match="replication_factor >= 2"):
        nem._choose_victim(spec, alone)


def test_record_durations():
    rec = FaultRecord(1, "hard", "leader", "t", 0, node=2, strike_ns=1_000_000_000,
                      restore_ns=6_000_000_000, recovered_ns=9_500_000_000)
    assert rec.fault_s == 5.0 and rec.recovery_s == 3.5
    d = rec.to_dict()
    assert all(k in d for k in FAULT_RECORD_PHASES)
    assert FaultRecord(2, "soft", "leader", "t", 0).recovery_s is None


def _rec(**kw):
    base = dict(index=1, failure="hard", target="leader", topic="t", partition=0, node=1,
                leader_before=1, isr_before=[1, 2, 3], strike_ns=0, restore_ns=5 * 10**9,
                recovered_ns=8 * 10**9)
    base.update(kw)
    return FaultRecord(**base)


def test_checks_pass_for_a_quick_election_from_the_isr():
    checks = scenario_checks([_rec(new_leader=2, election_s=3.1, elected_from_isr=True)])
    assert [c["ok"] for c in checks] == [True, True, True]
    assert "1 -> 2 after 3.10 s" in checks[1]["detail"]


def test_checks_fail_slow_election_outside_isr_missing_election_and_no_recovery():
    slow = scenario_checks([_rec(new_leader=4, election_s=25.0, elected_from_isr=False)],
                           election_bound_s=20)
    assert [c["ok"] for c in slow] == [True, False, False]
    assert scenario_checks([_rec(new_leader=4, election_s=2.0, elected_from_isr=False)],
                           unclean_leader_election=True)[2]["ok"] is True
    missing = scenario_checks([_rec()])
    assert missing[1]["name"].endswith("new leader elected") and not missing[1]["ok"]
    broken = scenario_checks([_rec(recovered_ns=None, error="NodeError: did not start")])
    assert not broken[0]["ok"] and "did not start" in broken[0]["detail"]


def test_soft_pause_that_kept_the_leader_and_follower_faults_are_not_failures():
    kept = _rec(failure="soft", election_note="the leader kept its leadership")
    assert all(c["ok"] for c in scenario_checks([kept]))
    follower = _rec(target="follower", node=2, leader_before=1)
    assert [c["ok"] for c in scenario_checks([follower])] == [True]


class _FakeProcess:
    """Stands in for MirrorMaker 2: the fault methods flip a state (pure runner logic; the
    real process is failed in tests/integration/test_mirror_maker.py)."""

    def __init__(self):
        from pytest_kreplica.cluster.base import NodeState

        self.states = NodeState
        self.state = NodeState.RUNNING
        self.pid = 4242
        self.calls: list[str] = []

    def _to(self, name, state):
        self.calls.append(name)
        self.state = state

    def kill(self):
        self._to("kill", self.states.STOPPED)

    def terminate(self):
        self._to("terminate", self.states.STOPPED)

    def pause(self):
        self._to("pause", self.states.PAUSED)

    def resume(self):
        self._to("resume", self.states.RUNNING)

    def start(self):
        self._to("start", self.states.RUNNING)


class _Events:
    def __init__(self):
        self.rows = []

    def event(self, kind, **kw):
        self.rows.append({"kind": kind, **kw})


@pytest.mark.parametrize("failure,strike,restore,state", [
    ("hard", "kill", "start", "stopped"), ("clean", "terminate", "start", "stopped"),
    ("soft", "pause", "resume", "paused")])
def test_component_faults_share_the_runner_record_and_events(failure, strike, restore, state):
    from pytest_kreplica.faults import Component

    proc, events, waited = _FakeProcess(), _Events(), []
    comp = Component("mirror-maker", "MirrorMaker 2", proc, lambda: 17,
                     lambda base, timeout: waited.append((base, timeout)))
    plan = FaultPlan(seed=5, failure=failure, target="mirror-maker", failures=2,
                     downtime_s=0.0, delay_s=(0.0, 0.01))
    records = Nemesis(None, events, plan, [("t", 0)], components={"mirror-maker": comp},
                      recovery_timeout=9.0).run()
    assert proc.calls == [strike, restore] * 2
    assert [r.state_after_strike for r in records] == [state, state]
    assert all(r.node == "mirror-maker" and r.topic is None and r.error is None
               and r.progress_at_restore == 17 and r.recovery_s is not None for r in records)
    assert waited == [(17, 9.0), (17, 9.0)]
    assert [e["kind"] for e in events.rows] == [strike, restore, "recovered"] * 2
    assert {e["node"] for e in events.rows} == {"mirror-maker"}
    checks = scenario_checks(records)
    assert len(checks) == 2 and all(c["ok"] and "working again" in c["detail"]
                                    for c in checks)


def test_component_that_does_not_recover_fails_its_fault():
    from pytest_kreplica.errors import ClusterError
    from pytest_kreplica.faults import Component

    def never(base, timeout):
        raise ClusterError("expected mirroring to move again within 9 s; last seen: 0")

    comp = Component("mirror-maker", "MirrorMaker 2", _FakeProcess(), lambda: 0, never)
    plan = FaultPlan(seed=5, failure="hard", target="mirror-maker", downtime_s=0.0,
                     delay_s=(0.0, 0.01))
    nemesis = Nemesis(None, _Events(), plan, [("t", 0)], components={"mirror-maker": comp})
    with pytest.raises(ClusterError, match="restore of MirrorMaker 2 failed.*move again"):
        nemesis.run()
    (check,) = scenario_checks(nemesis.records)
    assert not check["ok"]


def test_component_is_restored_even_when_its_progress_cannot_be_read(monkeypatch):
    """Progress is read from the target cluster: a transient client error is retried, and
    one that lasts is noted without leaving the component down."""
    from pytest_kreplica.errors import ClusterError
    from pytest_kreplica.faults import Component
    from pytest_kreplica.faults import nemesis as nemesis_module

    monkeypatch.setattr(nemesis_module, "PROGRESS_READ_S", 0.6)
    answers = iter([TimeoutError("end offsets"), 17])

    def flaky():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    proc, waited = _FakeProcess(), []
    comp = Component("mirror-maker", "MirrorMaker 2", proc, flaky,
                     lambda base, timeout: waited.append(base))
    plan = FaultPlan(seed=5, failure="hard", target="mirror-maker", downtime_s=0.0,
                     delay_s=(0.0, 0.01))
    (record,) = Nemesis(None, _Events(), plan, [("t", 0)],
                        components={"mirror-maker": comp}).run()
    assert proc.calls == ["kill", "start"] and waited == [17]
    assert record.error is None and record.progress_at_restore == 17

    def broken():
        raise TimeoutError("target cluster unreachable")

    proc = _FakeProcess()
    comp = Component("mirror-maker", "MirrorMaker 2", proc, broken, lambda base, timeout: None)
    nemesis = Nemesis(None, _Events(), plan, [("t", 0)], components={"mirror-maker": comp})
    with pytest.raises(ClusterError, match="progress of MirrorMaker 2 unread"):
        nemesis.run()
    assert proc.calls == ["kill", "start"] and proc.state is proc.states.RUNNING


def test_component_target_without_its_component_is_an_input_error():
    plan = FaultPlan(seed=1, failure="hard", target="mirror-maker")
    with pytest.raises(InputError, match="target 'mirror-maker' needs that component"):
        Nemesis(None, _Events(), plan, [("t", 0)])


@pytest.mark.parametrize("failure,expected", [("hard", "stopped"), ("clean", "stopped"),
                                              ("soft", "paused")])
def test_a_strike_that_leaves_the_victim_running_is_a_fault_that_did_not_act(failure,
                                                                             expected):
    """The nemesis reads the victim's state back after the strike: a strike that did
    nothing fails the fault (a harness error) and the victim is still restored."""
    from pytest_kreplica.errors import ClusterError, HarnessError
    from pytest_kreplica.faults import Component

    proc = _FakeProcess()
    proc.kill = proc.terminate = proc.pause = lambda: proc.calls.append("no-op")
    comp = Component("mirror-maker", "MirrorMaker 2", proc, lambda: 1, lambda b, t: None)
    plan = FaultPlan(seed=5, failure=failure, target="mirror-maker", downtime_s=0.0,
                     delay_s=(0.0, 0.01))
    events = _Events()
    nemesis = Nemesis(None, events, plan, [("t", 0)], components={"mirror-maker": comp})
    with pytest.raises(ClusterError) as info:
        nemesis.run()
    assert isinstance(info.value, HarnessError)
    finding = (f"{failure} did not act on MirrorMaker 2: expected its state {expected} after "
               f"the strike, seen running")
    assert finding in str(info.value)
    kinds = [e["kind"] for e in events.rows]
    strike, restore = FAILURES[failure].event, FAILURES[failure].restore_event
    assert kinds[:3] == [strike, "fault-did-not-act", restore], kinds  # on the timeline
    assert finding in events.rows[1]["detail"] and events.rows[1]["node"] == "mirror-maker"
    assert proc.calls[0] == "no-op" and len(proc.calls) == 2  # restored all the same
    (check,) = scenario_checks(nemesis.records)
    assert not check["ok"] and "did not act" in check["detail"]


def test_a_clean_stop_killed_at_its_deadline_is_judged_from_the_kill():
    # SIGTERM at 0, SIGKILL at 30 s (struck_ns), a new leader 0.7 s after the kill
    became = _rec(failure="clean", new_leader=2, election_s=30.7, elected_from_isr=True,
                  struck_ns=30 * 10**9, became="hard")
    assert became.killed_after_s == 30.0
    checks = scenario_checks([became])
    assert [c["ok"] for c in checks] == [True, True, True]
    assert checks[1]["name"].endswith("new leader within 20 s of the SIGKILL")
    assert "0.70 s after the kill" in checks[1]["detail"]
    slow = _rec(failure="clean", new_leader=2, election_s=55.0, elected_from_isr=True,
                struck_ns=30 * 10**9, became="hard")
    assert not scenario_checks([slow])[1]["ok"]
    # a controlled stop that finished keeps the bound from the SIGTERM
    finished = _rec(failure="clean", new_leader=2, election_s=30.7, elected_from_isr=True,
                    struck_ns=30 * 10**9)
    assert finished.killed_after_s is None
    assert not scenario_checks([finished])[1]["ok"]


def test_a_strike_that_says_it_killed_at_the_deadline_marks_the_record_hard():
    from pytest_kreplica.cluster.base import Cluster

    rec = _rec(failure="clean")
    rec.struck(12 * 10**9, Cluster.killed_at_deadline(1, 168.0))
    assert rec.became == "hard" and rec.killed_after_s == 12.0
    assert "outlasted 168 s" in rec.to_dict()["measured"]
    finished = _rec(failure="clean")
    finished.struck(3 * 10**9, None)
    assert finished.became is None and finished.killed_after_s is None
