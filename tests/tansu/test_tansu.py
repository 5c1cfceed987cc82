"""Tansu, a Kafka-compatible broker this project did not write, under the same matrix,
nemesis and Spark verdicts as Apache Kafka: ``TestTansu`` is a ``ReplicationSuite`` whose
environment starts one Tansu broker on loopback (memory storage) and hands the suite only a
cluster file (the external backend: kill -KILL / start.sh, kill -STOP / kill -CONT). Whatever
the checker finds is the result (README "Matrix of brokers"); nothing is loosened for it.
``pytest tests/tansu -m tansu -p no:xdist``."""

import pytest

import pytest_kreplica as kreplica
from pytest_kreplica.cluster.external import tansu

pytestmark = pytest.mark.tansu

# Tansu answers ApiVersions like Kafka 4.x clients expect; topic configs are spelt the 4.x way
KAFKA_VERSION = "4.0.0"


class TestTansu(kreplica.ReplicationSuite):
    # tansu.yaml holds what one broker can run; smoke and leader-failure show what it cannot
    # (replication factor 3, three brokers, a KRaft controller), deselected one line each
    kreplica_matrices = ("tansu.yaml", "smoke", "leader-failure")
    kreplica_capabilities = kreplica.Capabilities(
        failures=("hard", "soft"), brokers=(1,), max_replication_factor=1, controller=False,
        transactions=False, replica_logs=False,
        where=f"Tansu {tansu.TANSU_VERSION} (one broker, memory storage)")

    @pytest.fixture(scope="class")
    def kreplica_environment(self, tmp_path_factory):
        broker = tansu.TansuBroker(tansu.ensure_tansu(), tmp_path_factory.mktemp("tansu"))
        broker.start()
        try:
            yield broker.cluster_file(broker.workdir / "cluster.yaml", KAFKA_VERSION)
        finally:
            broker.stop()
