"""The nemesis against a real 3-node KRaft cluster (process backend, one cluster for the
module): every failure type on every role really stops or pauses the chosen node and brings
it back, the events land in the run directory, and a leader failure really moves the
leadership to a replica that was in the ISR, within the bounded election time."""

from __future__ import annotations

import json

import psutil
import pytest

from pytest_kreplica.cluster import ClusterSpec, NodeState, TopicSpec, create_cluster
from pytest_kreplica.faults import ELECTION_BOUND_S, FaultPlan, Nemesis, scenario_checks
from pytest_kreplica.history import RunWriter
from pytest_kreplica.waits import wait_for
from tests.sampling import BackgroundSampler

STRIKE_KIND = {"clean": "terminate", "hard": "kill", "soft": "pause"}
RESTORE_KIND = {"clean": "start", "hard": "start", "soft": "resume"}
# a paused broker is fenced (and loses its leaderships) once its session times out (3 s
# with the backend's tuned settings): pause long enough to see that happen
DOWNTIME = {"clean": 1.0, "hard": 1.0, "soft": 6.0}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = create_cluster(ClusterSpec(brokers=3), tmp_path_factory.mktemp("nemesis-cluster"))
    c.start(timeout=120)
    try:
        yield c
    finally:
        pids = [n.pid for n in c.nodes if n.pid]
        c.close()
        assert not [p for p in pids if psutil.pid_exists(p)
                    and psutil.Process(p).status() != psutil.STATUS_ZOMBIE], \
            "broker JVMs outlived the cluster"


class Watcher(BackgroundSampler):
    """Samples every node's process state while the nemesis runs: proof, independent of the
    nemesis' own bookkeeping, that the victim really stopped or paused."""

    def __init__(self, cluster):
        super().__init__(cluster)
        self.seen: dict[int, set[str]] = {n.node_id: set() for n in cluster.nodes}

    def sample(self):
        for node in self.cluster.nodes:
            try:
                status = psutil.Process(node.pid).status() if node.pid else "gone"
            except psutil.NoSuchProcess:
                status = "gone"
            self.seen[node.node_id].add(status)


def _run(cluster, run_dir, topic, failure, target, failures=1, seed=11):
    cluster.create_topics([TopicSpec(topic, partitions=1, replication_factor=3,
                                     config={"min.insync.replicas": "2"})], timeout=60)
    # as a case does (the pool's gate): a node the previous test restarted may still be
    # rejoining the new topic's ISR, and its election then races the "ISR before" read
    cluster.wait_healthy([topic], timeout=60)
    plan = FaultPlan(seed=seed, failure=failure, target=target, failures=failures,
                     downtime_s=DOWNTIME[failure], delay_s=(0.2, 0.5))
    pids_before = {n.node_id: n.pid for n in cluster.nodes}
    with RunWriter(run_dir) as writer, Watcher(cluster) as watcher:
        records = Nemesis(cluster, writer, plan, [(topic, 0)], election_timeout=60,
                          recovery_timeout=120).run()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return records, events, watcher, pids_before


@pytest.mark.parametrize("target", ["leader", "follower", "controller"])
@pytest.mark.parametrize("failure", ["clean", "hard", "soft"])
def test_fault_stops_the_role_and_brings_it_back(cluster, tmp_path, failure, target):
    topic = f"nem-{failure}-{target}"
    records, events, watcher, pids_before = _run(cluster, tmp_path, topic, failure, target)
    (rec,) = records
    assert rec.error is None, rec.error
    victim = rec.node

    # the victim held the role at the moment of the fault
    if target == "leader":
        assert victim == rec.leader_before
    elif target == "follower":
        assert victim in rec.isr_before and victim != rec.leader_before
    else:
        assert victim == rec.controller_before

    # it really stopped / paused, and it is back: a new JVM after a restart
    if failure == "soft":
        assert psutil.STATUS_STOPPED in watcher.seen[victim], watcher.seen[victim]
        assert cluster.node(victim).pid == pids_before[victim]
    else:
        assert cluster.node(victim).pid != pids_before[victim]
    assert all(cluster.node_state(n.node_id) is NodeState.RUNNING for n in cluster.nodes)
    # the nemesis waited until every broker's metadata showed every ISR full (a CI run once
    # read isr [3, 1] here, when that wait ended at the first broker that showed it); a
    # restarted broker may not listen yet, so wait until each answers with its own view
    every, views = {n.node_id for n in cluster.nodes}, {}

    def each_broker_answers() -> str | None:
        views.clear()
        views.update(cluster.partition_views(topic, 0))
        return None if set(views) == every else f"views of nodes {sorted(views)}"
    wait_for(each_broker_answers, 30, f"a metadata view of {topic}-0 from each node")
    assert all(v.isr_full for v in views.values()), views

    # events: strike, restore, recovered, with node and role
    mine = [e for e in events if e["node"] == str(victim) and e["kind"] != "elect"]
    assert [e["kind"] for e in mine] == [STRIKE_KIND[failure], RESTORE_KIND[failure],
                                        "recovered"]
    assert {e["role"] for e in mine} == {target}
    times = [e["time_ns"] for e in mine]
    assert times == sorted(times)
    assert (times[1] - times[0]) / 1e9 >= DOWNTIME[failure] - 0.05

    # a failed leader hands over to an ISR member within the bound (C.2)
    if victim == rec.leader_before:
        assert rec.new_leader is not None and rec.new_leader != victim, rec.election_note
        assert rec.elected_from_isr is True, rec
        assert 0 < rec.election_s <= ELECTION_BOUND_S
        if failure == "clean":  # watched while the controlled shutdown ran, not after it
            struck_s = (rec.struck_ns - rec.strike_ns) / 1e9
            assert rec.election_s < struck_s, (
                f"expected the new leader seen before the victim exited ({struck_s:.2f} s "
                f"after the SIGTERM), seen after {rec.election_s:.2f} s")
        elect = [e for e in events if e["kind"] == "elect" and e["role"] == "leader"]
        assert elect and elect[0]["node"] == str(rec.new_leader)
    if victim == rec.controller_before and failure != "soft":
        assert rec.new_controller not in (None, victim)
    assert all(c["ok"] for c in scenario_checks(records)), scenario_checks(records)


def test_faults_run_in_sequence_and_each_picks_the_current_leader(cluster, tmp_path):
    records, events, _, _ = _run(cluster, tmp_path, "nem-sequence", "hard", "leader",
                                 failures=2, seed=5)
    assert [r.index for r in records] == [1, 2]
    first, second = records
    # each fault hit whoever led at its own moment (the preferred leader may have returned)
    assert first.node == first.leader_before and second.node == second.leader_before
    assert first.new_leader != first.node and second.new_leader != second.node
    assert first.recovered_ns < second.strike_ns
    kills = [e for e in events if e["kind"] == "kill"]
    assert [e["node"] for e in kills] == [str(first.node), str(second.node)]
    print(f"election times: {[r.election_s for r in records]} s")
