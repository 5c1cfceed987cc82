"""Membership faults (issue 16, part 5), the pure halves: which replicas ``reassign`` moves
where, which replica ``preferred_election`` makes leader, and that the replica snapshot
after a move compares the new replica set, never the stale copy left on the old node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_kreplica.cluster.base import PartitionState, TopicSpec
from pytest_kreplica.errors import ClusterError, InputError, MatrixError
from pytest_kreplica.faults import FAILURES, FaultPlan, Nemesis, failures_on
from pytest_kreplica.faults.preferred import plan_leaders
from pytest_kreplica.faults.reassign import plan_moves
from pytest_kreplica.matrix import parse_matrix
from pytest_kreplica.validation.replicas.layout import load_layout
from pytest_kreplica.validation.replicas.snapshot import snapshot_replicas
from pytest_kreplica.validation.replicas.synth import build_batch, message_values, write_partition


def _state(p, leader, replicas, isr=None, topic="t"):
    return PartitionState(topic, p, leader, 0, tuple(replicas), tuple(isr or replicas))


def test_reassign_replaces_the_victim_by_a_spare_appended_last():
    states = {("t", 0): _state(0, 1, (1, 2, 3)), ("t", 1): _state(1, 2, (2, 3, 4)),
              ("t", 2): _state(2, 3, (3, 4, 1))}
    assert plan_moves(states, 1, [1, 2, 3, 4, 5]) == {
        ("t", 0): (2, 3, 4), ("t", 2): (3, 4, 2)}  # spares rotate: [4, 5] then [2, 5]
    # the victim's place goes last: the new preferred leader was in sync before


def test_reassign_needs_a_spare_broker():
    states = {("t", 0): _state(0, 1, (1, 2, 3))}
    with pytest.raises(InputError, match=r"allowed: brokers > replication_factor"):
        plan_moves(states, 1, [1, 2, 3])
    with pytest.raises(ClusterError, match="node 4 holds no replica"):
        plan_moves(states, 4, [1, 2, 3, 4])


def test_preferred_election_plans_away_from_a_leader_or_to_a_follower():
    states = {("t", 0): _state(0, 1, (1, 2, 3), isr=(1, 3)),
              ("t", 1): _state(1, 2, (2, 1, 3))}
    assert plan_leaders(states, 1) == {("t", 0): 3}  # 2 is out of sync: the next one
    assert plan_leaders(states, 3) == {("t", 0): 3, ("t", 1): 3}  # leads none: gains
    with pytest.raises(ClusterError, match="no other in-sync replica"):
        plan_leaders({("t", 0): _state(0, 1, (1, 2), isr=(1,))}, 1)


def test_membership_faults_are_offered_only_on_clusters_the_suite_owns():
    for name in ("reassign", "preferred_election"):
        assert FAILURES[name].backends == ("process", "docker")
        assert name in failures_on("process") and name not in failures_on("external")
    # the unregister tool runs beside local JVMs only
    assert FAILURES["broker_decommission"].backends == ("process",)
    assert "broker_decommission" not in failures_on("docker")


class Moved:
    """A cluster at rest after t-0 moved from [1, 2, 3] to [2, 3, 4]; node 1 still holds
    its old, shorter copy (Kafka deletes it asynchronously)."""

    def __init__(self, root):
        self.root = root

    def partition_state(self, topic, partition):
        return _state(partition, 2, (2, 3, 4))

    def log_end_offsets(self, topic, partition):
        return {2: 3, 3: 3, 4: 3}

    def high_watermark(self, topic, partition, timeout):
        return 3

    def log_dirs(self):
        return {n: self.root / f"node{n}" for n in (1, 2, 3, 4)}


def test_snapshot_after_a_move_compares_the_new_replicas(tmp_path):
    batch = build_batch(0, message_values(["m0", "m1", "m2"]))
    for node in (2, 3, 4):
        write_partition(tmp_path / f"node{node}" / "t-0", [batch], per_segment=1)
    write_partition(tmp_path / "node1" / "t-0", [build_batch(0, message_values(["x0"]))],
                    per_segment=1)  # stale and different: would be divergent if compared
    run = tmp_path / "run"
    snapshot_replicas(Moved(tmp_path), [TopicSpec("t", 1)], run, timeout=2)
    doc = json.loads((run / "replicas.json").read_text())
    assert doc["partitions"][0]["replicas"] == [2, 3, 4] and sorted(doc["nodes"]) == \
        ["2", "3", "4"], doc
    assert not (run / "replicas" / "1").exists()
    assert {f.node for f in load_layout(run).segment_files()} == {2, 3, 4}


@pytest.mark.parametrize("backend, failure", [("docker", "broker_decommission"),
                                              ("external", "reassign"),
                                              ("external", "preferred_election")])
def test_a_backend_that_cannot_take_the_fault_says_so_at_collection(backend, failure):
    matrix = {"scenario": "replication", "dimensions": {
        "backend": [backend], "failure": [failure], "brokers": [4]}}
    with pytest.raises(MatrixError, match=rf"{failure} needs backend .*got backend {backend}"):
        parse_matrix(Path("membership.yaml"), matrix)


class _QuorumStays:
    """Node 2 is the active controller and stays it; node 1 leads t-0."""

    def __init__(self):
        self.calls = []

    def partition_state(self, topic, partition):
        return _state(partition, 1, (1, 2, 3))

    def partition_views(self, topic, partition, timeout=30.0):
        return {None: self.partition_state(topic, partition)}

    def active_controller(self, timeout=30.0):
        return 2

    def node_state(self, node):
        raise KeyError(node)  # informative only in the nemesis

    def log_files(self):
        return {}

    def wait_healthy(self, topics, timeout):
        self.calls.append("healthy")


@pytest.mark.parametrize("keeps", [True, False])
def test_a_move_of_the_controllers_replicas_waits_for_no_controller_failover(monkeypatch,
                                                                             keeps):
    """A reassignment or election leaves the victim running as a voter: the quorum leader
    need not move, so the nemesis must not wait for it (it did, and failed a
    preferred_election case whose victim was the active controller)."""
    import dataclasses

    moved = dataclasses.replace(FAILURES["reassign"], name="moved", event="moved",
                                strike=lambda c, n: "moved", restore=lambda c, n, t: None,
                                keeps_controller=keeps)
    monkeypatch.setitem(FAILURES, "moved", moved)
    cluster = _QuorumStays()
    plan = FaultPlan(seed=1, failure="moved", target="controller", downtime_s=0)
    nemesis = Nemesis(cluster, _Writer(), plan, [("t", 0)], election_timeout=0.5)
    record = nemesis.run_fault(plan.preview(1)[0])
    assert record.node == 2 and cluster.calls == ["healthy"]
    if keeps:
        assert record.error is None and record.new_controller is None
    else:
        assert "KRaft quorum leader other than node 2" in record.error


class _Writer:
    def event(self, kind, **fields):
        pass


@pytest.mark.parametrize("name", ["reassign", "preferred_election", "broker_join",
                                  "broker_decommission"])
def test_a_moved_leaders_acks1_window_ends_at_recovery(name):
    """The old leader runs on after the move and acknowledges alone until it learns it was
    replaced: an acks=1 broker_join case lost 2 records acknowledged after metadata already
    named the new leader, which a window ending at the election refused to explain."""
    from pytest_kreplica.validation.evidence import excusing_events

    fault = {"index": 1, "failure": name, "target": "leader", "node": 1, "topic": "t",
             "partition": 0, "leader_before": 1, "isr_before": [1, 2, 3], "new_leader": 2,
             "elected_from_isr": True, "election_s": 1.0, "strike_ns": 10**9,
             "restore_ns": 5 * 10**9, "recovered_ns": 6 * 10**9, "led_before": ["t-0"]}
    (event,) = excusing_events([fault], {"acks": 1})
    assert event["until_ns"] == 6 * 10**9


class _OneNode:
    """A one-node cluster (Tansu, an external cluster of one broker): no metadata while its
    only node is paused, as a real one answers nothing then."""

    finds_controller = False  # as an external cluster declaring no controller

    def __init__(self):
        self.paused = False

    def partition_state(self, topic, partition):
        if self.paused:
            raise ClusterError("waited 30 s for metadata: no running node accepts connections")
        return _state(partition, 1, (1,))

    def partition_views(self, topic, partition, timeout=30.0):
        return {None: self.partition_state(topic, partition)}

    def pause(self, node):
        self.paused = True

    def resume(self, node):
        self.paused = False

    def start_node(self, node, timeout=60.0):
        self.paused = False

    def node_state(self, node):
        from pytest_kreplica.cluster.base import NodeState

        return NodeState.PAUSED if self.paused else NodeState.RUNNING

    def log_files(self):
        return {}

    def wait_healthy(self, topics, timeout):
        assert not self.paused


def test_a_paused_only_replica_is_not_asked_for_metadata_before_its_restore():
    """A Tansu SIGSTOP case restored its node 32 s after a 3 s pause: the nemesis asked the
    paused (only) node for the partition's replicas to measure an election that could not
    happen, and its 30 s wait failed the case."""
    cluster = _OneNode()
    plan = FaultPlan(seed=1, failure="soft", target="leader", downtime_s=0.2)
    nemesis = Nemesis(cluster, _Writer(), plan, [("t", 0)], election_timeout=5)
    record = nemesis.run_fault(plan.preview(1)[0])
    assert record.error is None, record.error
    assert record.node == 1 and record.new_leader is None and not cluster.paused
    assert (record.restore_ns - record.strike_ns) / 1e9 < 3.0


class _OneBrokerBehind:
    """The answering broker shows the move done; node 3 replays the metadata log and shows
    the union of old and new replicas for its first two looks."""

    def __init__(self):
        self.looks = 0

    def partition_states(self, topics, timeout=30.0):
        return {("t", 0): _state(0, 2, (2, 3, 4))}

    def topic_views(self, topics, timeout=30.0):
        self.looks += 1
        behind = (2, 3, 4, 1) if self.looks <= 2 else (2, 3, 4)
        return {2: {("t", 0): _state(0, 2, (2, 3, 4))},
                3: {("t", 0): _state(0, 2, behind, (2, 3, 4))}}

    def log_files(self):
        return {}


def test_a_reassignment_is_complete_only_once_every_broker_shows_it():
    """A CI run read a finished move back as [3, 4, 1, 2] from a broker right after the
    restore had seen it done in another broker's metadata."""
    from pytest_kreplica.faults.reassign import wait_complete

    cluster = _OneBrokerBehind()
    seen, _ = wait_complete(cluster, {("t", 0): (2, 3, 4)}, 5.0)
    assert cluster.looks == 3 and seen[("t", 0)].replicas == (2, 3, 4)
    cluster.looks = -100  # node 3 never catches up: the wait says which broker lags
    with pytest.raises(ClusterError, match=r"t-0 in node 3's metadata: replicas \[2, 3, 4, 1\]"):
        wait_complete(cluster, {("t", 0): (2, 3, 4)}, 0.5)
