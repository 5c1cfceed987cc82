"""A composed failure on a real 3-node process cluster whose links pass a Toxiproxy server:
``hard+slow_link`` kills the partition leader and, while it is down, slows the links of a
second victim drawn from the seed. Both faults are proved to act independently of the
nemesis' own bookkeeping (the killed JVM is seen gone, the second victim's route is seen
with its toxics while the first is still down), both are healed, their windows overlap by
a measured time, the events land in the run directory, and nothing acknowledged with
acks=all is lost."""

from __future__ import annotations

import json
import threading

import psutil
import pytest

from pytest_kreplica.cluster.base import ClusterSpec, TopicSpec
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.faults import FaultPlan, Nemesis
from pytest_kreplica.history import RunWriter
from tests.sampling import BackgroundSampler

TOPIC = "composed"
SEED = 3  # draws a follower for the slow link (never the active controller: links.py)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ProcessCluster(ClusterSpec(brokers=3, facilities=frozenset({"link_proxy"})),
                       tmp_path_factory.mktemp("composed"))
    c.start(timeout=120)
    pids = [n.pid for n in c.nodes]
    yield c
    c.close()
    assert not [p for p in pids if p and psutil.pid_exists(p)
                and psutil.Process(p).status() != psutil.STATUS_ZOMBIE], \
        "broker JVMs outlived the cluster"


class Sampler(BackgroundSampler):
    """Every 50 ms: which node JVMs run, and which replication routes carry toxics."""

    join_s = 10.0

    def __init__(self, cluster):
        super().__init__(cluster)
        self.samples = []
        self._proxy = cluster.facility("link_proxy")

    def sample(self):
        running = {n.node_id for n in self.cluster.nodes
                   if n.pid and psutil.pid_exists(n.pid)
                   and psutil.Process(n.pid).status() != psutil.STATUS_ZOMBIE}
        slowed = set()
        for n in self.cluster.nodes:
            try:
                if self._proxy.toxics(f"n{n.node_id}-replication"):
                    slowed.add(n.node_id)
            except Exception:  # noqa: BLE001 - a sample missed, the next one counts
                pass
        self.samples.append((running, slowed))


def _produce(cluster, stop, acked):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                             request_timeout_ms=4000, delivery_timeout_ms=5000, retries=0,
                             max_block_ms=5000)
    try:
        i = 0
        while not stop.is_set():
            value = f"m{i}".encode()
            try:
                meta = producer.send(TOPIC, value, partition=0).get(timeout=10)
                acked[meta.offset] = value
            except Exception:  # noqa: BLE001 - not acknowledged: nothing is owed
                pass
            i += 1
    finally:
        producer.close(5)


def _read_all(cluster):
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return {m.offset: m.value for m in consumer}
    finally:
        consumer.close()


def test_two_faults_overlap_both_act_and_both_heal(cluster, tmp_path):
    cluster.create_topics([TopicSpec(TOPIC, partitions=1, replication_factor=3,
                                     config={"min.insync.replicas": "2"})], timeout=60)
    cluster.wait_healthy([TOPIC], timeout=60)
    plan = FaultPlan(seed=SEED, failure="hard+slow_link", target="leader", downtime_s=6.0,
                     delay_s=(0.5, 1.0))
    first, second = next(plan.steps())
    assert (first.failure, second.failure, second.target) == ("hard", "slow_link", "follower")
    stop, acked = threading.Event(), {}
    producer = threading.Thread(target=_produce, args=(cluster, stop, acked))
    producer.start()
    try:
        with RunWriter(tmp_path) as writer, Sampler(cluster) as sampler:
            records = Nemesis(cluster, writer, plan, [(TOPIC, 0)], election_timeout=60,
                              recovery_timeout=120).run()
    finally:
        stop.set()
        producer.join(30)
    kill, slow = sorted(records, key=lambda r: r.index)
    assert kill.error is None and slow.error is None, (kill.error, slow.error)
    assert kill.node == kill.leader_before and kill.state_after_strike == "stopped"
    assert slow.node != kill.node and "round trip" in (slow.measured or ""), slow.measured
    assert kill.overlap_s == slow.overlap_s and slow.overlap_s > 0, slow.overlap_s
    assert slow.strike_ns < kill.restore_ns and kill.recovered_ns and slow.recovered_ns
    # independent proof: a sample with the leader's JVM gone and the follower's route slowed
    assert any(kill.node not in running and slow.node in slowed
               for running, slowed in sampler.samples), "the two faults never held together"
    assert sampler.samples[-1] == ({1, 2, 3}, set()), sampler.samples[-1]  # both healed
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    kinds = [(e["kind"], e["node"]) for e in events]
    for kind, node in (("kill", kill.node), ("start", kill.node), ("slow_link", slow.node),
                       ("heal", slow.node), ("recovered", kill.node),
                       ("recovered", slow.node)):
        assert (kind, str(node)) in kinds, kinds
    at = {(e["kind"], e["node"]): e["time_ns"] for e in events}
    assert at[("kill", str(kill.node))] < at[("slow_link", str(slow.node))] \
        < at[("start", str(kill.node))]
    assert len(acked) > 10, f"only {len(acked)} records acknowledged"
    log = _read_all(cluster)
    missing = {o: v for o, v in acked.items() if log.get(o) != v}
    assert not missing, f"{len(missing)} acknowledged records not in the log: {missing}"
