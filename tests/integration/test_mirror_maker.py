"""MirrorMaker 2 against two real 1-broker clusters: it really stops, pauses and resumes
under each failure type (nothing is mirrored while it is down, mirroring moves again after
the restore), and the nemesis (one fault runner for brokers and components) records its
faults on MirrorMaker 2 as events."""

from __future__ import annotations

import json

import psutil
import pytest

from pytest_kreplica.cluster.base import ClusterSpec, NodeState, TopicSpec
from pytest_kreplica.cluster.mirrormaker import MirrorMaker
from pytest_kreplica.history import RunWriter
from pytest_kreplica.scenarios.runner import ClusterWriter
from tests.mirror_checks import assert_down_then_mirrors_again, mirroring, run_one_fault

TOPIC = "mm-it"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from pytest_kreplica.cluster.process.cluster import ProcessCluster

    root = tmp_path_factory.mktemp("mm-pair")
    source = ProcessCluster(ClusterSpec(brokers=1, role="source"), root / "source")
    target = ProcessCluster(ClusterSpec(brokers=1, role="target"), root / "target")
    try:
        source.start(timeout=180)
        target.start(timeout=180)
        source.create_topics([TopicSpec(TOPIC, 2, 1)])
        yield source, target
    finally:
        source.close()
        target.close()


@pytest.fixture(scope="module")
def mirror(pair, tmp_path_factory):
    source, target = pair
    mm = MirrorMaker(source, target, [TOPIC], tmp_path_factory.mktemp("mm"))
    writer = RunWriter(tmp_path_factory.mktemp("mm-run"))
    with mirroring(mm, source, TOPIC, writer) as running:
        yield running
    assert mm.pid is None or not psutil.pid_exists(mm.pid) or \
        psutil.Process(mm.pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("failure", ["clean", "hard", "soft"])
def test_mirror_maker_really_stops_and_mirrors_again(pair, mirror, failure):
    source, _target = pair
    mm, _writer = mirror
    pid = mm.pid
    strike = {"clean": mm.terminate, "hard": mm.kill, "soft": mm.pause}[failure]
    strike()
    if failure == "soft":
        assert mm.state is NodeState.PAUSED
        assert psutil.Process(pid).status() == psutil.STATUS_STOPPED
    else:
        assert mm.state is NodeState.STOPPED
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == \
            psutil.STATUS_ZOMBIE
    assert_down_then_mirrors_again(mm, source.bootstrap_servers, TOPIC, failure, pid)


def test_mirror_nemesis_records_strike_restore_and_recovery(pair, mirror):
    source, _target = pair
    mm, writer = mirror
    record, kinds = run_one_fault(source, mm, writer, TOPIC, "hard")
    assert record.state_after_strike == "stopped" and record.node == "mirror-maker"
    assert record.recovery_s is not None and record.recovery_s > 0
    assert kinds == ["kill", "start", "recovered"], kinds


def test_checker_finds_anomalies_planted_in_a_real_mirrored_history(pair, mirror, tmp_path):
    """A history really mirrored by MirrorMaker 2 is valid; the same history with one target
    poll removed has a lost id, and with one id polled again at a new target offset a
    duplicate (shared/HISTORY.md "Mirrored runs")."""
    from pathlib import Path

    from pytest_kreplica.history import write_run_json
    from pytest_kreplica.matrix import parse_matrix
    from pytest_kreplica.validation.checker import check
    from pytest_kreplica.workloads.plain import Consumer, produce

    source, target = pair
    mm, _ = mirror
    case = parse_matrix(Path("planted.yaml"), {"scenario": "mirror", "dimensions": {
        "partitions": [2], "replication_factor": [1], "brokers": [1],
        "messages": [40]}}).cases[0]
    real = tmp_path / "real"
    write_run_json(real, {"semantics": "at-least-once", "mirror": {"topics": mm.mirrored}})
    with RunWriter(real) as writer:
        consumer = Consumer([mm.mirrored[TOPIC]], 2, target.live_bootstrap_servers,
                            ClusterWriter(writer, "target")).start()
        stats = produce(case, [TOPIC], source.bootstrap_servers,
                        ClusterWriter(writer, "source"))
        assert not consumer.drain(set(stats.acked_ids), 180)
    sends = (real / "sends.jsonl").read_text()
    ids = {json.loads(line)["id"] for line in sends.splitlines()}
    # earlier tests mirrored records of their own into the topic: keep this run's only
    polls = [p for p in (json.loads(line) for line in
                         (real / "polls.jsonl").read_text().splitlines()) if p["id"] in ids]

    def variant(name: str, rows: list[dict]) -> Path:
        run_dir = tmp_path / name
        write_run_json(run_dir, {"semantics": "at-least-once",
                                 "mirror": {"topics": mm.mirrored}})
        (run_dir / "sends.jsonl").write_text(sends)
        (run_dir / "polls.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (run_dir / "events.jsonl").write_text("")
        return run_dir

    clean = check(variant("clean", polls))
    assert clean.valid and clean.counts["lost"] == clean.counts["duplicated"] == 0, \
        clean.counts
    part0 = [p for p in polls if p["partition"] == 0]
    dropped = part0[len(part0) // 2]
    lossy = check(variant("lost", [p for p in polls if p is not dropped]))
    assert lossy.counts["lost"] == 1 and not lossy.valid, lossy.counts
    again = {**part0[-1], "offset": part0[-1]["offset"] + 1000,
             "poll": max(p["poll"] for p in polls) + 1, "index": 0}
    dup = check(variant("duplicated", [*polls, again]))
    assert dup.counts["duplicated"] == 1 and dup.valid, dup.counts  # at-least-once allows it
    assert not check(variant("duplicated-eo", [*polls, again]), "exactly-once").valid


def _task_transactional_ids(log_file) -> list[str]:
    """The transactional ids MirrorMaker 2's exactly-once source tasks produce with (from the
    producer configuration each task logs)."""
    import re

    found = re.findall(r"transactional\.id = (\S+MirrorSourceConnector-\d+)",
                       log_file.read_text(errors="replace"))
    return sorted(set(found))


def test_a_task_killed_for_good_is_read_from_the_log_and_a_restart_revives_it(pair, tmp_path):
    """The mirror scenario's answer to a Connect task that dies and stays down while the
    process runs (a CI run's exactly-once case: InvalidTxnStateException at commit): a real
    exactly-once task is fenced from outside (a producer with its transactional id), so the
    next records kill it for good; ``killed_tasks`` must name it from the real log, nothing
    more is mirrored, and after a restart it is gone from the new launch's view and
    mirroring moves again."""
    from kafka import KafkaProducer

    from pytest_kreplica.waits import wait_until
    from tests.mirror_checks import send

    source, target = pair
    topic = "mm-it-fenced"
    source.create_topics([TopicSpec(topic, 2, 1)])
    mm = MirrorMaker(source, target, [topic], tmp_path / "mm", exactly_once=True)
    with mirroring(mm, source, topic, RunWriter(tmp_path / "run")):
        assert mm.killed_tasks() == []
        ids = _task_transactional_ids(mm.log_file)
        assert ids, f"no task transactional id in {mm.log_file}"
        for tid in ids:
            fencer = KafkaProducer(bootstrap_servers=target.bootstrap_servers,
                                   transactional_id=tid)
            fencer.init_transactions()  # a newer epoch: the task's producer is fenced
            fencer.close(timeout=10)
        send(source.bootstrap_servers, topic, 20, "after-fence")
        wait_until(lambda: bool(mm.killed_tasks()), 120,
                   "MirrorMaker 2's log to say a fenced task was killed for good",
                   lambda: f"no such line yet in {mm.log_file}")
        killed = mm.killed_tasks()
        assert all(k.startswith("MirrorSourceConnector-") and "Exception" in k
                   for k in killed), killed  # the task and its root cause
        assert mm.state is NodeState.RUNNING  # the process lives on without its task
        stalled = mm.target_total()
        mm.restart()
        assert mm.killed_tasks() == []  # the new launch's lines only
        send(source.bootstrap_servers, topic, 20, "after-restart")
        mm.wait_mirroring(stalled, 180)
        assert mm.target_total() > stalled
