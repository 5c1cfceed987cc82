"""Issue 12: planted runs through ``kreplica check`` (its real code path, real Spark): the
case verdict ``passed`` cannot be fooled by a read record that vanished, a loss no fault
explains, or a run that checked nothing; and it equals what the test concluded."""

from __future__ import annotations

import json

import pytest

from pytest_kreplica.cli import main
from pytest_kreplica.history import RunWriter, write_run_json
from pytest_kreplica.validation.replicas.synth import build_batch, message_values, write_partition
from tests.planted_loss import leader_kill, write_lost_m3


@pytest.fixture
def kreplica_check(spark_session, monkeypatch, capsys):
    """``kreplica check RUN --json`` in this process (the session's Spark stays up)."""
    import pytest_kreplica.validation.engine.spark

    monkeypatch.setattr(pytest_kreplica.validation.engine.spark, "stop_spark", lambda: None)

    def run(run_dir, *args):
        code = main(["check", str(run_dir), "--json", *args])
        out, err = capsys.readouterr()
        return code, (json.loads(out) if out.strip() else None), err

    return run


def snapshot(run, by_node, hw, isr=None):
    for node, ids in by_node.items():
        directory = run / "replicas" / str(node) / "t-0"
        if ids is None:
            (run / "replicas" / str(node)).mkdir(parents=True, exist_ok=True)
            continue
        if ids:
            write_partition(directory, [build_batch(0, message_values(ids))], per_segment=1)
        else:  # a segment file with no batch in it
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"{0:020d}.log").write_bytes(b"")
    nodes = sorted(by_node)
    (run / "replicas.json").write_text(json.dumps({
        "nodes": {str(n): f"replicas/{n}" for n in nodes},
        "partitions": [{"topic": "t", "partition": 0, "leader": nodes[0], "replicas": nodes,
                        "isr": nodes if isr is None else isr, "high_watermark": hw}],
        "at_rest": True}))


def meta(run, acks=-1, unclean=False, faults=None, partitions=1, semantics="at-least-once"):
    write_run_json(run, {"case_id": run.name, "semantics": semantics, "topics": ["t"],
                         "params": {"acks": acks, "unclean_leader_election": unclean,
                                    "partitions": partitions}})
    if faults is not None:
        (run / "verdict.json").write_text(json.dumps({"faults": faults, "checks": []}))


def lost_m3(run):
    """``write_lost_m3``; every replica of its replication factor 3 holds node 2's log."""
    write_lost_m3(run)
    snapshot(run, {n: ["m0", "m1", "m2", "m4", "m5"] for n in (1, 2, 3)}, hw=5)
    return run


# -- item 1: a read record that disappears --------------------------------------------------
def test_read_record_replaced_at_its_offset_does_not_pass(tmp_path, kreplica_check):
    run = tmp_path / "read-then-replaced"
    with RunWriter(run) as w:  # a consumer read m3 at 3; later m6 was acknowledged at 3
        for i in range(4):
            w.send(0, "t", 0, f"m{i}", i, "ok", 10 + i, 11 + i)
            w.poll(1, i, "t", 0, i, f"m{i}", 20 + i)
        w.send(0, "t", 0, "m6", 3, "ok", 30, 31)
    snapshot(run, {2: ["m0", "m1", "m2", "m6"]}, hw=4)
    meta(run, acks=1, faults=leader_kill(), semantics="at-most-once")
    code, doc, _ = kreplica_check(run)
    assert doc["counts"]["inconsistent_offsets"] == 1
    assert (code, doc["passed"]) == (1, False)
    assert "m3 was read there and is in no replica's log" in " ".join(doc["tradeoff"]["refused"])


# -- item 2: loss excused by evidence only -------------------------------------------------
def test_acks1_loss_after_a_leader_kill_passes_with_its_evidence(tmp_path, kreplica_check):
    run = lost_m3(tmp_path / "acks1")
    meta(run, acks=1, faults=leader_kill())
    code, doc, _ = kreplica_check(run)
    assert doc["valid"] is False and doc["counts"]["lost"] == 1
    assert (code, doc["passed"]) == (0, True), doc["reason"]
    assert doc["reason"].startswith("accepted trade-off: 1 acknowledged record(s) lost")
    assert doc["tradeoff"]["evidence"][0]["node"] == 1


def test_the_same_loss_without_a_fault_does_not_pass(tmp_path, kreplica_check):
    run = lost_m3(tmp_path / "nofault")
    meta(run, acks=1, faults=[])
    code, doc, _ = kreplica_check(run)
    assert (code, doc["passed"]) == (1, False)
    assert "no fault explains its loss" in doc["reason"]


def test_acks_all_with_unclean_enabled_but_an_isr_election_does_not_pass(tmp_path,
                                                                          kreplica_check):
    run = lost_m3(tmp_path / "unclean-isr")
    meta(run, acks=-1, unclean=True, faults=leader_kill(elected_from_isr=True))
    assert kreplica_check(run)[:2][0] == 1
    run = lost_m3(tmp_path / "unclean-outside")
    meta(run, acks=-1, unclean=True, faults=leader_kill(elected_from_isr=False))
    code, doc, _ = kreplica_check(run)
    assert (code, doc["passed"]) == (0, True)
    assert doc["tradeoff"]["evidence"][0]["kind"] == "election from outside the ISR"


# -- item 3: vacuous passes ---------------------------------------------------------------
def test_nothing_acknowledged_does_not_pass(tmp_path, kreplica_check):
    run = tmp_path / "no-acks"
    with RunWriter(run) as w:
        for i in range(1000):
            w.send(0, "t", 0, f"m{i}", None, "info", i, i + 1, error="timeout")
    meta(run)
    code, doc, _ = kreplica_check(run)
    assert doc["valid"] is True  # the checker's rules are unchanged
    assert (code, doc["passed"]) == (1, False)
    assert "no acknowledged record (1000 sent" in doc["reason"]


def acked_and_read(run, n=3):
    with RunWriter(run) as w:
        for i in range(n):
            w.send(0, "t", 0, f"m{i}", i, "ok", 10 + i, 11 + i)
            w.poll(1, i, "t", 0, i, f"m{i}", 20 + i)
    return run


@pytest.mark.parametrize("copy", [[], None], ids=["empty-segment", "no-directory"])
def test_an_isr_replica_without_a_copy_does_not_pass(tmp_path, kreplica_check, copy):
    run = acked_and_read(tmp_path / "uncovered")
    snapshot(run, {1: ["m0", "m1", "m2"], 2: copy}, hw=3)
    meta(run)
    code, doc, _ = kreplica_check(run)
    assert (code, doc["passed"]) == (1, False)
    assert "uncovered_replicas 1" in doc["reason"]


def test_every_replica_empty_below_a_positive_high_watermark_does_not_pass(tmp_path,
                                                                            kreplica_check):
    run = acked_and_read(tmp_path / "all-empty")
    snapshot(run, {1: [], 2: None}, hw=3)
    meta(run)
    code, doc, _ = kreplica_check(run)
    assert (code, doc["passed"]) == (1, False)
    assert "uncovered_replicas 2" in doc["reason"]


def test_a_case_partition_missing_from_replicas_json_does_not_pass(tmp_path, kreplica_check):
    run = acked_and_read(tmp_path / "partition-missing")
    snapshot(run, {1: ["m0", "m1", "m2"]}, hw=3)
    meta(run, partitions=2)
    code, doc, _ = kreplica_check(run)
    assert (code, doc["passed"]) == (1, False)
    assert "1 partition(s) of the case missing from replicas.json: t-1" in doc["reason"]


def test_a_snapshot_of_no_partition_cannot_be_checked(tmp_path, kreplica_check):
    run = acked_and_read(tmp_path / "no-partitions")
    (run / "replicas").mkdir()
    (run / "replicas.json").write_text('{"nodes": {"1": "replicas"}, "partitions": []}')
    meta(run)
    code, doc, err = kreplica_check(run)
    assert code == 2 and doc is None
    assert "key 'partitions' must be a non-empty list" in err and err.count("\n") == 1


# -- item 6: one verdict ------------------------------------------------------------------
def test_check_reports_what_the_case_concluded(tmp_path, kreplica_check):
    """The CaseResult run_case builds from the same parts (checker verdict, replica check,
    trade-off, coverage) passes exactly when ``kreplica check`` says ``passed``."""
    from pytest_kreplica.matrix import parse_matrix
    from pytest_kreplica.scenarios.runner import CaseResult, ReplicaCheck
    from pytest_kreplica.validation.checker import check
    from pytest_kreplica.validation.outcome import judge_case
    from pytest_kreplica.validation.tradeoffs import judge  # noqa: F401 - the rule under test

    case = parse_matrix(tmp_path / "m.yaml", {"dimensions": {"acks": [1],
                                                             "failure": ["hard"]}}).cases[0]
    for name, faults in (("excused", leader_kill()), ("unexcused", [])):
        run = lost_m3(tmp_path / name)
        meta(run, acks=1, faults=faults)
        verdict = check(run, case.semantics)
        judged = judge_case(run, verdict, meta={"topics": ["t"], "params": case.as_dict()},
                            replicas=None, checks=[], hook_errors=[], faults=faults)
        result = CaseResult(case, run, verdict, ReplicaCheck(True, 1, []), {}, {},
                            {"tradeoff": judged["tradeoff"], "problems": judged["problems"],
                             "faults": faults})
        code, doc, _ = kreplica_check(run)
        assert result.valid is doc["passed"] and (code == 0) is result.valid, name
        assert result.outcome["reason"] == doc["reason"]


# -- item 5: a check that could not run is exit 2, never 1 ----------------------------------
def test_broken_java_home_is_exit_2_with_one_line(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    # the in-process driver's JVM (a warm shared Connect server needs no local Java)
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk"), "KREPLICA_SPARK_MASTER": "local[2]",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest_kreplica.cli", "check",
                           str(root / "fixtures" / "histories" / "clean")],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("kreplica check: Spark could not start")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_segment_vanishing_under_verify_logs_is_exit_2(tmp_path, spark_session, capsys):
    run = acked_and_read(tmp_path / "vanishing")
    snapshot(run, {1: ["m0", "m1", "m2"]}, hw=3)
    segment = run / "replicas" / "1" / "t-0" / f"{0:020d}.log"
    segment.unlink()  # listed by name, gone when read: a link to a file that was deleted
    segment.symlink_to(tmp_path / "deleted.log")
    code = main(["verify-logs", str(run)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "the replica logs could not be read to the end: No such file" in err
    assert err.count("\n") == 1


def test_unreadable_snapshot_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "replicas.json").write_text('{"nodes": {"1": "nowhere"}, "partitions": []}')
    code = main(["verify-logs", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "nodes.1" in lines[0] and "replicas.json" in lines[0]


# -- coverage under every semantics --------------------------------------------------------
def test_at_most_once_with_nothing_read_does_not_pass(tmp_path, kreplica_check):
    run = tmp_path / "amo-unread"
    with RunWriter(run) as w:
        for i in range(3):
            w.send(0, "t", 0, f"m{i}", i, "ok", 10 + i, 11 + i)
    meta(run, semantics="at-most-once")
    code, doc, _ = kreplica_check(run)
    assert doc["valid"] is True  # the checker's rules find nothing to object to
    assert (code, doc["passed"]) == (1, False)
    assert "nothing was polled (3 acknowledged): under at-most-once" in doc["reason"]


def test_only_aborted_transactions_says_nothing_was_committed(tmp_path, kreplica_check):
    run = tmp_path / "all-aborted"
    with RunWriter(run) as w:
        for i in range(2):
            w.send(0, "t", 0, f"a{i}", i, "ok", 10 + i, 11 + i, txn=f"T{i}")
            w.txn(0, f"T{i}", "aborted", 9 + i, 12 + i, 13 + i)
    meta(run)
    code, doc, _ = kreplica_check(run)
    assert (code, doc["passed"]) == (1, False)
    assert "nothing was committed: all 2 transaction(s) aborted" in doc["reason"]
    assert "nothing was sent" not in doc["reason"]


# -- the snapshot must be able to see before it says "gone" --------------------------------
def test_a_snapshot_whose_high_watermark_is_below_the_reads_excuses_nothing(tmp_path,
                                                                            kreplica_check):
    run = tmp_path / "low-hw"
    write_lost_m3(run)
    snapshot(run, {n: ["m0", "m1", "m2", "m4", "m5"] for n in (1, 2, 3)}, hw=3)
    meta(run, acks=1, faults=leader_kill())
    code, doc, _ = kreplica_check(run)
    assert (code, doc["passed"]) == (1, False)
    assert "the snapshot cannot show it gone: its high watermark 3 is not above offset 4" \
        in doc["reason"]
    assert doc["tradeoff"]["blind"]["t-0"]


def test_a_torn_last_line_with_a_loss_is_judged_not_unreadable(tmp_path, kreplica_check):
    """The checker leaves a last line a crash cut short out; so does the trade-off."""
    run = lost_m3(tmp_path / "torn")
    with open(run / "sends.jsonl", "a") as f:
        f.write('{"process": 0, "topic": "t", "partition": 0, "id": "m9", "off')
    meta(run, acks=1, faults=leader_kill())
    code, doc, err = kreplica_check(run)
    assert (code, doc["passed"]) == (0, True), err or doc["reason"]
    assert doc["extra"]["ignored_torn_last_line"] == ["sends.jsonl"]
