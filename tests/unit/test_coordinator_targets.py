"""The coordinator targets' pure logic: Kafka's placement of a group / transactional id, the
nemesis aiming at that partition's leader, and the matrix refusing them without a workload
that names a group or transactions. The kill itself runs in matrices/transactions.yaml."""

from __future__ import annotations

import pytest

from pytest_kreplica.cluster.base import PartitionState
from pytest_kreplica.errors import ClusterError, InputError
from pytest_kreplica.faults import FaultPlan, Nemesis, coordinator_resolvers
from pytest_kreplica.faults.coordinators import java_hash, partition_for
from pytest_kreplica.workloads import txn, txn_pipeline
from tests.matrix_lines import matrix_error_line

# String.hashCode() as Java 17's jshell printed it for these strings
JAVA = {"kr-group-kr-transactions-nofail-1-0": 1684587500, "kr-txn-t-0": 788350158,
        "é€x": 483317, "polygenelubricants": -2**31}


@pytest.mark.parametrize("text,expected", JAVA.items())
def test_java_hash_matches_the_jvm(text, expected):
    assert java_hash(text) == expected


def test_partition_for_takes_kafkas_abs_and_modulo():
    assert partition_for("kr-txn-t-0", 5) == 788350158 % 5
    assert partition_for("polygenelubricants", 5) == 0  # Utils.abs(MIN_VALUE) is 0
    assert partition_for("é€x", 50) == 483317 % 50


class _Cluster:
    def __init__(self, counts):
        self.counts, self.asked = counts, []

    def partition_states(self, topics):
        self.asked.append(topics)
        return {(topics[0], p): None for p in range(self.counts.get(topics[0], 0))}


def test_resolvers_aim_at_the_internal_partition_of_each_key():
    cluster = _Cluster({"__consumer_offsets": 5, "__transaction_state": 3})
    keys = txn.coordinator_keys(["orders", "other"])
    roles = coordinator_resolvers(cluster, keys)
    assert roles["group_coordinator"]() == ("__consumer_offsets",
                                            partition_for("kr-group-orders", 5))
    assert roles["txn_coordinator"]() == ("__transaction_state",
                                          partition_for("kr-txn-orders-0", 3))
    with pytest.raises(ClusterError, match="no partitions yet"):
        coordinator_resolvers(_Cluster({}), keys)["group_coordinator"]()


def test_the_pipeline_aims_at_its_own_group_and_transactions():
    keys = txn_pipeline.coordinator_keys(["in", "out"])
    assert keys == {"group_coordinator": "kr-pipeline-out", "txn_coordinator": "kr-pipeline-out"}


def test_a_coordinator_target_fails_the_coordinating_partitions_leader():
    plan = FaultPlan(seed=1, failure="hard", target="txn_coordinator")
    nem = Nemesis(None, None, plan, [("t", 0)],
                  roles={"txn_coordinator": lambda: ("__transaction_state", 2)})
    state = PartitionState("__transaction_state", 2, leader=3, leader_epoch=1,
                           replicas=(1, 2, 3), isr=(1, 2, 3))
    assert nem._choose_victim(plan.preview()[0], state) == 3


def test_a_coordinator_target_without_a_workload_naming_it_is_an_input_error():
    with pytest.raises(InputError, match="workload txn or txn_pipeline"):
        Nemesis(None, None, FaultPlan(seed=1, failure="hard", target="group_coordinator"),
                [("t", 0)])


def test_a_coordinator_target_of_a_plain_case_is_one_matrix_line(tmp_path):
    text = matrix_error_line(tmp_path, "  failure: [hard]\n  target: [group_coordinator]\n")
    assert "workload: txn or txn_pipeline" in text
