"""The process backend against real 3-node KRaft clusters (Kafka jars from Maven Central).

One cluster is shared by the module (a start costs several seconds on 2 cores); each test
leaves it healthy again. Tests that need a cluster of their own start one.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest

from pytest_kreplica.cluster import reaper
from pytest_kreplica.cluster.base import KILLED_AT_DEADLINE, ClusterSpec, NodeState, TopicSpec
from pytest_kreplica.cluster.kafka import maven
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.errors import ClusterError, InputError

START_TIMEOUT = 120.0


def marked_pids(workdir) -> list[int]:
    return [p.pid for p in reaper.marked_processes(str(workdir))]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cluster")
    c = ProcessCluster(ClusterSpec(brokers=3), workdir)
    c.start(timeout=START_TIMEOUT)
    yield c
    c.close()
    assert marked_pids(c.workdir) == [], "broker JVMs outlived close()"


@pytest.fixture
def topic(cluster, request):
    name = request.node.name.replace("[", "-").replace("]", "")[:100]
    cluster.create_topics([TopicSpec(name, partitions=2, replication_factor=3,
                                     config={"min.insync.replicas": "2"})])
    yield name
    cluster.heal(timeout=90)


def produce(cluster, topic, count, partition=0):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.live_bootstrap_servers(), acks="all",
                             request_timeout_ms=20000)
    try:
        for i in range(count):
            producer.send(topic, f"m{i}".encode(), partition=partition).get(timeout=30)
    finally:
        producer.close(timeout=5)


def test_start_registers_every_node_with_a_controller(cluster):
    assert len(cluster.nodes) == 3
    assert all(cluster.node_state(n.node_id) is NodeState.RUNNING for n in cluster.nodes)
    assert cluster.active_controller() in {1, 2, 3}
    assert cluster.bootstrap_servers.count("127.0.0.1:") == 3
    for node in cluster.nodes:
        assert node.log_file.exists() and node.log_file.stat().st_size > 0
        assert node.log_file.is_relative_to(cluster.workdir)
        conns = psutil.Process(node.pid).net_connections(kind="tcp")
        listening = {c.laddr for c in conns if c.status == psutil.CONN_LISTEN}
        assert {a.ip for a in listening} == {"127.0.0.1"}, listening
    assert cluster.describe()["kafka_version"] == cluster.kafka_version


def test_leader_isr_and_log_end_offsets(cluster, topic):
    state = cluster.partition_state(topic, 0)
    assert state.leader in state.replicas
    assert set(state.isr) == {1, 2, 3} and state.isr_full
    produce(cluster, topic, 25)
    offsets = cluster.log_end_offsets(topic, 0)
    assert offsets == {1: 25, 2: 25, 3: 25}
    assert cluster.high_watermark(topic, 0) == 25


def test_kill_leader_elects_new_one_and_restart_fills_isr(cluster, topic):
    old = cluster.leader(topic, 0)
    cluster.kill(old)
    assert cluster.node_state(old) is NodeState.STOPPED
    assert not psutil.pid_exists(cluster.node(old).pid) or \
        psutil.Process(cluster.node(old).pid).status() == psutil.STATUS_ZOMBIE
    new = cluster.wait_for_leader(topic, 0, not_in={old}, timeout=30)
    assert new.leader != old
    produce(cluster, topic, 5)  # acks=all with min.insync.replicas=2 still works
    cluster.start_node(old, timeout=90)
    # Asked at once: the preferred-leader election may be moving the leader back meanwhile.
    assert cluster.high_watermark(topic, 0, timeout=30) == 5
    cluster.wait_healthy([topic], timeout=60)
    # every broker's metadata shows the ISR full once wait_healthy returns (a CI run once read
    # isr [1, 2] here, when that wait ended at the first broker that showed it)
    assert set(cluster.isr(topic, 0)) == {1, 2, 3}
    assert set(cluster.log_end_offsets(topic, 0).values()) == {5}


def test_terminate_follower_exits_and_restart(cluster, topic):
    state = cluster.partition_state(topic, 1)
    follower = next(r for r in state.replicas if r != state.leader)
    pid = cluster.node(follower).pid
    cluster.terminate(follower, timeout=30)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert follower not in cluster.live_bootstrap_servers().split(",")
    cluster.restart(follower, timeout=90)
    cluster.wait_healthy([topic], timeout=60)


def test_a_controlled_stop_past_its_deadline_is_killed_and_says_so(cluster, topic):
    state = cluster.partition_state(topic, 1)
    follower = next(r for r in state.replicas if r != state.leader)
    assert cluster.stop_deadline(follower) == 30.0  # a small broker's
    pid = cluster.node(follower).pid
    said = cluster.terminate(follower, timeout=0.05)  # no controlled shutdown is that quick
    assert said is not None and said.startswith(KILLED_AT_DEADLINE), said
    assert "outlasted 0 s" in said
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    cluster.start_node(follower, timeout=90)
    cluster.wait_healthy([topic], timeout=60)
    assert cluster.terminate(follower) is None  # a finished controlled shutdown says nothing
    cluster.start_node(follower, timeout=90)
    cluster.wait_healthy([topic], timeout=60)


def test_kill_active_controller_moves_quorum_leadership(cluster, topic):
    controller = cluster.active_controller()
    cluster.kill(controller)
    new = cluster.active_controller(timeout=30)
    assert new != controller
    cluster.start_node(controller, timeout=90)


def test_pause_fences_node_and_resume_heals(cluster, topic):
    state = cluster.partition_state(topic, 0)
    follower = next(r for r in state.replicas if r != state.leader)
    cluster.pause(follower)
    assert cluster.node_state(follower) is NodeState.PAUSED
    assert psutil.Process(cluster.node(follower).pid).status() == psutil.STATUS_STOPPED
    assert cluster.node(follower).address not in cluster.live_bootstrap_servers()
    with pytest.raises(ClusterError, match="not running"):
        cluster.wait_healthy([topic], timeout=5)
    # the controller fences the paused broker when its session times out: ISR shrinks
    deadline = time.monotonic() + 30
    while follower in cluster.isr(topic, 0):
        assert time.monotonic() < deadline, "paused follower never left the ISR"
        time.sleep(0.2)
    cluster.resume(follower)
    cluster.wait_healthy([topic], timeout=60)
    assert follower in cluster.isr(topic, 0)


def test_a_close_stuck_on_a_paused_leader_still_stops_the_producer(cluster, topic):
    """kafka-python's close flushes first and raises when the flush times out, leaving the
    sender thread retrying (later against ports another cluster may reuse) and the producer
    to fail again when collected. ``close_producer`` reports the timeout, forces the sender,
    and closes again: the pending send fails and the thread is gone."""
    from kafka import KafkaProducer

    from pytest_kreplica.cluster.admin.clients import close_producer

    client_id = f"kreplica-close-{os.getpid()}"
    producer = KafkaProducer(bootstrap_servers=cluster.live_bootstrap_servers(), acks="all",
                             client_id=client_id, request_timeout_ms=20000)
    producer.send(topic, b"first", partition=0).get(timeout=30)  # its metadata is known
    leader = cluster.leader(topic, 0)
    cluster.pause(leader)
    try:
        pending = producer.send(topic, b"pending", partition=0)
        trouble = close_producer(producer, 1.0)
    finally:
        cluster.resume(leader)
    assert trouble is not None and "gave up after 1 s: KafkaTimeoutError" in trouble, trouble
    assert trouble.endswith("pending records dropped and the sender stopped"), trouble
    assert pending.is_done and pending.failed(), pending
    threads = [t.name for t in threading.enumerate() if t.name.startswith(client_id)]
    assert threads == [], f"the producer's sender outlived close_producer: {threads}"


def test_health_gate_reports_what_it_saw(cluster, topic):
    victim = cluster.leader(topic, 0)
    cluster.kill(victim)
    with pytest.raises(ClusterError) as info:
        cluster.wait_healthy([topic], timeout=5)
    message = str(info.value)
    assert f"{victim}" in message and "server.log" in message and "not running" in message
    cluster.heal(timeout=90)
    cluster.wait_healthy([topic], timeout=30)


def test_small_segments_are_accepted(cluster):
    cluster.create_topics([TopicSpec("small-segments", 1, 3, {"segment.bytes": "1024"})])
    produce(cluster, "small-segments", 40)
    assert set(cluster.log_end_offsets("small-segments", 0).values()) == {40}
    segments = sorted((cluster.node(1).log_dir / "small-segments-0").glob("*.log"))
    assert len(segments) > 1, "1 KiB segments should roll"
    cluster.delete_topics(["small-segments"])


def test_unknown_version_is_one_line_input_error(tmp_path):
    with pytest.raises(InputError) as info:
        ProcessCluster(ClusterSpec(brokers=1, kafka_version="4.99.0"), tmp_path).start()
    assert "4.99.0" in str(info.value) and "\n" not in str(info.value)
    assert marked_pids(tmp_path) == []


def test_teardown_leaves_no_jvm(tmp_path):
    c = ProcessCluster(ClusterSpec(brokers=3), tmp_path / "c")
    c.start(timeout=START_TIMEOUT)
    pids = marked_pids(c.workdir)
    assert len(pids) == 3
    c.close()
    assert marked_pids(c.workdir) == []
    c.close()  # idempotent


DRIVER = textwrap.dedent("""
    import sys
    from pytest_kreplica.cluster.base import ClusterSpec
    from pytest_kreplica.cluster.process.cluster import ProcessCluster
    c = ProcessCluster(ClusterSpec(brokers=3), sys.argv[1])
    c.start(timeout=120)
    print("READY", flush=True)
    sys.stdin.read()
""")


def test_sigkilled_parent_leaves_no_jvm(tmp_path):
    workdir = tmp_path / "orphaned"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(workdir)], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        timer = threading.Timer(180, driver.kill)
        timer.start()
        assert driver.stdout.readline().strip() == "READY"
        timer.cancel()
        assert len(marked_pids(workdir)) == 3
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
    gone = time.monotonic() + 30
    while marked_pids(workdir) and time.monotonic() < gone:
        time.sleep(0.2)
    reaper.reap_orphans()  # what the next session start does
    assert marked_pids(workdir) == []


def test_kafka_3_9_cluster_with_the_storage_tool(tmp_path):
    c = ProcessCluster(ClusterSpec(brokers=3, kafka_version="3.9.2"), tmp_path / "c39",
                       fast_format=False)
    try:
        c.start(timeout=START_TIMEOUT)
        assert c.kafka_version == "3.9.2"
        assert all((n.log_dir / "meta.properties").exists() for n in c.nodes)
        assert c.active_controller() in {1, 2, 3}
        c.create_topics([TopicSpec("old", 1, 3, {"segment.bytes": "1024"})])
        produce(c, "old", 30)
        assert len(list((c.node(1).log_dir / "old-0").glob("*.log"))) > 1
        assert set(c.log_end_offsets("old", 0).values()) == {30}
    finally:
        c.close()
    assert marked_pids(c.workdir) == []


def kreplica(*args: str, extra_env: dict[str, str] | None = None,
             **kwargs) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **(extra_env or {}))
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([sys.executable, "-m", "pytest_kreplica.cli", *args], env=env,
                            stdout=subprocess.PIPE, text=True, **kwargs)


def read_until(proc: subprocess.Popen, prefix: str, timeout: float = 180.0) -> list[str]:
    """stdout lines up to the one starting with ``prefix`` (bounded: the process is killed
    at the deadline, which ends the read)."""
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(prefix):
                return lines
    finally:
        timer.cancel()
    raise AssertionError(f"no line starting with {prefix!r} within {timeout:.0f} s; "
                         f"stdout: {''.join(lines)!r}; stderr: {proc.stderr.read()!r}")


def test_cli_up_prints_bootstrap_and_ctrl_c_stops(tmp_path):
    from kafka import KafkaAdminClient

    workdir = tmp_path / "by-hand"
    proc = kreplica("cluster", "up", "--brokers", "2", "--dir", str(workdir),
                    stderr=subprocess.DEVNULL)
    try:
        lines = read_until(proc, "Ctrl-C")
        bootstrap = next(ln.split(": ", 1)[1].strip() for ln in lines
                         if ln.startswith("bootstrap servers:"))
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            assert len(admin.describe_cluster()["brokers"]) == 2
        finally:
            admin.close()
        assert len(marked_pids(workdir)) == 2
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert "stopped" in out
    assert marked_pids(workdir) == []


def test_cli_detach_survives_and_down_stops(tmp_path):
    workdir = tmp_path / "detached"
    up = kreplica("cluster", "up", "--brokers", "1", "--dir", str(workdir), "--detach")
    out, err = up.communicate(timeout=180)
    assert up.returncode == 0, err
    assert "kreplica cluster down --dir" in out
    assert len(marked_pids(workdir)) == 1  # outlived its parent on purpose
    reaper.reap_orphans()  # the reaper leaves detached clusters alone
    assert len(marked_pids(workdir)) == 1
    down = kreplica("cluster", "down", "--dir", str(workdir))
    out, err = down.communicate(timeout=60)
    assert down.returncode == 0, err
    assert marked_pids(workdir) == []
    again = kreplica("cluster", "down", "--dir", str(workdir))
    _, err = again.communicate(timeout=60)
    assert again.returncode == 2
    assert err.count("\n") == 1 and "cluster.json not found" in err


def test_cli_bad_version_is_one_line(tmp_path):
    proc = kreplica("cluster", "up", "--version", "4.99.0", "--dir", str(tmp_path / "x"))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert err.count("\n") == 1 and "4.99.0" in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_unreachable_repository_is_one_line(tmp_path):
    """An empty cache and a Maven mirror nobody listens on: one line saying what to fix."""
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(
        "<settings><mirrors><mirror><id>dead</id><mirrorOf>*</mirrorOf>"
        "<url>http://127.0.0.1:9/maven2</url></mirror></mirrors></settings>")
    env = {"KREPLICA_CACHE": str(tmp_path / "cache"), "MAVEN_OPTS": f"-Duser.home={home}"}
    proc = kreplica("fetch", "--version", "4.3.1", extra_env=env)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 2
    # the progress lines of the step that started (and failed), then the one error line
    lines = err.splitlines()
    progress = [line for line in lines
                if re.fullmatch(r"kreplica: resolving Kafka 4\.3\.1 .*(…|failed after \d+ s)",
                                line)]
    # each failed download is said and tried again, a bounded number of times
    retries = [line for line in lines if re.match(
        r"kreplica: Maven could not download \(attempt \d of \d, trying again in \d+ s\)", line)]
    assert len(retries) == maven.ONLINE_ATTEMPTS - 1, lines
    errors = [line for line in lines if line not in progress and line not in retries]
    assert len(errors) == 1, lines
    assert "Traceback" not in err and "\x1b" not in err
    assert "cannot download Kafka 4.3.1" in errors[0] and "settings.xml" in errors[0]
    assert not list((tmp_path / "cache").glob("kafka/*/*/.complete"))
