"""Test case C.1 (and, with the failure dimensions, C.2-C.5): every selected matrix case of
scenario ``replication`` runs against a real cluster; the history checker's verdict and the
replica-log comparison must both be valid. Select subsets by marker, e.g.
``pytest --pyargs pytest_kreplica.plan -m "smoke and compression_gzip" -n 2``."""

import pytest


@pytest.mark.kreplica_scenario("replication")
def test_replication(kreplica_case, kreplica_run):
    result = kreplica_run(kreplica_case)
    result.assert_valid()
