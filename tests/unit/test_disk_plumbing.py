"""Disk-fault plumbing without a JVM or a mount: which cases get small disks, the one-line
errors (no root, a backend that cannot, a cluster without disks), which stale mounts the
sweep takes, and the node's log lines the strike waits for."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_kreplica.cluster.base import ClusterSpec
from pytest_kreplica.cluster.facilities.impl import smalldisk
from pytest_kreplica.cluster.pool import cluster_spec, spec_key
from pytest_kreplica.errors import EnvironmentProblem, InputError
from pytest_kreplica.faults import disk
from pytest_kreplica.matrix import load_matrix
from tests.matrix_lines import matrix_error_line

DISK_FAILURES = ("disk_full", "disk_readonly")
DISKS = frozenset({"small_disk"})


def _case(failure):
    return SimpleNamespace(brokers=3, kafka_version=None, backend="process", failure=failure,
                           scenario="replication", compat="mirror-pair",
                           target_kafka_version=None)


def test_disk_fault_cases_get_a_cluster_with_small_disks():
    plain, full = cluster_spec(_case("hard")), cluster_spec(_case("disk_full"))
    assert not plain.facilities and full.facilities == DISKS
    assert cluster_spec(_case("disk_readonly")) == full
    assert spec_key(full) == spec_key(plain) + "-disks"
    assert ClusterSpec(facilities=DISKS).with_config(acks="all").facilities == DISKS


def test_a_disk_fault_on_an_external_cluster_is_one_matrix_line(tmp_path):
    text = matrix_error_line(tmp_path, "  backend: [external]\n  failure: [disk_readonly]\n")
    assert ".failure" in text
    assert "needs backend process or docker" in text and "allowed on external" in text


def test_the_disk_faults_matrix_has_a_ci_case_per_value():
    matrix = load_matrix(Path(__file__).parents[2] / "matrices" / "disk-faults.yaml")
    ci = [c for c in matrix.cases if "ci" in c.markers]
    assert sorted(c.failure for c in ci) == sorted(DISK_FAILURES)
    assert {(c.acks, c.backend, c.target) for c in ci} == {(-1, "process", "leader")}
    assert {c.backend for c in matrix.cases} == {"process", "docker"}
    assert {c.acks for c in matrix.cases} == {-1, 1}  # and the weaker setting beside


def test_the_registry_holds_the_disk_faults():
    from pytest_kreplica.faults import FAILURES, RANDOM_FAILURES, failures_on

    assert {n for n, f in FAILURES.items() if "small_disk" in f.facilities} == set(DISK_FAILURES)
    for name in DISK_FAILURES:
        failure = FAILURES[name]
        assert failure.event == name and failure.restore_event == "heal"
        assert failure.backends == ("process", "docker") and failure.moves_leadership
        assert name not in RANDOM_FAILURES and name not in failures_on("external")
    assert len({FAILURES[n].colour for n in FAILURES}) == len(FAILURES)  # one colour each
    assert len({FAILURES[n].label for n in FAILURES}) == len(FAILURES)


def test_without_root_mounting_is_one_line(monkeypatch):
    monkeypatch.setattr(smalldisk.os, "geteuid", lambda: 1000)
    with pytest.raises(EnvironmentProblem) as err:
        smalldisk.check_environment()
    assert "need root" in str(err.value) and "uid 1000" in str(err.value)
    monkeypatch.setattr(smalldisk.shutil, "which", lambda t: None if t == "e2fsck" else t)
    with pytest.raises(EnvironmentProblem, match="need e2fsck on PATH"):
        smalldisk.check_environment()


def test_a_cluster_without_disks_cannot_take_the_fault():
    with pytest.raises(InputError, match="facility small_disk"):
        disk.strike_full(SimpleNamespace(facility=lambda name: None), 1)


def test_sweep_takes_only_mounts_of_dead_owners(monkeypatch, tmp_path):
    dead = smalldisk.image_name({"pid": 4242, "started": 1.5})
    live = smalldisk.image_name()  # this process
    table = {tmp_path / "a": ("/dev/loop1", "ext4", "rw"),
             tmp_path / "b": ("/dev/loop2", "ext4", "rw"),
             tmp_path / "c": ("/dev/loop3", "ext4", "rw"),  # not ours: another image name
             tmp_path / "d": ("tmpfs", "tmpfs", "rw")}
    images = {"/dev/loop1": tmp_path / dead, "/dev/loop2": tmp_path / live,
              "/dev/loop3": tmp_path / "other.img"}
    removed = []
    monkeypatch.setattr(smalldisk, "mounts", lambda: table)
    monkeypatch.setattr(smalldisk, "backing_file", images.get)
    monkeypatch.setattr(smalldisk.SmallDisk, "remove",
                        lambda self: removed.append((self.mountpoint, self.image)))
    assert smalldisk.sweep_stale() == [tmp_path / "a"]
    assert removed == [(tmp_path / "a", tmp_path / dead)]


def test_image_names_carry_the_owner_token():
    name = smalldisk.image_name({"pid": 17, "started": 1700000000.25})
    assert smalldisk.IMAGE_RE.match(name).groups() == ("17", "1700000000.25")


# lines Kafka 4.x wrote in a disk_full run (tests/integration/test_disk_faults.py)
WRITE = ("[2026-11-23 20:37:09,434] ERROR Error while appending records to t-0 in dir "
         "/x/node-3/data (org.apache.kafka.storage.internals.log.LogDirFailureChannel)")
STOP = ("[2026-11-23 20:37:09,436] WARN [ReplicaManager broker=3] Stopping serving replicas "
        "in dir /x/node-3/data with uuid Some(Dp4p) because the log directory has failed. "
        "(kafka.server.ReplicaManager)")
HALT = ("[2026-11-23 20:37:09,468] ERROR Shutdown broker because all log dirs in "
        "/x/node-3/data have failed (kafka.log.LogManager)")
# ... and in a disk_readonly run whose first failed write was the KRaft metadata log's
RAFT = ("[2026-11-23 21:05:34,942] ERROR Encountered fatal fault: Unexpected error in raft IO "
        "thread (org.apache.kafka.server.fault.ProcessTerminatingFaultHandler)")


def test_the_strike_waits_for_the_offline_lines_not_the_failed_write(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("INFO started\n" + WRITE + "\n")
    cluster = SimpleNamespace(node=lambda n: SimpleNamespace(log_file=log))
    assert disk.FAILED_WRITE.search(WRITE) and not disk.OFFLINE.search(WRITE)
    assert all(disk.OFFLINE.search(x) for x in (STOP, HALT, RAFT))
    log.write_text("INFO started\n" + WRITE + "\n" + STOP + "\n" + HALT + "\n")
    said = disk.offline_evidence(cluster, 3, len("INFO started\n"), "disk_full")
    assert said.startswith("node 3 log: 'ERROR Error while appending")
    assert "Stopping serving replicas" in said and "Shutdown broker" in said
    assert "2026-11-23" not in said  # timestamps dropped: the event has its own time
