"""``Capabilities.lacks`` (pure logic) and ``ReplicationSuite``'s collection: a subclass gets
its matrices' cases with their markers, loses those its capabilities cannot run with one line
each, and a subclass without an environment fails with one line naming the three ways."""

from types import SimpleNamespace

from pytest_kreplica.cluster.capabilities import Capabilities, needs_transactions


def case(**values):
    base = dict(scenario="replication", failure="none", target="leader", brokers=3,
                replication_factor=3, idempotence=True, kafka_version=None)
    return SimpleNamespace(**{**base, **values})


def test_a_default_environment_runs_a_plain_case():
    assert Capabilities().lacks(case()) is None
    assert Capabilities().lacks(case(failure="hard")) is None


def test_each_missing_capability_is_named():
    tansu = Capabilities(failures=("hard",), brokers=(1,), max_replication_factor=1,
                         controller=False, transactions=False, kafka_version="4.0.0",
                         where="Tansu")
    assert "failure soft is not offered by Tansu" in tansu.lacks(case(failure="soft", brokers=1))
    assert "needs 3 brokers; Tansu declares 1 nodes" in tansu.lacks(case())
    assert "replication factor 3; Tansu replicates at most 1" in tansu.lacks(case(brokers=1))
    assert "capabilities.controller" in tansu.lacks(
        case(failure="hard", target="controller", brokers=1, replication_factor=1))
    assert "needs transactions" in tansu.lacks(
        case(brokers=1, replication_factor=1, workload="txn"))
    assert "needs Kafka 3.9.2; Tansu speaks 4.0.0" in tansu.lacks(
        case(brokers=1, replication_factor=1, kafka_version="3.9.2"))
    assert tansu.lacks(case(brokers=1, replication_factor=1, kafka_version="4.0.1")) is None
    assert "scenario mirror starts clusters of its own" in tansu.lacks(case(scenario="mirror"))


def test_transactions_are_needed_by_transactional_workloads_and_exactly_once_mirrors():
    assert needs_transactions(case(workload="txn"))
    assert not needs_transactions(case(workload="plain"))
    assert needs_transactions(case(scenario="mirror", mirror_semantics="exactly-once"))
    assert not needs_transactions(case(scenario="mirror", mirror_semantics="at-least-once"))
    assert not needs_transactions(case())


MATRIX = """scenario: replication
dimensions:
  failure: [none, hard, soft]
  target: [leader]
  replication_factor: [1]
  brokers: [1]
"""

SUITE = """import pytest
import pytest_kreplica as kreplica


class TestBroker(kreplica.ReplicationSuite):
    kreplica_matrices = ("m.yaml",)
    kreplica_capabilities = kreplica.Capabilities(failures=("hard",), brokers=(1,))
"""


def test_a_subclass_gets_the_matrix_and_loses_what_it_cannot_run(pytester):
    pytester.makefile(".yaml", m=MATRIX)
    pytester.makepyfile(test_broker=SUITE)
    result = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:xdist",
                                           "--strict-markers")
    result.stdout.fnmatch_lines([
        "*deselected 1 case(s) of TestBroker: failure soft is not offered by TestBroker*",
        "*TestBroker::test_replication?m-nofail?",
        "*TestBroker::test_replication?m-hard?"])
    assert result.ret == 0
    # the matrix's markers select, as in tests/system
    result = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:xdist",
                                           "-m", "failure_hard")
    result.stdout.fnmatch_lines(["*TestBroker::test_replication?m-hard?", "*1/3 tests*"])


def test_a_subclass_without_an_environment_fails_with_one_line(pytester):
    pytester.makefile(".yaml", m=MATRIX)
    pytester.makepyfile(test_broker=SUITE)
    # no first-run preparation (Spark's warm-up): the failure comes before any cluster
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:kreplica-first-run",
                                           "-k", "nofail")
    out = result.stdout.str()
    assert "TestBroker: no environment; a ReplicationSuite subclass provides its cluster" in out
    assert "Traceback" not in out
    assert result.ret == 1


def test_a_bad_matrix_name_in_a_subclass_is_one_line(pytester):
    pytester.makepyfile(test_broker=SUITE.replace('"m.yaml"', '"nosuch.yaml"'))
    result = pytester.runpytest_subprocess("--collect-only", "-p", "no:xdist")
    out = result.stdout.str()
    assert "TestBroker.kreplica_matrices:" in out and "no such matrix file" in out
    assert "Traceback" not in out and result.ret != 0


def test_api_versions_contradicting_the_file_are_one_line():
    from pytest_kreplica.cluster.external.apicheck import CONTROLLER, CORE, TRANSACTIONS, judge

    kafka4 = {key: (3 if key == 0 else 0, 12) for key in {**CORE, **CONTROLLER, **TRANSACTIONS}}
    assert judge(kafka4, controller=True, transactions=True, kafka_version="4.1.0",
                 where="c.yaml") is None
    no_quorum = {k: v for k, v in kafka4.items() if k != 55}
    assert "capabilities.controller: true needs DescribeQuorum (key 55)" in judge(
        no_quorum, controller=True, transactions=False, kafka_version=None, where="c.yaml")
    assert judge(no_quorum, controller=False, transactions=True, kafka_version=None,
                 where="c.yaml") is None
    no_txn = {k: v for k, v in kafka4.items() if k != 26}
    assert "EndTxn (key 26)" in judge(no_txn, controller=True, transactions=True,
                                      kafka_version=None, where="c.yaml")
    assert "Kafka >= 4.0 broker" in judge(kafka4, controller=True, transactions=True,
                                          kafka_version="3.9.2", where="c.yaml")


def test_api_versions_reads_a_v0_answer():
    import socket
    import struct
    import threading

    from pytest_kreplica.cluster.admin.probe import api_versions

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    body = struct.pack(">ihi", 0, 0, 2) + struct.pack(">hhh", 0, 3, 12) \
        + struct.pack(">hhh", 60, 0, 1)

    def serve():
        conn, _ = server.accept()
        conn.recv(64)
        conn.sendall(struct.pack(">i", len(body)) + body)
        conn.close()
    threading.Thread(target=serve, daemon=True).start()
    assert api_versions("127.0.0.1", server.getsockname()[1]) == {0: (3, 12), 60: (0, 1)}
    server.close()


def test_the_tansu_cluster_file_is_valid_and_declares_one_plain_broker(tmp_path):
    """The file TestTansu hands the external backend loads strictly and offers what the
    class declares: one node (Tansu's id), kill and pause, no controller, no transactions."""
    from pytest_kreplica.cluster.external import config as external_config
    from pytest_kreplica.cluster.external import tansu

    broker = tansu.TansuBroker(tmp_path / "tansu", tmp_path)
    try:
        config = external_config.load(broker.cluster_file(tmp_path / "c.yaml", "4.0.0"))
    finally:
        broker.stop()
    assert [(n.node_id, n.port) for n in config.nodes] == [(tansu.NODE_ID, broker.port)]
    assert set(config.faults) == {"kill", "pause"}
    assert config.faults["kill"].restore == f"sh {broker.start_script}"
    caps = config.capabilities
    assert (caps.failures, caps.controller, caps.transactions, caps.replica_logs) == \
        (("hard", "soft"), False, False, False)


def test_the_replica_check_is_off_only_for_a_suite_without_readable_logs():
    from pytest_kreplica import Capabilities, ReplicationSuite
    from pytest_kreplica.plugin.suite import replica_logs

    class NoLogs(ReplicationSuite):
        kreplica_capabilities = Capabilities(replica_logs=False)

    class WithLogs(ReplicationSuite):
        pass

    assert not replica_logs(NoLogs)
    assert replica_logs(WithLogs) and replica_logs(None) and replica_logs(object)
