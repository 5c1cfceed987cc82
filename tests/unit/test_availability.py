"""Availability per case (``validation.availability``): planted histories, a follower's
fault with and without a 30 s stretch of no acknowledgement, the bounds each failure type
declares, the matrix's ``max_unavailable_s`` and its own verdict part. No cluster, no Spark."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest

from pytest_kreplica.errors import MatrixError
from pytest_kreplica.faults.registry import FAILURES
from pytest_kreplica.history import RunWriter
from pytest_kreplica.matrix import load_matrix
from pytest_kreplica.results.rows import unavailability
from pytest_kreplica.validation.availability import allowed_s, measure
from pytest_kreplica.validation.outcome import decide, judge_case

S = 1_000_000_000  # one second in the history's nanoseconds
BASE = 1_000 * S
PARAMS = {"replication_factor": 3, "min_insync_replicas": 2, "acks": -1}


def at(seconds: float) -> int:
    return BASE + int(round(seconds * S))


def write_history(run, gap=None, until=50.0):
    """A send every 0.1 s from 0 to ``until`` s, each acknowledged 2 ms after it was sent
    and read by a consumer at once; ``gap`` (start, end): nothing acknowledged or read
    between those times (the sends in it failed)."""
    with RunWriter(run) as w:
        for i in range(int(until * 10) + 1):
            t = i / 10
            lost = gap is not None and gap[0] < t + 0.002 < gap[1]
            w.send(0, "t", 0, f"m{i}", None if lost else i, "fail" if lost else "ok",
                   at(t), at(t + 0.002))
            if not lost:
                w.poll(1, i, "t", 0, i, f"m{i}", at(t + 0.002))
    return run


def follower_kill(**over):
    """The nemesis's record of a SIGKILL of follower node 2 (it led nothing) from 12.5 s,
    restored at 17.5 s, every replica back in sync at 20 s; lag bound 10 s."""
    return [{"index": 1, "failure": "hard", "target": "follower", "topic": "t",
             "partition": 0, "node": 2, "leader_before": 1, "led_before": [],
             "lag_bound_ms": 10_000, "strike_ns": at(12.5), "struck_ns": at(12.51),
             "restore_ns": at(17.5), "recovered_ns": at(20.0), "fault_s": 5.0, **over}]


def checked(counts):
    """A stand-in for the checker's valid ``Verdict``: the safety part passed."""
    return SimpleNamespace(valid=True, semantics="at-least-once", counts=counts,
                           to_dict=lambda: {"valid": True, "semantics": "at-least-once",
                                            "counts": counts, "examples": {}})


def test_a_30s_stretch_without_acks_during_a_follower_fault_fails_on_availability(tmp_path):
    run = write_history(tmp_path, gap=(12.35, 42.25))
    out = judge_case(run, checked({"sent": 501, "acked": 202, "polled": 202}),
                     meta={"params": PARAMS}, replicas=None, checks=None, hook_errors=None,
                     faults=follower_kill())
    assert out["passed"] is False
    assert out["reason"] == ("availability: no acknowledgement for 30.0 s from 12.3 s, "
                             "during fault #1: hard failure of follower node 2; allowed 20 s")
    [fault] = out["availability"]["faults"]
    assert fault["unavailable_s"] == pytest.approx(30.0, abs=1e-6)
    assert fault["allowed_s"] == 20.0 and fault["passed"] is False
    assert unavailability({"availability": out["availability"]}) == pytest.approx(30.0)


def test_the_same_fault_without_the_stretch_passes_with_its_figures(tmp_path):
    run = write_history(tmp_path)
    out = judge_case(run, checked({"sent": 501, "acked": 501, "polled": 501}),
                     meta={"params": PARAMS}, replicas=None, checks=None, hook_errors=None,
                     faults=follower_kill())
    assert out["passed"] is True, out["reason"]
    figures = out["availability"]
    assert figures["judged"] is True and figures["failures"] == []
    assert figures["unavailable_s"] == pytest.approx(0.1, abs=1e-6)
    before, during, after = figures["segments"]
    assert (before["phase"], during["phase"], after["phase"]) == ("before", "during", "after")
    assert during["fault"] == 1 and during["acks"] == 75  # 12.5 s .. 20 s, one per 0.1 s
    assert during["ack_rate"] == pytest.approx(10.0, rel=0.02)
    assert during["latency_p50_ms"] == pytest.approx(2.0)
    assert during["latency_p99_ms"] == pytest.approx(2.0)
    assert during["latency_max_ms"] == pytest.approx(2.0)


def test_an_availability_failure_is_its_own_part_beside_a_safety_one():
    both = decide(history={"valid": False, "semantics": "at-least-once",
                           "counts": {"lost": 1}},
                  availability={"failures": ["no acknowledgement for 9.0 s; allowed 5 s"]})
    parts = both["reason"].split("; ")
    assert parts[0].startswith("history invalid") and "availability" not in parts[0]
    assert parts[1] == "availability: no acknowledgement for 9.0 s"
    alone = decide(history={"valid": True}, availability={"failures": []})
    assert alone == {"passed": True, "reason": "every part passed"}


def test_a_case_without_faults_is_judged_only_against_a_given_bound(tmp_path):
    run = write_history(tmp_path, gap=(5.05, 45.0))
    free = measure(run, [], PARAMS)
    assert free["judged"] is False and free["failures"] == []
    assert free["unavailable_s"] > 39.0
    [whole] = free["segments"]
    assert whole["phase"] == "whole"
    bounded = measure(run, [], {**PARAMS, "max_unavailable_s": 10.0})
    assert bounded["judged"] is True
    assert bounded["failures"] == [
        "no acknowledgement for 40.0 s from 5.0 s; allowed 10 s (max_unavailable_s)"]


def test_the_matrix_bound_replaces_the_failure_allowance(tmp_path):
    run = write_history(tmp_path, gap=(12.35, 42.25))
    generous = measure(run, follower_kill(), {**PARAMS, "max_unavailable_s": 60})
    assert generous["failures"] == [] and generous["faults"][0]["allowed_s"] == 60.0


def test_each_failure_declares_a_bound_the_victim_role_and_setup_widen():
    follower = follower_kill()[0]
    assert allowed_s(follower, PARAMS) == 20.0  # 10 s + the 10 s lag bound
    leader = {**follower, "target": "leader", "node": 1, "led_before": ["t-0"]}
    assert allowed_s(leader, PARAMS) == 50.0  # an election and the client's retry
    pause = {**leader, "failure": "soft"}
    assert allowed_s(pause, PARAMS) == 55.0  # plus its 5 s pause
    # acks=all with min ISR 3 of 3 cannot write without the victim: its whole window too
    assert allowed_s(follower, {**PARAMS, "min_insync_replicas": 3}) == 27.5
    unknown = {**follower, "lag_bound_ms": None, "led_before": None}
    assert allowed_s(unknown, PARAMS) == 70.0  # led what is not known: a leader; lag 30 s
    assert all(f.availability.follower_s > 0 for f in FAILURES.values())


def test_a_bad_max_unavailable_s_is_one_line_naming_file_key_and_allowed(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent("""
        scenario: replication
        dimensions:
          failure: [hard]
          max_unavailable_s: [-3]
    """))
    with pytest.raises(MatrixError) as err:
        load_matrix(path)
    text = str(err.value)
    assert "\n" not in text and str(path) in text and "max_unavailable_s" in text
    assert "a number of seconds > 0" in text
    path.write_text("dimensions:\n  failure: [hard]\n  max_unavailable_s: [12]\n")
    [case] = load_matrix(path).cases
    assert case.max_unavailable_s == 12.0


def test_the_report_shows_each_fault_against_its_bound_and_the_segments(tmp_path):
    from pytest_kreplica.report.sections import availability

    run = write_history(tmp_path, gap=(12.35, 42.25))
    figures = measure(run, follower_kill(), PARAMS)
    html = "".join(availability({"availability": figures}))
    assert "<h2>Availability</h2>" in html and "OVER" in html
    assert "during fault #1: hard failure of follower node 2; allowed 20 s" in html
    assert html.count("<tr>") == 1 + 1 + 1 + 3  # two headers, one fault, three segments
    assert availability({}) == []


def test_the_results_store_reads_the_longest_stretch_not_where_it_starts(tmp_path):
    run = write_history(tmp_path, gap=(40.05, 42.0))  # a short stretch, late in the run
    figures = measure(run, follower_kill(), PARAMS)
    assert figures["stretch_from_s"] == pytest.approx(40.0, abs=0.01)
    assert unavailability({"availability": figures}) == pytest.approx(2.0, abs=0.01)
