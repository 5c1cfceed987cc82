"""ClusterPool: reuse by spec, health gate, replacement, one cluster alive at a time (pure
logic, with a recording fake cluster)."""

from __future__ import annotations

import pytest

from pytest_kreplica.cluster.base import ClusterSpec
from pytest_kreplica.cluster.pool import ClusterPool, cluster_spec, spec_key
from pytest_kreplica.errors import ClusterError


class FakeCluster:
    def __init__(self, spec, workdir, log):
        self.spec, self.workdir, self.log = spec, workdir, log
        self.healthy = True
        self.fail_start = False

    def start(self, timeout):
        self.log.append(("start", self.workdir.name))
        if self.fail_start:
            raise ClusterError("no quorum")

    def wait_healthy(self, timeout):
        self.log.append(("gate", self.workdir.name))
        if not self.healthy:
            raise ClusterError("ISR not full")

    def close(self):
        self.log.append(("close", self.workdir.name))


@pytest.fixture
def pool(tmp_path):
    log: list = []
    made: list[FakeCluster] = []

    def factory(spec, workdir):
        made.append(FakeCluster(spec, workdir, log))
        return made[-1]

    pool = ClusterPool(tmp_path, factory)
    pool.log, pool.made = log, made
    return pool


THREE, FOUR = ClusterSpec(brokers=3), ClusterSpec(brokers=4)


def test_same_spec_reuses_after_the_health_gate(pool):
    first = pool.acquire(THREE)
    assert pool.acquire(ClusterSpec(brokers=3)) is first
    assert pool.log == [("start", "cluster-1-process-b3-kdefault"),
                        ("gate", "cluster-1-process-b3-kdefault")]


def test_a_cluster_that_cannot_heal_is_replaced(pool):
    first = pool.acquire(THREE)
    first.healthy = False
    second = pool.acquire(THREE)
    assert second is not first and pool.replaced == 1
    assert ("close", "cluster-1-process-b3-kdefault") in pool.log


def test_another_spec_closes_the_previous_cluster(pool):
    pool.acquire(THREE)
    pool.acquire(FOUR)
    assert len(pool) == 1
    assert pool.log[-2:] == [("close", "cluster-1-process-b3-kdefault"),
                             ("start", "cluster-2-process-b4-kdefault")]
    pool.close_all()
    assert pool.log[-1] == ("close", "cluster-2-process-b4-kdefault") and len(pool) == 0


def test_started_counts_starts_not_reuse(pool):
    assert pool.started == 0
    first = pool.acquire(THREE)
    assert pool.started == 1
    assert pool.acquire(THREE) is first and pool.started == 1  # reused
    first.healthy = False
    pool.acquire(THREE)  # replaced: a start
    assert pool.started == 2
    pool.acquire(FOUR)  # max_alive=1: evicts THREE, starts FOUR
    pool.acquire(THREE)  # evicted before: started again
    assert pool.started == 4


def test_failed_start_closes_and_raises(tmp_path):
    log: list = []

    def factory(spec, workdir):
        cluster = FakeCluster(spec, workdir, log)
        cluster.fail_start = True
        return cluster

    with pytest.raises(ClusterError, match="no quorum"):
        ClusterPool(tmp_path, factory).acquire(THREE)
    assert log[-1][0] == "close"


def test_case_spec_ignores_topic_settings():
    from types import SimpleNamespace

    a = SimpleNamespace(brokers=3, kafka_version=None, backend="process", partitions=1)
    b = SimpleNamespace(brokers=3, kafka_version=None, backend="process", partitions=10)
    assert cluster_spec(a) == cluster_spec(b)
    assert spec_key(ClusterSpec(3, "3.9.2", (("a", "1"),))) == spec_key(
        ClusterSpec(3, "3.9.2", (("a", "1"),)))


def test_an_earlier_runs_cluster_folder_of_the_same_name_is_replaced(pool, tmp_path):
    """A second run of the same command into the same output: the first run's folder (its
    nodes' logs kept) is replaced, never started into."""
    stale = tmp_path / "cluster-1-process-b3-kdefault" / "node-1"
    stale.mkdir(parents=True)
    (stale / "server.log").write_text("an earlier run")
    pool.acquire(THREE)
    assert pool.log == [("start", "cluster-1-process-b3-kdefault")]
    assert not stale.exists()
