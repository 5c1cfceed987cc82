"""A mirror target of its own size (``target_brokers``, ``target_replication_factor``), pure
logic: the matrix checks, the two specs, MirrorMaker 2's configuration and the bounds a
large mirror gets; a case that names neither keeps exactly what it had."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kreplica.cluster.mirrormaker import START_TIMEOUT_S, mm2_properties
from pytest_kreplica.cluster.mirrormaker.process import named
from pytest_kreplica.cluster.sizing import (
    MIRROR_HEAP_MB,
    broker_heap_mb,
    mirror_heap_mb,
    mirror_refresh_s,
)
from pytest_kreplica.errors import MatrixError
from pytest_kreplica.matrix import parse_matrix
from pytest_kreplica.scenarios.mirror import (
    pair_specs,
    ready_timeout,
    target_shape,
    target_topics,
)


def _case(**dims):
    data = {"scenario": "mirror", "dimensions": {k: [v] for k, v in dims.items()}}
    (case,) = parse_matrix(Path("m.yaml"), data).cases
    return case


def test_a_smaller_target_gets_its_own_brokers_heap_and_replicas():
    case = _case(brokers=8, topics=1000, partitions=10, target_brokers=3,
                 target_replication_factor=1)
    source, target = pair_specs(case)
    assert (source.brokers, target.brokers) == (8, 3)
    assert target_shape(case) == (3, 1)
    # 3,334 replicas on each of 3 target brokers (rf 1), 3,750 on each of 8 source brokers
    assert target.heap_mb == broker_heap_mb(3334) and source.heap_mb == broker_heap_mb(3750)
    assert pair_specs(_case(brokers=8, topics=1000, partitions=10, target_brokers=3,
                            target_replication_factor=3))[1].heap_mb > source.heap_mb


def test_a_varying_target_size_names_its_cases():
    m = parse_matrix(Path("m.yaml"), {"scenario": "mirror", "dimensions": {
        "target_brokers": [1, 3], "target_replication_factor": [1]}})
    assert [c.case_id for c in m.cases] == ["m-tb1", "m-tb3"]


def test_without_a_target_size_the_pair_is_what_it_was():
    case = _case(brokers=5, topics=10, partitions=10)
    source, target = pair_specs(case)
    assert target.brokers == source.brokers == 5
    assert target.heap_mb == source.heap_mb is None
    assert target_shape(case) == (5, 3)
    props = mm2_properties("s:1", "t:1", ["a"], target_brokers=5)
    assert props["replication.factor"] == "3"


def test_mirror_maker_gives_the_mirrored_topics_the_target_replication_factor():
    props = mm2_properties("s:1", "t:1", ["a"], source_brokers=8, target_brokers=3,
                           replication_factor=1)
    assert props["replication.factor"] == "1"
    # internal topics stay replicated on the target as far as it has brokers
    assert props["heartbeats.topic.replication.factor"] == "3"
    assert props["offset-syncs.topic.replication.factor"] == "3"


@pytest.mark.parametrize("scenario,dims,key,allowed", [
    ("replication", {"target_brokers": [3]}, "target_brokers", "scenario mirror"),
    ("mirror", {"target_brokers": [1], "target_replication_factor": [3]},
     "target_replication_factor", "1..1"),
    ("mirror", {"target_brokers": [0]}, "target_brokers", ">= 1"),
])
def test_a_target_size_that_cannot_hold_is_one_line(scenario, dims, key, allowed):
    with pytest.raises(MatrixError, match=rf"bad.yaml: .*{key}.*allowed: .*{allowed}"):
        parse_matrix(Path("bad.yaml"), {"scenario": scenario, "dimensions": dims})


def test_a_large_mirror_gets_a_larger_heap_and_a_longer_start():
    assert mirror_heap_mb(100) == MIRROR_HEAP_MB
    assert mirror_heap_mb(10_000) > MIRROR_HEAP_MB and mirror_heap_mb(10_000) % 128 == 0
    assert ready_timeout(100, 3) == pytest.approx(START_TIMEOUT_S + 3.0)
    assert ready_timeout(10_000, 1) > ready_timeout(100, 3)


def test_a_large_mirror_refreshes_its_topics_less_often():
    def refresh(partitions):
        props = mm2_properties("s:1", "t:1", ["a"], refresh_s=mirror_refresh_s(partitions))
        return {props["refresh.topics.interval.seconds"],
                props["refresh.groups.interval.seconds"]}

    assert refresh(100) == {"1"}
    assert refresh(10_000) == {str(mirror_refresh_s(10_000))} != {"1"}


def test_waits_name_a_few_topics_and_count_the_rest():
    assert named(["a", "b"]) == "['a', 'b']"
    many = named([f"t{i}" for i in range(1000)])
    assert many.startswith("1000 topics (t0, t1, t2, t3, t4") and "t999" not in many


def test_only_a_large_mirror_creates_its_target_topics_first():
    assert target_topics({"t": "source.t"}, 10, 3) == []
    mirrored = {f"t{i}": f"source.t{i}" for i in range(1000)}
    first = target_topics(mirrored, 10, 1)
    assert len(first) == 1000 and first[0].name == "source.t0"
    assert {(t.partitions, t.replication_factor) for t in first} == {(10, 1)}
