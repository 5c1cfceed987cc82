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
import shutil

import pytest


@pytest.fixture
def compat_run(kreplica_options, kreplica_pool, kreplica_output, kreplica_record):
    from pytest_kreplica.cluster.base import ClusterSpec
    from pytest_kreplica.mirror import acquire_pair, run_mirror_case
    from pytest_kreplica.scenario import run_case
    from pytest_kreplica.upgrade import VersionedCluster, upgrade_hooks

    def run(case):
        run_dir = kreplica_output / case.case_id
        if run_dir.exists():  # histories are append-only: never mix two runs
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        row = {"case_id": case.case_id, "verdict": "error", "run_dir": str(run_dir)}
        try:
            if case.compat == "mirror-pair":
                source, target = acquire_pair(kreplica_pool, case, case.target_kafka_version)
                result = run_mirror_case(case, source, target, run_dir,
                                         spark_master=kreplica_options.spark_master,
                                         replica_check=kreplica_options.replica_check)
            else:
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
                finally:
                    cluster.close()
            row = result.summary()
            return result
        finally:
            kreplica_record(row)

    return run


@pytest.mark.kreplica_scenario("version-compat")
def test_version_compat(kreplica_case, compat_run):
    from pytest_kreplica import distribution

    result = compat_run(kreplica_case)
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
