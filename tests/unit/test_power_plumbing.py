"""Power-loss plumbing without a JVM or a mount: which cases get lazy filesystems, the
one-line errors, the registry entries, and which stale mounts the sweep takes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_kreplica.cluster.base import ClusterSpec
from pytest_kreplica.cluster.facilities.impl import lazymount
from pytest_kreplica.cluster.pool import cluster_spec, spec_key
from pytest_kreplica.cluster.ports import process_identity
from pytest_kreplica.errors import EnvironmentProblem, InputError
from pytest_kreplica.faults import power
from pytest_kreplica.matrix import load_matrix
from tests.matrix_lines import matrix_error_line

POWER_FAILURES = ("power_loss", "power_loss_all", "power_loss_replicas")
LAZY = frozenset({"lazy_fs"})


def _case(failure):
    return SimpleNamespace(brokers=3, kafka_version=None, backend="process", failure=failure,
                           scenario="replication", compat="mirror-pair",
                           target_kafka_version=None)


def test_power_loss_cases_get_a_cluster_on_lazy_filesystems():
    plain, lazy = cluster_spec(_case("hard")), cluster_spec(_case("power_loss"))
    assert lazy.facilities == LAZY and not plain.facilities
    assert cluster_spec(_case("power_loss_all")) == lazy
    assert spec_key(lazy) == spec_key(plain) + "-lazy"
    assert ClusterSpec(facilities=LAZY).with_config(acks="all").facilities == LAZY


def test_power_loss_on_an_external_cluster_is_one_matrix_line(tmp_path):
    text = matrix_error_line(tmp_path, "  backend: [external]\n  failure: [power_loss]\n")
    assert "needs backend process or docker" in text


def test_the_registry_holds_the_power_faults():
    from pytest_kreplica.faults import FAILURES, RANDOM_FAILURES, failures_on

    assert {n for n, f in FAILURES.items() if "lazy_fs" in f.facilities} == set(POWER_FAILURES)
    for name in POWER_FAILURES:
        failure = FAILURES[name]
        assert failure.event == name and failure.backends == ("process", "docker")
        assert failure.leader_gone == "strike"
        assert name not in RANDOM_FAILURES and name not in failures_on("external")
    assert FAILURES["power_loss"].moves_leadership  # the others elect a new leader
    assert not FAILURES["power_loss_all"].moves_leadership  # nobody is up to lead


def test_the_power_loss_matrix_has_a_ci_case_per_value():
    matrix = load_matrix(Path(__file__).parents[2] / "matrices" / "power-loss.yaml")
    ci = [c for c in matrix.cases if "ci" in c.markers]
    assert sorted({c.failure for c in ci}) == sorted(POWER_FAILURES)
    assert {c.failure for c in matrix.cases} == set(POWER_FAILURES)


def test_a_cluster_without_lazy_filesystems_cannot_take_the_fault():
    with pytest.raises(InputError, match="facility lazy_fs"):
        power.strike_one(SimpleNamespace(facility=lambda name: None), 1)


def test_without_root_or_fusermount3_mounting_is_one_line(monkeypatch):
    monkeypatch.setattr(lazymount.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(lazymount.shutil, "which", lambda tool: None)
    with pytest.raises(EnvironmentProblem) as err:
        lazymount.check_environment()
    assert "uid 1000" in str(err.value) and "fusermount3" in str(err.value)


def test_sweep_takes_only_mounts_of_dead_owners(monkeypatch, tmp_path):
    me = process_identity()
    table = {tmp_path / "a": ("kreplica-lazy.4242-1.5", lazymount.FSTYPE),
             tmp_path / "b": (f"kreplica-lazy.{me['pid']}-{me['started']}", lazymount.FSTYPE),
             tmp_path / "c": ("sshfs#host:/", "fuse.sshfs")}
    unmounted = []
    monkeypatch.setattr(lazymount, "mounts", lambda: table)
    monkeypatch.setattr(lazymount, "_umount", lambda point, lazy=False: (
        unmounted.append((point, lazy)) or SimpleNamespace(returncode=0)))
    assert lazymount.sweep_stale() == [tmp_path / "a"]
    assert unmounted == [(tmp_path / "a", True)]


def _cut_text(nodes_logs):
    return "; ".join(f"node {n}: 120 un-fsynced segment bytes dropped (900 bytes from 2 "
                     f"file(s) in all, preallocated indexes included: x), 3 file(s) "
                     f"written since their last fsync, segments cut in [{' '.join(logs)}]"
                     for n, logs in nodes_logs)


def test_power_loss_of_every_replica_excuses_only_partitions_cut_on_every_copy():
    from pytest_kreplica.faults.plan import FaultRecord
    from pytest_kreplica.validation.evidence import POWER, excusing_events, find_excuse

    measured = _cut_text([(1, ["t-0", "t-1"]), (2, ["t-0", "t-1"]), (3, ["t-0"])])
    assert power.segments_cut(measured) == {"t-0": {1, 2, 3}, "t-1": {1, 2}}
    rec = FaultRecord(1, "power_loss_all", "leader", "t", 0, node=1, leader_before=1,
                      isr_before=[1, 2, 3], strike_ns=100, struck_ns=150, restore_ns=900,
                      measured=measured)
    events = excusing_events([rec.to_dict()], {"acks": -1, "replication_factor": 3})
    assert [(e["kind"], e["topic"], e["partition"], e["until_ns"]) for e in events] == \
        [(POWER, "t", 0, 150)]
    assert find_excuse(events, "t", 0, 149) is not None
    assert find_excuse(events, "t", 0, 151) is None  # sent after every node was down
    assert find_excuse(events, "t", 1, 10) is None  # one copy kept its fsynced bytes
    # flush.messages=1: nothing un-fsynced in the segments, so nothing is excused
    synced = FaultRecord(1, "power_loss_all", "leader", "t", 0, node=1, strike_ns=100,
                         struck_ns=150, measured=_cut_text([(1, []), (2, []), (3, [])]))
    assert excusing_events([synced.to_dict()], {"acks": -1, "replication_factor": 3}) == []
    # one node's power loss: its copy only, which excuses nothing unless it was the only one
    one = FaultRecord(1, "power_loss", "leader", "t", 0, node=1, leader_before=1,
                      strike_ns=100, struck_ns=150, measured=_cut_text([(1, ["t-0"])]))
    assert excusing_events([one.to_dict()], {"acks": -1, "replication_factor": 3}) == []
    (alone,) = excusing_events([one.to_dict()], {"acks": -1, "replication_factor": 1})
    assert (alone["kind"], alone["topic"], alone["partition"]) == (POWER, "t", 0)


class _EveryNodeDown:
    """Three nodes that a strike stops at once; metadata then waits out its own timeout,
    as a real cluster's admin client does when nothing listens."""

    def __init__(self):
        self.down, self.started = False, []
        self.nodes = [SimpleNamespace(node_id=n) for n in (1, 2, 3)]

    def partition_state(self, topic, partition):
        if self.down:
            import time

            time.sleep(3.0)
            raise power.ClusterError("no running node accepts connections")
        from pytest_kreplica.cluster.base import PartitionState

        return PartitionState(topic, partition, 1, 5, (1, 2, 3), (1, 2, 3))

    def partition_views(self, topic, partition, timeout=30.0):
        return {None: self.partition_state(topic, partition)}

    def active_controller(self, timeout=30.0):
        return 1

    def node_state(self, node):
        return SimpleNamespace(value="stopped" if self.down else "running")

    def log_files(self):
        return {}

    def wait_healthy(self, topics, timeout):
        assert not self.down


class _Writer:
    def event(self, kind, **fields):
        pass


def test_with_every_node_down_the_nemesis_waits_for_no_election(monkeypatch):
    """A power_loss_all case restored its nodes 30 s after a 3 s downtime: the nemesis asked
    a cluster with no node running for a new leader and a new controller, and each request
    waited out its own timeout."""
    import dataclasses
    import time

    from pytest_kreplica.faults import FAILURES, FaultPlan, Nemesis
    from pytest_kreplica.faults.plan import ALL_DOWN

    cluster = _EveryNodeDown()
    cut = dataclasses.replace(
        FAILURES["power_loss_all"], name="cut", event="cut",
        strike=lambda c, n: setattr(c, "down", True),
        restore=lambda c, n, t: setattr(c, "down", False))
    monkeypatch.setitem(FAILURES, "cut", cut)
    plan = FaultPlan(seed=1, failure="cut", target="leader", downtime_s=0.3)
    nemesis = Nemesis(cluster, _Writer(), plan, [("t", 0)], election_timeout=20)
    started = time.monotonic()
    record = nemesis.run_fault(plan.preview(1)[0])
    assert record.error is None, record.error
    assert record.election_note == ALL_DOWN and record.new_controller is None
    assert time.monotonic() - started < 2.5  # no metadata request waited while all were down
