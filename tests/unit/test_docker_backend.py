"""Pure logic of the docker backend (no engine): partition is docker-only, and the sweep
removes what a dead owner left and never what a live owner runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_kreplica.cluster import ClusterSpec, reaper
from pytest_kreplica.cluster.docker.owner import LABEL_OWNER, sweep
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.errors import InputError


@pytest.mark.parametrize("fault", ["partition", "heal"])
def test_partition_on_process_backend_names_docker(tmp_path, fault):
    cluster = ProcessCluster(ClusterSpec(brokers=3), tmp_path)
    with pytest.raises(InputError, match="needs the docker backend .*--kreplica-backend docker"):
        getattr(cluster, fault)(1)


class _Thing:
    def __init__(self, name: str, labels: dict[str, str], removed: list[str]):
        self.name, self.labels, self._removed = name, labels, removed
        self.attrs = {"Labels": labels}

    def remove(self, force: bool = False) -> None:
        self._removed.append(self.name)


class _Collection:
    def __init__(self, things):
        self.things = things

    def list(self, all: bool = False, filters=None,  # noqa: A002 - docker SDK's keyword
             ignore_removed: bool = False):
        key = filters["label"]
        return [t for t in self.things if key in t.labels]


def test_sweep_removes_only_dead_owners():
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    dead_token = f"{dead}:1.0"
    live_token = reaper.owner_token()
    removed: list[str] = []

    class Client:
        containers = _Collection([_Thing("c-dead", {LABEL_OWNER: dead_token}, removed),
                                  _Thing("c-live", {LABEL_OWNER: live_token}, removed),
                                  _Thing("c-other", {"x": "y"}, removed)])
        networks = _Collection([_Thing("n-dead", {LABEL_OWNER: dead_token}, removed),
                                _Thing("n-live", {LABEL_OWNER: live_token}, removed)])

    assert sweep(Client()) == ["c-dead", "n-dead"]
    assert removed == ["c-dead", "n-dead"]


def test_partition_matrix_on_process_backend_is_one_line_error(tmp_path):
    from pytest_kreplica.errors import MatrixError
    from pytest_kreplica.matrix import load_matrix

    path = tmp_path / "cut.yaml"
    path.write_text("scenario: replication\ndimensions:\n  failure: [partition]\n")
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    message = str(info.value)
    assert "cut.yaml" in message and "failure" in message and "backend docker" in message
    assert "\n" not in message
    assert load_matrix(path, defaults={"backend": "docker"}).cases  # fine on docker


def test_network_partition_matrix_runs_on_docker():
    from pathlib import Path

    from pytest_kreplica.matrix import load_matrix

    root = Path(__file__).resolve().parents[2]
    cases = load_matrix(root / "matrices" / "network-partition.yaml").cases
    params = [dict(c.params) for c in cases]
    assert {(p["target"], p["acks"]) for p in params} == {
        ("leader", -1), ("leader", 1), ("follower", -1), ("follower", 1)}
    assert all(p["backend"] == "docker" and p["failure"] == "partition" for p in params)
    assert all("backend_docker" in c.markers for c in cases)


def test_nemesis_partitions_then_heals_and_records_both():
    from pytest_kreplica.faults import FaultPlan, FaultRecord, Nemesis

    calls: list[tuple] = []
    events: list[str] = []

    class Cluster:
        def partition(self, node):
            calls.append(("partition", node))

        def heal(self, node):
            calls.append(("heal", node))

        def wait_healthy(self, topics, timeout):
            calls.append(("healthy", tuple(topics)))

    class Writer:
        def event(self, kind, **fields):
            events.append(kind)

    plan = FaultPlan(seed=1, failure="partition", target="leader")
    nemesis = Nemesis(Cluster(), Writer(), plan, [("t", 0)])
    spec = plan.preview(1)[0]
    record = FaultRecord(spec.index, spec.failure, spec.target, "t", 0)
    record.node = 2
    nemesis._strike(spec, record)
    nemesis._restore(spec, record)
    assert calls == [("partition", 2), ("heal", 2), ("healthy", ("t",))]
    assert events == ["partition", "heal", "recovered"]
    assert record.error is None
