"""cluster.sizing, pure logic: what a broker holding many replicas gets (heap, longer
waits, topics created in batches) and that a small cluster gets exactly what it had."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

from pytest_kreplica.cluster.base import TopicSpec
from pytest_kreplica.cluster.pool import cluster_spec, spec_key
from pytest_kreplica.cluster.sizing import (
    CREATE_S_PER_1000_REPLICAS,
    SMALL_REPLICAS,
    STOP_TIMEOUT_S,
    broker_heap_mb,
    case_replicas,
    create_topics_in_batches,
    replicas_in,
    replicas_per_broker,
    scaled_wait,
    stop_deadline,
    topic_batches,
)
from pytest_kreplica.matrix import load_matrix


def test_the_plan_shape_puts_3750_replicas_on_each_of_8_brokers():
    assert replicas_per_broker(1000, 10, 3, 8) == 3750
    assert replicas_per_broker(10, 10, 3, 5) == 60
    assert replicas_per_broker(1, 1, 3, 3) == 1


def test_a_small_cluster_keeps_the_default_heap_and_its_waits():
    assert broker_heap_mb(SMALL_REPLICAS) is None
    assert scaled_wait(60.0, 60) == 60.0
    heap = broker_heap_mb(3750)
    assert heap is not None and heap > 256 and heap % 128 == 0
    assert scaled_wait(60.0, 3750) > 60.0
    assert broker_heap_mb(7500) > heap


def test_only_a_case_of_many_replicas_gets_a_spec_of_its_own(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent("""\
        description: shapes
        scenario: replication
        dimensions:
          brokers: [8]
          topics: [10, 1000]
          partitions: [10]
          replication_factor: [3]
        """))
    small, large = sorted(load_matrix(path).cases, key=lambda c: c.topics)
    assert case_replicas(small) == 38 and cluster_spec(small).heap_mb is None
    assert "-h" not in spec_key(cluster_spec(small))
    assert cluster_spec(large).heap_mb == broker_heap_mb(3750)
    assert f"-h{broker_heap_mb(3750)}" in spec_key(cluster_spec(large))


def test_topics_are_batched_by_partitions_in_order():
    specs = [TopicSpec(f"t{i}", 10, 3) for i in range(250)]
    batches = topic_batches(specs, limit=1000)
    assert [len(b) for b in batches] == [100, 100, 50]
    assert [s for b in batches for s in b] == specs
    huge = [TopicSpec("big", 5000, 3), TopicSpec("small", 1, 3)]
    assert [len(b) for b in topic_batches(huge, limit=1000)] == [1, 1]
    assert topic_batches([], limit=1000) == []


def test_each_batch_is_created_with_a_bound_for_its_size():
    calls = []
    stand_in = SimpleNamespace(create_topics=lambda batch, timeout: calls.append(
        (len(batch), timeout)))
    create_topics_in_batches(stand_in, [TopicSpec(f"t{i}", 10, 3) for i in range(150)], 30.0)
    assert calls == [(100, 30.0 + CREATE_S_PER_1000_REPLICAS * 3),
                     (50, 30.0 + CREATE_S_PER_1000_REPLICAS * 1.5)]


def test_the_stop_deadline_grows_with_the_replicas_in_the_log_dir(tmp_path):
    for name in ("orders-0", "orders-11", "__cluster_metadata-0",
                 "orders-3.4f1c2d3e4b5a69788796a5b4c3d2e1f0-delete"):
        (tmp_path / name).mkdir()
    for name in ("meta.properties", "recovery-point-offset-checkpoint"):
        (tmp_path / name).write_text("")
    (tmp_path / "not-a-replica").mkdir()
    assert replicas_in(tmp_path) == 4
    assert replicas_in(tmp_path / "missing") == 0
    assert stop_deadline(4) == stop_deadline(SMALL_REPLICAS) == STOP_TIMEOUT_S
    # the plan's shape: 3,750 replicas a broker get the longer waits' share on top
    assert stop_deadline(3750) == scaled_wait(STOP_TIMEOUT_S, 3750) > 4 * STOP_TIMEOUT_S
