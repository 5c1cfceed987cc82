"""server.properties generation, port claims and the reaper's owner test (pure logic or
plain files; no JVM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pytest_kreplica.cluster import ports, reaper
from pytest_kreplica.cluster.kafka import config


def three_nodes():
    return [config.NodeAddress(i, "127.0.0.1", 9000 + i, 9100 + i) for i in (1, 2, 3)]


def test_quorum_voters_lists_every_node():
    assert config.quorum_voters(three_nodes()) == \
        "1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103"


def test_server_properties_combined_node_with_tuned_faults():
    node = three_nodes()[1]
    props = config.server_properties(node, "v", "/data", 3)
    assert props["process.roles"] == "broker,controller"
    assert props["node.id"] == "2"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9002,CONTROLLER://127.0.0.1:9102"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9002"
    assert props["broker.session.timeout.ms"] == "3000"
    assert props["offsets.topic.replication.factor"] == "3"
    assert int(props["log.cleaner.dedupe.buffer.size"]) > 1024 * 1024


def test_single_node_internal_topics_fit_and_extra_wins():
    props = config.server_properties(three_nodes()[0], "v", "/d", 1,
                                     extra=(("broker.session.timeout.ms", "9000"),),
                                     tuned=True)
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert props["broker.session.timeout.ms"] == "9000"


def test_untuned_keeps_kafka_defaults():
    props = config.server_properties(three_nodes()[0], "v", "/d", 3, tuned=False)
    assert "broker.session.timeout.ms" not in props


def test_docker_style_advertised_address():
    node = config.NodeAddress(1, "0.0.0.0", 9092, 9093, advertised_host="127.0.0.1",
                              advertised_port=31000)
    props = config.server_properties(node, "v", "/d", 1)
    assert props["listeners"].startswith("PLAINTEXT://0.0.0.0:9092")
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:31000"


def test_render_properties_round_trips_lines():
    text = config.render_properties({"a.b": "1", "log.dirs": "C:\\x"})
    assert "a.b=1\n" in text and "log.dirs=C:\\\\x\n" in text


def test_cluster_ids_are_valid_for_the_storage_tool():
    ids = {config.new_cluster_id() for _ in range(500)}
    assert len(ids) == 500
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


def test_small_segments_use_internal_config_on_4x_only():
    cfg = {"segment.bytes": "1024", "min.insync.replicas": "2"}
    assert config.topic_configs("4.3.1", cfg) == {"internal.segment.bytes": "1024",
                                                   "min.insync.replicas": "2"}
    assert config.topic_configs("3.9.2", cfg) == cfg
    assert config.topic_configs("4.3.1", {"segment.bytes": str(2 ** 20)}) == \
        {"segment.bytes": str(2 ** 20)}


def test_port_claims_are_exclusive_and_released(tmp_path, monkeypatch):
    monkeypatch.setenv("KREPLICA_PORT_DIR", str(tmp_path))
    first = ports.claim_ports(4)
    assert len(set(first)) == 4
    for port in first:
        owner = json.loads((tmp_path / str(port)).read_text())
        assert owner["pid"] == os.getpid()
        assert not ports._try_claim(port, ports.process_identity())  # held by a live owner
    ports.release_ports(first)
    assert not any((tmp_path / str(p)).exists() for p in first)


def test_sentinel_of_dead_owner_is_reclaimed(tmp_path, monkeypatch):
    monkeypatch.setenv("KREPLICA_PORT_DIR", str(tmp_path))
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    dead = ports.process_identity(child.pid)
    child.wait()
    (tmp_path / "41234").write_text(json.dumps(dead))
    assert ports._try_claim(41234, ports.process_identity())
    assert json.loads((tmp_path / "41234").read_text())["pid"] == os.getpid()


def test_reaper_owner_liveness():
    assert reaper.owner_alive(reaper.owner_token())
    assert reaper.owner_alive(reaper.DETACHED)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    token = reaper.owner_token(child.pid)
    child.wait()
    assert not reaper.owner_alive(token)
    assert not reaper.owner_alive(f"{os.getpid()}:12.0")  # pid reused by another process


CLAIMER = """
import sys, time
from pytest_kreplica.cluster import ports
claimed = ports.claim_ports(25)
print(" ".join(map(str, claimed)), flush=True)
sys.stdin.read()
ports.release_ports(claimed)
"""


def test_concurrent_processes_never_share_a_port(tmp_path, monkeypatch):
    """What pytest -n auto workers and parallel sessions do: claim at the same time."""
    monkeypatch.setenv("KREPLICA_PORT_DIR", str(tmp_path))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    try:
        claims = [set(map(int, p.stdout.readline().split())) for p in procs]
    finally:
        for p in procs:
            p.communicate("", timeout=60)
    assert all(len(c) == 25 for c in claims)
    assert len(set().union(*claims)) == 100, "two processes claimed the same port"
    assert not [f for f in tmp_path.iterdir() if not f.name.startswith(".")]
