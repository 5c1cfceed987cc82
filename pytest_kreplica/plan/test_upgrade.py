"""Test case C.7: replication across Kafka versions (the matrix version-compat).

``compat: mirror-pair`` mirrors a ``kafka_version`` source into a ``target_kafka_version``
target with MirrorMaker 2 (no faults): the mirrored history and both clusters' replicas must
be valid. ``compat: upgrade`` upgrades a 3-node cluster from ``kafka_version`` to
``target_kafka_version`` one node at a time while the producer and consumer run, then
finalises metadata.version: the whole history must be valid, every node must run the new
version and the finalised metadata.version must be the new one.
``pytest --pyargs pytest_kreplica.plan -m version_compat`` runs them all;
``-m "version_compat and ci"`` the CI-sized pair."""

import json

import pytest

from ..cluster.kafka import distribution


@pytest.mark.kreplica_scenario("version-compat")
def test_version_compat(kreplica_case, kreplica_run):
    result = kreplica_run(kreplica_case)
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
