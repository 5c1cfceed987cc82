"""``ReplicationSuite`` proven on a real cluster: a subclass whose environment is the built-in
process backend gets the cases of ``suite-ci.yaml`` through the same fixtures and runner as
tests/system, and its capabilities deselect what it does not offer (the soft case) at
collection. ``-m "suite_ci and ci"``: the C.1 case (CI); ``-m suite_ci``: also the hard kill."""

import pytest

import pytest_kreplica as kreplica


class TestProcessBrokerSuite(kreplica.ReplicationSuite):
    kreplica_matrices = ("suite-ci.yaml",)
    kreplica_capabilities = kreplica.Capabilities(failures=("hard",), brokers=(3,),
                                                  transactions=False)

    @pytest.fixture(scope="class")
    def kreplica_environment(self):
        """A factory of the built-in backends: the case's ClusterSpec picks process."""
        return kreplica.create_cluster

    def test_the_run_directory_is_the_suites(self, kreplica_output):
        """Run directories of a suite class go to a folder named after it (two classes may
        run the same case ids)."""
        assert kreplica_output.name == type(self).__name__

