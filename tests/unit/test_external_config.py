"""The external backend's cluster file: what it accepts, one line for what it refuses, and the
fault adapter's own checks (a failing command fails with its output; a command that does
not act is caught) against a stand-in socket, no broker."""

from __future__ import annotations

import socket
import threading

import pytest

from pytest_kreplica.cluster import ClusterSpec
from pytest_kreplica.cluster.admin.probe import answers
from pytest_kreplica.cluster.base import NodeState
from pytest_kreplica.cluster.external.cluster import ExternalCluster
from pytest_kreplica.cluster.external.config import load
from pytest_kreplica.errors import InputError, NodeError

GOOD = """\
kafka_version: 3.9.1
nodes:
  - {id: 1, host: 127.0.0.1, port: 19092, pid: 4242, log_dir: logs/1}
  - {id: 2, host: 127.0.0.1, port: 19093, container: kafka-2}
faults:
  kill: {strike: "kill -KILL {pid}", restore: "restart {node}"}
  pause: {strike: "docker pause {container}", restore: "docker unpause {container}"}
capabilities:
  failures: [hard, soft]
  controller: false
"""


def write(tmp_path, text):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def test_a_good_file_is_read(tmp_path):
    cfg = load(write(tmp_path, GOOD))
    assert [n.node_id for n in cfg.nodes] == [1, 2]
    assert cfg.nodes[0].pid == 4242 and cfg.nodes[1].container == "kafka-2"
    assert cfg.nodes[0].log_dir == tmp_path / "logs/1"  # relative to the file
    assert cfg.failures == ("hard", "soft") and cfg.controller is False
    assert cfg.kafka_version == "3.9.1"
    assert cfg.bootstrap_servers == "127.0.0.1:19092,127.0.0.1:19093"


def test_failures_default_to_the_declared_faults(tmp_path):
    cfg = load(write(tmp_path, GOOD.replace("  failures: [hard, soft]\n", "")))
    assert cfg.failures == ("hard", "soft")


@pytest.mark.parametrize(("change", "message"), [
    (("nodes:", "nodez:"), r"cluster.yaml: bad nodez: expected one of the keys kafka_version"),
    (("port: 19093", "port: 99999"), r"bad nodes\[1\].port: expected a port number"),
    (("kill -KILL {pid}", "kill -KILL {process}"),
     r"bad faults.kill.strike: expected placeholders among \{node\}.*got '\{process\}'"),
    (("failures: [hard, soft]", "failures: [hard, partition]"),
     r"bad capabilities.failures: expected values among hard, clean, soft, got 'partition'"),
    (("failures: [hard, soft]", "failures: [hard, clean]"),
     r"capabilities.failures: .*failure clean needs faults.terminate"),
    (("controller: false", "controller: maybe"),
     r"bad capabilities.controller: expected true or false"),
    (("  pause: {strike", "  kill: {strike"), r"key 'kill' given twice \(line 7\)"),
    (("restore: \"restart {node}\"", "restart: x"), r"bad faults.kill.restart: expected one"),
    (("{id: 2,", "{id: 1,"), r"bad nodes\[\].id: expected distinct node ids"),
    (("nodes:", "nodes: ["), r"not valid YAML"),
])
def test_bad_input_is_one_line_naming_file_key_and_allowed(tmp_path, change, message):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(InputError, match=message) as err:
        load(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(InputError, match="cannot read the cluster file"):
        load(tmp_path / "nope.yaml")


def test_lacks_names_why_a_case_cannot_run(tmp_path):
    cfg = load(write(tmp_path, GOOD))
    assert cfg.lacks("hard", "leader", 2) is None
    assert cfg.lacks("none", "leader", 2) is None
    assert "failure clean is not offered" in cfg.lacks("clean", "leader", 2)
    assert "capabilities.controller" in cfg.lacks("soft", "controller", 2)
    assert "needs 3 brokers" in cfg.lacks("hard", "leader", 3)


def test_bad_cluster_file_stops_pytest_with_one_line(pytester, tmp_path):
    path = write(tmp_path, GOOD.replace("controller: false", "controller: maybe"))
    result = pytester.runpytest_subprocess(f"--kreplica-cluster={path}", "-p", "no:xdist")
    assert result.ret != 0
    err = result.stderr.str()
    assert "bad capabilities.controller: expected true or false" in err
    assert "Traceback" not in err


class Broker:
    """A socket that answers any request with a minimal reply frame (size 4, correlation
    id 0) while ``up`` (stands for a broker's ApiVersions reply; a paused broker accepts
    but never replies)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.up = True
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.up:
                conn.recv(64)
                conn.sendall(b"\x00\x00\x00\x04" + b"\x00\x00\x00\x00")
            conn.close()


def cluster(tmp_path, port, strike, restore="true"):
    text = (f"nodes: [{{id: 1, host: 127.0.0.1, port: {port}}}]\n"
            f"command_timeout: 3\n"
            f"faults: {{pause: {{strike: '{strike}', restore: '{restore}'}}}}\n")
    return ExternalCluster(ClusterSpec(brokers=1, backend="external"), tmp_path / "wd",
                           config=write(tmp_path, text))


def test_answers_tells_a_replying_node_from_a_silent_one():
    broker = Broker()
    assert answers("127.0.0.1", broker.port)
    broker.up = False
    assert not answers("127.0.0.1", broker.port, wait=0.5)


def test_a_failing_fault_command_fails_with_its_output(tmp_path):
    broker = Broker()
    c = cluster(tmp_path, broker.port, "echo no such container {node} >&2; exit 3")
    with pytest.raises(NodeError, match=r"faults.pause.strike for node 1 failed \(expected "
                                        r"exit 0, got 3\).*no such container 1"):
        c.pause(1)


def test_a_fault_that_does_not_act_is_caught(tmp_path):
    broker = Broker()
    c = cluster(tmp_path, broker.port, "true")
    with pytest.raises(NodeError, match=r"faults.pause of .* did not act: .*still answers"):
        c.pause(1)


def test_a_fault_that_acts_is_verified_and_restored(tmp_path):
    broker = Broker()
    flag = tmp_path / "paused"
    c = cluster(tmp_path, broker.port, f"touch {flag}", f"rm {flag}")
    stop = threading.Event()

    def follow():  # the "broker" goes silent while the flag file exists
        while not stop.wait(0.05):
            broker.up = not flag.exists()
    threading.Thread(target=follow, daemon=True).start()
    try:
        c.pause(1)
        assert c.node_state(1) is NodeState.PAUSED and flag.exists()
        c.resume(1)
        assert c.node_state(1) is NodeState.RUNNING and not flag.exists()
        assert "faults.pause.strike" in c.faults_log.read_text()
    finally:
        stop.set()


def test_an_undeclared_fault_names_the_file_and_what_is_declared(tmp_path):
    c = cluster(tmp_path, 1, "true")
    with pytest.raises(InputError, match=r"faults.kill is not declared; declared: pause"):
        c.kill(1)


def test_the_pid_is_looked_up_only_for_a_command_that_uses_it(tmp_path):
    """After a kill the node has no pid: its restart must not ask ``pid_command``."""
    text = ("nodes: [{id: 1, host: 127.0.0.1, port: 1, pid_command: 'exit 1'}]\n"
            "faults: {kill: {strike: 'kill -KILL {pid}', restore: 'echo start {node}'}}\n")
    c = ExternalCluster(ClusterSpec(brokers=1, backend="external"), tmp_path / "wd",
                        config=write(tmp_path, text))
    assert "start 1" in c._run(1, "kill", "restore")
    with pytest.raises(NodeError, match=r"nodes\[id=1\].pid_command for node 1 failed "
                                        r"\(expected exit 0, got 1\)"):
        c.kill(1)


def test_cases_the_cluster_cannot_run_are_deselected_with_one_line(pytester, tmp_path):
    path = write(tmp_path, GOOD)  # 2 nodes; offers hard and soft, no controller
    pytester.makefile(".yaml", m="scenario: replication\ndimensions:\n"
                                 "  failure: [hard, clean]\n  target: [leader, controller]\n"
                                 "  brokers: [2, 3]\n  replication_factor: [2]\n"
                                 "  min_insync_replicas: [1]\n")
    pytester.makepyfile("import pytest\n\n@pytest.mark.kreplica_scenario('replication')\n"
                        "def test_r(kreplica_case):\n    pass\n")
    result = pytester.runpytest_subprocess(f"--kreplica-cluster={path}", "--kreplica-matrix",
                                           str(pytester.path / "m.yaml"), "--collect-only",
                                           "-q", "-p", "no:xdist")
    result.stdout.fnmatch_lines([
        "*deselected 2 case(s): target controller needs capabilities.controller: true*",
        "*deselected 4 case(s): failure clean is not offered by*",
        "*deselected 1 case(s): needs 3 brokers;*declares 2 nodes*",
        "*test_r?m-b2-hard-leader?", "*1/8 tests collected (7 deselected)*"])
