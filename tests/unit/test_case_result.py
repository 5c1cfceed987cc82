"""CaseResult: validity from every part, the failure message (offending ids, run directory,
broker logs) and the summary row (pure logic, with a stand-in for the checker's Verdict)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_kreplica.matrix import parse_matrix
from pytest_kreplica.scenarios.runner import CaseResult, ReplicaCheck


@dataclass
class StandInVerdict:
    valid: bool
    counts: dict
    examples: dict = field(default_factory=dict)

    def failures(self):
        return [k for k in ("lost", "unseen") if self.counts.get(k)]


CASE = parse_matrix(Path("m.yaml"), {"dimensions": {"partitions": [5]}}).cases[0]


def result(verdict, replica=None, **extra):
    return CaseResult(CASE, Path("runs/m-default"), verdict,
                      replica or ReplicaCheck(True, 3, []), {"produce": 1.0, "drain": 0.5},
                      {2: "logs/2.log", 1: "logs/1.log"}, extra)


def test_valid_case():
    r = result(StandInVerdict(True, {"sent": 10, "acked": 10}))
    r.assert_valid()
    row = r.summary()
    assert row["verdict"] == "valid" and row["duration_s"] == 1.5
    assert row["counts"]["acked"] == 10 and row["run_dir"] == "runs/m-default"


def test_lost_ids_fail_with_ids_run_dir_and_logs():
    verdict = StandInVerdict(False, {"sent": 10, "acked": 10, "lost": 2},
                             {"lost": [{"id": "7", "partition": 3, "offset": 1}]})
    r = result(verdict)
    with pytest.raises(AssertionError) as info:
        r.assert_valid()
    text = str(info.value)
    assert "history: expected no lost; seen lost 2" in text
    assert '"id": "7"' in text
    assert "run directory: runs/m-default" in text
    assert text.index("broker 1 log: logs/1.log") < text.index("broker 2 log: logs/2.log")
    assert r.summary()["verdict"] == "invalid"
    assert r.summary()["reason"] == r.outcome["reason"] and "lost" in r.outcome["reason"]


def test_replica_mismatch_hook_error_and_failed_check_each_invalidate():
    ok = StandInVerdict(True, {})
    bad_replica = ReplicaCheck(True, 3, [{"topic": "t", "partition": 0, "segment": "x.log"}])
    assert "replicas: expected equal closed segments" in result(
        ok, bad_replica).failure_message()
    assert not result(ok, hook_errors=["during_produce nemesis: boom"]).valid
    failed = result(ok, checks=[{"name": "election", "ok": False, "detail": "took 40 s"}])
    assert not failed.valid and "check election: took 40 s" in failed.failure_message()
    row = failed.summary()
    assert "checks" not in row  # lists stay in verdict.json; rows carry scalars only


def test_a_scenarios_notes_explain_its_failure():
    verdict = StandInVerdict(False, {"sent": 10, "acked": 10, "unseen": 3})
    note = "MirrorMaker 2 killed a task for good: MirrorSourceConnector-0: X"
    text = result(verdict, notes=[note]).failure_message()
    assert f"note: {note}" in text
    assert "note:" not in result(verdict).failure_message()
