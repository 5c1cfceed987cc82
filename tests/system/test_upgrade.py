"""Test case C.7: replication across Kafka versions (matrices/version-compat.yaml).

``compat: mirror-pair`` mirrors a ``kafka_version`` source into a ``target_kafka_version``
target with MirrorMaker 2 (no faults): the mirrored history and both clusters' replicas must
be valid. ``compat: upgrade`` upgrades a 3-node cluster from ``kafka_version`` to
``target_kafka_version`` one node at a time while the producer and consumer run, then
finalises metadata.version: the whole history must be valid, every node must run the new
version and the finalised metadata.version must be the new one.
``pytest tests/system -m version_compat`` runs them all; ``-m "version_compat and ci"`` the
CI-sized pair."""

import json

import pytest


@pytest.fixture
def upgrade_run(kreplica_options, kreplica_pool, recorded_run):
    """``upgrade_run(case) -> CaseResult``: a rolling upgrade under load on a cluster of its
    own (per-node versions), closed afterwards."""
    from pytest_kreplica.cluster.base import ClusterSpec
    from pytest_kreplica.scenarios.phases import run_case
    from pytest_kreplica.scenarios.upgrade import VersionedCluster, upgrade_hooks

    def run(case):
        def body(run_dir):
            spec = ClusterSpec(brokers=case.brokers, kafka_version=case.kafka_version,
                               backend=case.backend, role="upgrade")
            cluster = VersionedCluster(spec, run_dir / "cluster")
            try:
                cluster.start(timeout=kreplica_pool.start_timeout)
                hooks, _ = upgrade_hooks(case, case.target_kafka_version)
                result = run_case(case, cluster, run_dir, hooks,
                                  spark_master=kreplica_options.spark_master,
                                  replica_check=kreplica_options.replica_check,
                                  drain_timeout=120.0)
                result.extra["node_versions"] = {
                    str(n.node_id): cluster.node_version(n.node_id) for n in cluster.nodes}
                return result
            finally:
                cluster.close()

        return recorded_run(case, body)

    return run


@pytest.mark.kreplica_scenario("version-compat")
def test_version_compat(kreplica_case, mirror_pair_run, upgrade_run):
    from pytest_kreplica.cluster import distribution

    if kreplica_case.compat == "upgrade":
        result = upgrade_run(kreplica_case)
    else:
        result = mirror_pair_run(kreplica_case, kreplica_case.target_kafka_version)
    run = json.loads((result.run_dir / "run.json").read_text())
    if kreplica_case.compat == "upgrade":
        upgrade = result.extra.get("upgrade")
        assert upgrade, (f"expected the rolling upgrade to finish, seen hook errors "
                         f"{result.hook_errors}; run directory {result.run_dir}")
        new = kreplica_case.target_kafka_version or distribution.default_version()
        assert set(result.extra["node_versions"].values()) == {new}, result.extra
        assert [s["node"] for s in upgrade["nodes"]] and len(upgrade["nodes"]) == \
            kreplica_case.brokers, upgrade
        assert upgrade["finalized"] == upgrade["metadata_version"], (
            f"expected metadata.version finalised at {upgrade['metadata_version']}, "
            f"seen {upgrade['finalized']}")
        assert run["cluster"]["kafka_version"] == kreplica_case.kafka_version \
            or kreplica_case.kafka_version is None
    else:
        versions = (run["cluster"]["source"]["kafka_version"],
                    run["cluster"]["target"]["kafka_version"])
        assert versions[0] != versions[1], f"expected a mixed-version pair, seen {versions}"
        assert (kreplica_case.kafka_version or versions[0]) == versions[0]
    result.assert_valid()
