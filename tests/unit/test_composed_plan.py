"""Composed failures (``failure: a+b``), pure logic: the matrix value and what it refuses in
one line, the seeded plan of the two parts (replayed the same), the overlap runner on a
stand-in nemesis (the second part strikes while the first holds; one that did not overlap
is an error), and the loss evidence and availability bounds of two overlapping windows.
The same on real brokers: tests/integration/test_composed_faults.py."""

from __future__ import annotations

import textwrap
import threading
import time

import pytest

from pytest_kreplica.errors import InputError, MatrixError
from pytest_kreplica.faults.overlap import MIN_OVERLAP_S, measure_overlap, run_overlapping
from pytest_kreplica.faults.plan import OVERLAP_AT, FaultPlan, FaultRecord
from pytest_kreplica.faults.registry import facilities_needed
from pytest_kreplica.matrix import DIMENSIONS, load_matrix
from pytest_kreplica.validation.availability import allowed_s, allowed_together_s
from pytest_kreplica.validation.evidence import excusing_events, find_excuse, why_unexcused

S = 10**9


def matrix(tmp_path, failure, **dims):
    lines = "".join(f"  {k}: [{v}]\n" for k, v in {"failure": failure, **dims}.items())
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent("""\
        description: composed
        scenario: replication
        dimensions:
        """) + lines)
    return path


# -- the matrix value ----------------------------------------------------------------------
def test_a_composition_of_two_failure_types_is_a_case_with_both_markers(tmp_path):
    (case,) = load_matrix(matrix(tmp_path, "hard+slow_link")).cases
    assert case.failure == "hard+slow_link"
    # case ids name topics: Kafka allows no '+' there
    assert DIMENSIONS["failure"].id_part("hard+slow_link") == "hard-plus-slow_link"
    assert {"failure_hard", "failure_slow_link", "composed_faults"} <= set(case.markers)
    assert facilities_needed("hard+slow_link") == {"link_proxy"}
    assert facilities_needed("clock_skew+disk_full") == {"fake_clock", "small_disk"}


@pytest.mark.parametrize(("failure", "dims", "key", "says"), [
    ("hard+nosuch", {}, "dimensions.failure", "part 'nosuch' is not a failure type"),
    ("hard+soft+clean", {}, "dimensions.failure", "two parts joined by '+', got 3"),
    ("hard+reassign", {}, "dimensions.failure", "part 'reassign'"),
    ("hard+soft", {}, ".failure", "allowed: brokers >= 5"),
    ("hard+partition", {}, ".failure", "needs backend docker"),
    ("hard+slow_link", {"target": "mirror-maker"}, ".target", "cannot take a composed"),
])
def test_a_bad_composition_is_one_line_naming_file_key_and_allowed(tmp_path, failure, dims,
                                                                    key, says):
    path = matrix(tmp_path, failure, **dims)
    with pytest.raises(MatrixError) as err:
        load_matrix(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert key in message and says in message and "allowed" in message, message


def test_a_bad_composition_stops_pytest_with_one_line(pytester):
    matrices = pytester.path / "matrices"
    matrices.mkdir()
    path = matrix(matrices, "hard+nosuch")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (error,) = [line for line in result.errlines if line.strip()]
    assert error.startswith(f"ERROR: {path}: dimensions.failure: bad value 'hard+nosuch'; "
                            "allowed: none | clean | hard"), error
    assert "part 'nosuch' is not a failure type that composes" in error
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_two_outages_compose_on_a_cluster_that_keeps_its_quorum(tmp_path):
    (case,) = load_matrix(matrix(tmp_path, "hard+soft", brokers=5)).cases
    assert case.failure == "hard+soft"


# -- the plan ------------------------------------------------------------------------------
def test_the_plan_strikes_the_second_part_into_the_first_and_replays_from_the_seed():
    plan = FaultPlan(seed=42, failure="hard+slow_link", target="leader", failures=2,
                     downtime_s=6.0)
    specs = list(plan.faults())
    assert [(s.index, s.failure) for s in specs] == [
        (1, "hard"), (2, "slow_link"), (3, "hard"), (4, "slow_link")]
    assert [len(step) for step in plan.steps()] == [2, 2]
    for first, second in zip(specs[::2], specs[1::2], strict=True):
        assert first.target == "leader" and first.overlaps is None
        assert second.overlaps == first.index and second.target in (
            "leader", "follower", "controller")
        assert OVERLAP_AT[0] * 6.0 <= second.after_s <= OVERLAP_AT[1] * 6.0
        assert "into #" in second.describe()
    again = list(FaultPlan(seed=42, failure="hard+slow_link", target="leader", failures=2,
                           downtime_s=6.0).faults())
    assert again == specs
    assert plan.to_dict()["schedule"][1]["overlaps"] == 1


def test_a_plain_plan_draws_as_it_did_before_compositions():
    """A single failure type's specs are untouched (no overlap, the same draws)."""
    import random

    rng = random.Random(7)
    expected = [(rng.choice(("leader", "follower", "controller")),
                 round(rng.uniform(1.0, 3.0), 3), rng.random()) for _ in range(3)]
    specs = list(FaultPlan(seed=7, failure="hard", target="random", failures=3).faults())
    assert [(s.target, s.delay_s, s.pick) for s in specs] == expected
    assert all(s.overlaps is None and s.after_s is None for s in specs)


def test_the_nemesis_refuses_a_bad_composition():
    with pytest.raises(InputError, match="allowed parts"):
        FaultPlan(seed=1, failure="hard+nosuch", target="leader")


# -- the overlap runner on a stand-in ----------------------------------------------------
class StandIn:
    """What ``run_overlapping`` reads of a nemesis: each fault strikes at once, holds its
    downtime (the first part also until its hold condition), then restores."""

    def __init__(self, second_delay_s=0.0):
        self.records, self.hold_until, self.said = [], {}, []
        self.second_delay_s = second_delay_s
        self.lock = threading.Lock()

    def progress(self, message):
        self.said.append(message)

    def run_fault(self, spec):
        if spec.overlaps is not None:
            time.sleep(self.second_delay_s)
        rec = FaultRecord(spec.index, spec.failure, spec.target, "t", 0, node=spec.index)
        self.records.append(rec)
        rec.strike_ns = rec.struck_ns = time.monotonic_ns()
        time.sleep(spec.downtime_s)
        hold = self.hold_until.get(spec.index)
        deadline = time.monotonic() + 5
        while hold is not None and not hold() and time.monotonic() < deadline:
            time.sleep(0.01)
        rec.restore_ns = rec.recovered_ns = time.monotonic_ns()
        return rec


def test_the_first_part_holds_until_the_second_struck_and_the_overlap_is_measured():
    first, second = next(FaultPlan(seed=3, failure="hard+soft", target="leader",
                                   downtime_s=0.2).steps())
    nem = StandIn(second_delay_s=0.4)  # strikes after the first's downtime: it must wait
    a, b = run_overlapping(nem, first, second)
    assert a.error is None and b.error is None
    assert b.strike_ns < a.restore_ns, "the first part was restored before the second struck"
    assert a.overlap_s == b.overlap_s == measure_overlap(a, b)
    # the second's own downtime is shorter than the least overlap: it ends first
    assert b.overlap_s >= min(MIN_OVERLAP_S, second.downtime_s) and b.restore_ns < a.restore_ns
    assert (a.overlaps, b.overlaps) == (2, 1)


def test_parts_that_did_not_overlap_are_an_error():
    a = FaultRecord(1, "hard", "leader", "t", 0, strike_ns=0, restore_ns=5 * S)
    b = FaultRecord(2, "soft", "follower", "t", 0, strike_ns=6 * S, restore_ns=9 * S)
    assert measure_overlap(a, b) == -1.0
    assert measure_overlap(a, FaultRecord(2, "soft", "follower", None, None)) is None


# -- loss evidence and availability over overlapping windows --------------------------------
STRIKE = 200 * S


def kill_of_leader_1():
    return {"index": 1, "failure": "hard", "target": "leader", "topic": "t", "partition": 0,
            "node": 1, "leader_before": 1, "isr_before": [1, 2, 3], "before_ns": STRIKE - S,
            "lag_bound_ms": 5000, "strike_ns": STRIKE, "struck_ns": STRIKE + 1000,
            "restore_ns": STRIKE + 6 * S, "recovered_ns": STRIKE + 12 * S, "new_leader": 2,
            "election_s": 1.0, "elected_from_isr": True, "fault_s": 6.0, "overlaps": 2}


def pause_of_new_leader_2():
    """Struck 2 s into the kill: node 2, leader of t-0 since, paused; t-0 moved to node 3."""
    return {"index": 2, "failure": "soft", "target": "leader", "topic": "t", "partition": 0,
            "node": 2, "leader_before": 2, "isr_before": [2, 3],
            "before_ns": STRIKE + 2 * S - S // 2, "lag_bound_ms": 5000,
            "strike_ns": STRIKE + 2 * S, "struck_ns": STRIKE + 2 * S + 1000,
            "restore_ns": STRIKE + 8 * S, "recovered_ns": STRIKE + 12 * S, "new_leader": 3,
            "election_s": 3.5, "elected_from_isr": True, "fault_s": 6.0, "overlaps": 1}


def test_a_loss_is_excused_only_by_a_fault_whose_window_covers_it():
    events = excusing_events([kill_of_leader_1(), pause_of_new_leader_2()], {"acks": 1})
    assert {e["fault"] for e in events} == {1, 2}  # the union of both faults' evidence
    # acknowledged by node 1 alone just before its kill: the kill's window
    assert find_excuse(events, "t", 0, STRIKE - S, STRIKE - S + 10**6)["fault"] == 1
    # acknowledged by node 2 alone after the kill, while it was paused-to-be: the pause's
    after_kill = STRIKE + 3 * S
    assert find_excuse(events, "t", 0, after_kill, after_kill + 10**6)["fault"] == 2
    # long after both: nothing excuses it, and the reason names both windows
    late = STRIKE + 300 * S
    assert find_excuse(events, "t", 0, late, late + 10**6) is None
    why = why_unexcused(events, "t", 0, late, late + 10**6)
    assert "fault #1" in why and "fault #2" in why


def test_overlapping_faults_share_their_availability_allowance():
    params = {"replication_factor": 3, "min_insync_replicas": 2, "acks": -1}
    a, b = kill_of_leader_1(), pause_of_new_leader_2()
    together = allowed_together_s(a, [a, b], params)
    assert together == round(allowed_s(a, params) + allowed_s(b, params), 3)
    later = {**b, "strike_ns": STRIKE + 100 * S, "restore_ns": STRIKE + 106 * S,
             "recovered_ns": STRIKE + 110 * S}
    assert allowed_together_s(a, [a, later], params) == allowed_s(a, params)


def test_a_controlled_shutdown_in_progress_holds_the_overlap_from_its_sigterm():
    from types import SimpleNamespace

    from pytest_kreplica.faults.overlap import second_held

    second = SimpleNamespace(index=2)
    sent_2s_ago = time.monotonic_ns() - 2 * 10**9
    clean = FaultRecord(2, "clean", "controller", "t", 0, strike_ns=sent_2s_ago)
    # the SIGTERM went out 2 s ago and the broker still shuts down (struck_ns unset)
    assert second_held(SimpleNamespace(records=[clean]), second, [])
    hard = FaultRecord(2, "hard", "controller", "t", 0, strike_ns=sent_2s_ago)
    assert not second_held(SimpleNamespace(records=[hard]), second, [])  # not back yet
    hard.struck_ns = time.monotonic_ns()
    assert second_held(SimpleNamespace(records=[hard]), second, [])
    just_sent = FaultRecord(2, "clean", "controller", "t", 0, strike_ns=time.monotonic_ns())
    assert not second_held(SimpleNamespace(records=[just_sent]), second, [])


def test_a_clean_leader_strike_is_in_effect_only_from_its_own_signal():
    """The election watch of a controlled shutdown starts beside the strike, but the
    strike's time is the strike's own (set after its ISR re-read, just before the SIGTERM):
    set earlier, a composition's first part was released before the second's signal (seen
    at the plan's shape: the re-read took 10 s while the controller was paused)."""
    from types import SimpleNamespace

    from pytest_kreplica.faults.elections import Elections
    from pytest_kreplica.faults.overlap import second_held

    class Runner(Elections):
        election_timeout = 5.0

        def __init__(self) -> None:
            self.held_during_reread: list[bool] = []
            self.measured_from: list[int | None] = []

        def _strike(self, spec, rec) -> None:
            for _ in range(3):  # the ISR re-read, 1.5 s: the first part must still hold
                time.sleep(0.5)
                self.held_during_reread.append(
                    not second_held(SimpleNamespace(records=[rec]), spec, []))
            rec.strike_ns = time.monotonic_ns()

        def _measure_election(self, spec, rec, replicas) -> None:
            self.measured_from.append(rec.strike_ns)

    rec = FaultRecord(2, "clean", "leader", "t", 0)
    runner = Runner()
    runner._strike_measuring_election(SimpleNamespace(index=2, failure="clean"), rec, (1, 2))
    assert runner.held_during_reread == [True, True, True]
    assert runner.measured_from == [rec.strike_ns] and rec.strike_ns is not None
