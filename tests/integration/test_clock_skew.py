"""Clock faults on a real 3-node process cluster whose JVMs run under libfaketime.

One cluster (``ClusterSpec(facilities={"fake_clock"})``) is shared by the module; each test
leaves every clock at offset 0. Every fault is struck, read back from the skewed node's own
``LogAppendTime`` (about the requested offset), restored and read back again (about 0);
the nodes keep serving acks=all writes through it, and a SIGKILLed session leaves no
preloaded JVM behind.
"""

from __future__ import annotations

import json
import re
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.facilities.impl import debpkg, faketime
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.errors import InputError
from pytest_kreplica.faults import clock
from pytest_kreplica.faults.clockprobe import ClockProbe
from tests.killed import child_session

START_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ProcessCluster(ClusterSpec(brokers=3, facilities=frozenset({"fake_clock"})),
                       tmp_path_factory.mktemp("clock"))
    c.start(timeout=START_TIMEOUT)
    yield c
    c.close()


def _skew(text: str) -> float:
    return float(re.search(r"skew ([+-][\d.]+) s", text).group(1))


def test_every_node_starts_preloaded_at_offset_zero(cluster):
    """The preload took in every JVM (the library is mapped), each node has its own offset
    file at +0, and the clocks read back from the nodes are true to within the tolerance."""
    probe = ClockProbe(cluster)
    try:
        for node in cluster.nodes:
            clocks = cluster.facility("fake_clock")
            assert clocks.loaded(node.pid), f"node {node.node_id}: no libfaketime"
            assert clocks.offset(node.node_id) == 0.0
            probe.wait_skew(node.node_id, 0.0, clock.TOLERANCE_S, 15, "a fresh node")
    finally:
        probe.close()
    env = psutil.Process(cluster.nodes[0].pid).environ()
    assert env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"
    assert env["FAKETIME_TIMESTAMP_FILE"].endswith(f"node-1/{faketime.OFFSET_FILE}")


def test_a_cluster_without_the_preload_refuses_clock_faults(tmp_path):
    bare = ProcessCluster(ClusterSpec(brokers=1), tmp_path)  # not started: no JVM needed
    with pytest.raises(InputError, match="libfaketime"):
        clock.strike(bare, 1, "clock_skew")


@pytest.mark.parametrize("failure", sorted(clock.CLOCK_FAULTS))
def test_fault_acts_and_heals(cluster, failure):
    """Measured skew about the requested offset while it holds, about 0 after the reset;
    the other nodes' clocks are untouched."""
    node, other = 2, 3
    try:
        measured = clock.strike(cluster, node, failure)
        probe = ClockProbe(cluster)
        try:
            # only the victim moved (bounded: a first send may wait for metadata)
            assert abs(probe.wait_skew(other, 0.0, clock.TOLERANCE_S, 15, "a bystander")) \
                < clock.TOLERANCE_S
        finally:
            probe.close()
    finally:
        healed = clock.restore(cluster, node, failure)
    fault = clock.CLOCK_FAULTS[failure]
    if fault.strobe:
        low, high = (float(x) for x in re.search(r"skew ([+-][\d.]+)\.\.([+-][\d.]+) s",
                                                 measured).groups())
        assert abs(low) < clock.TOLERANCE_S and abs(high - fault.offset_s) < clock.TOLERANCE_S
    else:
        assert abs(_skew(measured) - fault.offset_s) < clock.TOLERANCE_S, measured
    assert abs(_skew(healed)) < clock.TOLERANCE_S, healed
    assert cluster.facility("fake_clock").offset(node) == 0.0
    assert not clock._strobes, "a strobe thread outlived its restore"


def _produce(cluster, topic, stop, acked, failed):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                             request_timeout_ms=4000, delivery_timeout_ms=5000, retries=0)
    try:
        i = 0
        while not stop.is_set():
            try:
                acked.append(producer.send(topic, f"m{i}".encode()).get(timeout=10).offset)
            except Exception:
                failed.append(i)
            i += 1
    finally:
        producer.close(5)


def test_nemesis_bump_of_the_leader_keeps_writes_and_records_the_skew(cluster, tmp_path):
    """The nemesis path under acks=all: the strike event carries the measured skew, the
    leader keeps serving (writes acknowledged during the fault), and every acknowledged
    offset is in the log afterwards."""
    from kafka import KafkaConsumer, TopicPartition

    from pytest_kreplica.faults.nemesis import FaultPlan, Nemesis
    from pytest_kreplica.history import RunWriter

    topic = "clock-nemesis"
    cluster.create_topics([TopicSpec(topic, 1, 3, {"min.insync.replicas": "2"})])
    stop, acked, failed = threading.Event(), [], []
    producer = threading.Thread(target=_produce, args=(cluster, topic, stop, acked, failed))
    producer.start()
    plan = FaultPlan(seed=5, failure="clock_skew", target="leader", downtime_s=6.0,
                     delay_s=(0.5, 1.0))
    try:
        with RunWriter(tmp_path) as writer:
            records = Nemesis(cluster, writer, plan, [(topic, 0)], recovery_timeout=60).run()
        during = len(acked)
        time.sleep(1)
    finally:
        stop.set()
        producer.join(30)
    assert records[0].error is None, records[0].error
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    strike = next(e for e in events if e["kind"] == "clock_skew")
    assert abs(_skew(strike["detail"].split("measured: ")[1]) - clock.SKEW_S) < 1.5, strike
    reset = next(e for e in events if e["kind"] == "recovered")
    assert "healed: skew" in reset["detail"], reset
    assert during > 0 and len(acked) > during, (len(acked), len(failed))
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                             enable_auto_commit=False, consumer_timeout_ms=5000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    read = {m.offset for m in consumer}
    consumer.close()
    assert set(acked) <= read, sorted(set(acked) - read)[:10]


def test_no_preloaded_jvm_outlives_a_sigkilled_session(tmp_path):
    """A session killed with SIGKILL takes its preloaded nodes with it (parent-death
    signal); what libfaketime leaves in /dev/shm is swept."""
    script = textwrap.dedent(f"""
        import time
        from pytest_kreplica.cluster.base import ClusterSpec
        from pytest_kreplica.cluster.process.cluster import ProcessCluster
        c = ProcessCluster(ClusterSpec(brokers=1, facilities=frozenset({{"fake_clock"}})),
                           {str(tmp_path)!r})
        c.start(timeout=120)
        print(c.nodes[0].pid, flush=True)
        time.sleep(600)
    """)
    with child_session(script) as (pid, sigkill):
        assert "libfaketime" in Path(f"/proc/{pid}/maps").read_text()
        sigkill(20, "the preloaded node")
        # libfaketime's per-process objects outlive a SIGKILL; the next clock cluster's
        # start (or close) sweeps them
        left = sorted(faketime.SHM_DIR.glob(f"*faketime_*_{pid}"))
        assert left, "expected libfaketime's objects of the killed JVM (else: test stale)"
        assert set(left) <= set(faketime.sweep())
        assert not sorted(faketime.SHM_DIR.glob(f"*faketime_*_{pid}"))


@pytest.mark.parametrize("apt", [True, False], ids=["apt-get-download", "pinned-pool-package"])
def test_the_library_is_fetched_and_unpacked_without_root_changes(tmp_path, monkeypatch, apt):
    """The fresh-machine path, both ways: ``apt-get download`` (Debian's package lists), and
    without apt the pinned package from Debian's pool checked by sha256; either way
    ``dpkg-deb -x`` leaves the shared object, nothing is installed."""
    if apt:
        assert debpkg.shutil.which("apt-get"), "a Debian machine has apt-get"
    else:
        which = debpkg.shutil.which
        monkeypatch.setattr(debpkg.shutil, "which",
                            lambda name: None if name == "apt-get" else which(name))
    target = tmp_path / "lib" / faketime.LIBRARY
    faketime._fetch_and_unpack(target)
    assert target.read_bytes()[:4] == b"\x7fELF"
    assert [p.name for p in target.parent.iterdir()] == [faketime.LIBRARY]  # temp dir gone
