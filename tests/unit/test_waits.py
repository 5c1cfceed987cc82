"""The shared bounded wait: reached, timed out with the last observation, node death ends it."""

import pytest

from pytest_kreplica.errors import ClusterError, NodeError
from pytest_kreplica.waits import last_error_line, tail, wait_for, wait_until


def test_wait_for_returns_once_reached():
    calls = iter(["starting", "starting", None])
    wait_for(lambda: next(calls), timeout=5, what="the state", poll=0.01)


def test_wait_for_times_out_naming_expectation_last_seen_and_hint():
    with pytest.raises(ClusterError) as info:
        wait_for(lambda: "3 of 5 in sync", timeout=0.1, what="5 replicas in sync",
                 hint="logs in run/x", poll=0.02)
    text = str(info.value)
    assert "expected 5 replicas in sync" in text and "3 of 5 in sync" in text
    assert "logs in run/x" in text


def test_client_errors_are_observations_node_errors_end_the_wait():
    def flaky():
        raise OSError("connection refused")

    with pytest.raises(ClusterError, match="OSError: connection refused"):
        wait_for(flaky, timeout=0.1, what="a leader", poll=0.02)

    def dead():
        raise NodeError("node 2 exited", 2, "node-2.log")

    with pytest.raises(NodeError):
        wait_for(dead, timeout=5, what="a leader", poll=0.02)


def test_wait_until_reports_seen_text():
    with pytest.raises(ClusterError, match="isr=\\[1\\]"):
        wait_until(lambda: False, 0.1, "isr of 3", seen=lambda: "isr=[1]")


def test_log_excerpts(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("a INFO ok\nb ERROR broke\nc INFO later\n")
    assert last_error_line(log) == "b ERROR broke"
    assert tail(log, 2) == "b ERROR broke\nc INFO later"
    assert "no log" in tail(tmp_path / "missing.log")



def _quorum_asked(errors):
    """DescribeQuorum through ``AdminCluster``'s own methods, answering with an error code
    (a quorum without a leader) for ``errors`` looks, then answering (no broker: the
    admin path's retry logic is under test)."""
    from pytest_kreplica.cluster.admin.cluster import AdminCluster
    from pytest_kreplica.cluster.admin.offsets import NotYet

    class Asked:
        quorum, _retrying = AdminCluster.quorum, AdminCluster._retrying
        _admin_call = AdminCluster._admin_call
        looks = 0

        def _admin(self):
            return object()

        def _describe_quorum(self, admin):
            self.looks += 1
            if self.looks <= errors:
                raise NotYet("DescribeQuorum: NotLeaderOrFollowerError")
            return {"leader_id": 1, "current_voters": [{"replica_id": 1}]}

        def _logs_hint(self, node_ids=None):
            return "logs: node 1 n1.log"

    return Asked()


def test_describe_quorum_is_asked_again_within_its_bound_then_says_what_it_waited_for():
    asked = _quorum_asked(errors=2)
    assert asked.quorum(timeout=5)["leader_id"] == 1 and asked.looks == 3
    never = _quorum_asked(errors=10**6)
    with pytest.raises(ClusterError) as info:
        never.quorum(timeout=0.6)
    text = str(info.value)
    assert text.startswith("waited 1 s for a DescribeQuorum answer (voters, observers, "
                           "leader); last seen: DescribeQuorum: NotLeaderOrFollowerError")
    assert "n1.log" in text and never.looks > 1
