"""MirrorMaker 2 pure logic: topic names per policy, the dedicated-mode configuration, the
cluster-tagging writer, the source/target specs and the mirror matrices."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_kreplica.cluster.mirrormaker.config import (
    IDENTITY_POLICY,
    mirrored_name,
    mm2_properties,
)
from pytest_kreplica.cluster.pool import cluster_spec, spec_key
from pytest_kreplica.errors import InputError, MatrixError
from pytest_kreplica.history import RunWriter
from pytest_kreplica.matrix import load_matrix, parse_matrix
from pytest_kreplica.scenarios.mirror import pair_specs
from pytest_kreplica.scenarios.runner import ClusterWriter

MATRICES = Path(__file__).resolve().parents[2] / "matrices"


def test_mirrored_names_follow_the_policy():
    assert mirrored_name("t-1") == "source.t-1"
    assert mirrored_name("t-1", "identity") == "t-1"
    with pytest.raises(InputError, match="allowed: default, identity"):
        mirrored_name("t", "prefix")


def test_properties_mirror_exactly_the_case_topics_one_way():
    props = mm2_properties("127.0.0.1:1", "127.0.0.1:2", ["a.b", "c"], source_brokers=1,
                           target_brokers=3, instance="i1")
    pattern = re.compile(props["source->target.topics"])
    assert pattern.fullmatch("a.b") and pattern.fullmatch("c")
    assert not pattern.fullmatch("aXb")  # dots are escaped, not wildcards
    assert props["source->target.enabled"] == "true"
    assert props["target->source.enabled"] == "false"
    assert props["target.bootstrap.servers"] == "127.0.0.1:2"
    assert props["offset-syncs.topic.replication.factor"] == "1"  # lives on the 1-node source
    assert props["replication.factor"] == "3"
    assert props["target.scheduled.rebalance.max.delay.ms"] == "0"
    assert props["target.offset.storage.topic"] == "i1-mm2-offsets"
    assert "replication.policy.class" not in props


def test_identity_policy_and_instances_do_not_share_state():
    a = mm2_properties("s", "t", ["x"], policy="identity", instance="a")
    b = mm2_properties("s", "t", ["x"], policy="identity", instance="b")
    assert a["replication.policy.class"] == IDENTITY_POLICY
    state_keys = [k for k in a if k.endswith((".group.id", ".storage.topic"))]
    assert state_keys and all(a[k] != b[k] for k in state_keys)


def test_properties_need_topics():
    with pytest.raises(InputError, match="no topics"):
        mm2_properties("s", "t", [])


def test_cluster_writer_tags_sends_polls_and_events_with_its_cluster(tmp_path):
    with RunWriter(tmp_path) as writer:
        ClusterWriter(writer, "source").send(0, "t", 0, "1", 5, "ok", 1, 2, None)
        ClusterWriter(writer, "target").poll(1, 1, "source.t", 0, 5, "1", 3, 0)
        ClusterWriter(writer, "target").event("assign", process=1)
        writer.event("kill", node="mirror-maker", role="mirror-maker")  # between the two
    assert '"cluster":"source"' in (tmp_path / "sends.jsonl").read_text()
    assert '"cluster":"target"' in (tmp_path / "polls.jsonl").read_text()
    events = (tmp_path / "events.jsonl").read_text().splitlines()
    assert '"cluster":"target"' in events[0] and "cluster" not in events[1]


def test_exactly_once_properties_follow_kip_618_and_kip_710():
    props = mm2_properties("s", "t", ["x"], exactly_once=True, rest_port=18083)
    assert props["target.exactly.once.source.support"] == "enabled"
    assert props["source.consumer.isolation.level"] == "read_committed"
    assert props["dedicated.mode.enable.internal.rest"] == "true"
    assert props["listeners"] == "http://127.0.0.1:18083"  # loopback only
    assert int(props["target.producer.transaction.timeout.ms"]) < 60_000
    plain = mm2_properties("s", "t", ["x"])
    assert not any("exactly.once" in k or "isolation" in k for k in plain)
    assert "listeners" not in plain
    with pytest.raises(InputError, match="rest_port"):
        mm2_properties("s", "t", ["x"], exactly_once=True)


def test_mirror_semantics_dimension_sets_expected_semantics_and_marker():
    m = parse_matrix(Path("eo.yaml"), {"scenario": "mirror", "dimensions": {
        "failure": ["hard"], "target": ["mirror-maker"], "idempotence": [True],
        "mirror_semantics": ["at-least-once", "exactly-once"]}})
    alo, eo = m.cases
    assert (alo.semantics, eo.semantics) == ("at-least-once", "exactly-once")
    assert alo.case_id.endswith("mm-alo") and eo.case_id.endswith("mm-eo")
    assert "mirror_exactly_once" in eo.markers and "mirror_exactly_once" not in alo.markers


@pytest.mark.parametrize("dims,key", [
    ({"mirror_semantics": ["exactly-once"]}, "mirror_semantics"),  # needs idempotence
    ({"mirror_semantics": ["exactly-once"], "idempotence": [True], "failure": ["hard"]},
     "mirror_semantics"),  # needs a mirrored scenario
])
def test_exactly_once_mirroring_rejects_what_cannot_hold(dims, key):
    data = {"scenario": "mirror" if "failure" not in dims else "replication",
            "dimensions": dims}
    with pytest.raises(MatrixError, match=rf"bad.yaml: case .*\.{key}: .*allowed: "):
        parse_matrix(Path("bad.yaml"), data)


def test_ci_subset_has_one_exactly_once_hard_case():
    cases = load_matrix(MATRICES / "mirror-maker-failure.yaml").cases
    ci = [c for c in cases if "ci" in c.markers]
    eo = [c for c in ci if c.mirror_semantics == "exactly-once"]
    assert [(c.failure, c.failures, c.brokers) for c in eo] == [("hard", 1, 1)]
    assert {c.failure for c in ci if c.mirror_semantics == "at-least-once"} == {
        "clean", "hard", "soft"}
    assert all(c.idempotence for c in cases)
    assert {c.semantics for c in cases} == {"at-least-once", "exactly-once"}


def test_source_and_target_specs_differ_so_the_pool_keeps_both():
    case = load_matrix(MATRICES / "mirror-maker-failure.yaml").cases[0]
    source, target = pair_specs(case)
    assert source != target and source.role == "source" and target.role == "target"
    assert spec_key(source) != spec_key(target) != spec_key(cluster_spec(case))
    _, mixed = pair_specs(case, "3.9.2")
    assert mixed.kafka_version == "3.9.2" and mixed.brokers == source.brokers


def test_mirror_matrices_expand_with_ci_subsets_and_markers():
    mm = load_matrix(MATRICES / "mirror-maker-failure.yaml")
    ci = [c for c in mm.cases if "ci" in c.markers]
    assert sorted(c.failure for c in ci) == ["clean", "hard", "hard", "soft"]
    assert all(c.target == "mirror-maker" and "mirror_maker_failure" in c.markers
               for c in mm.cases)
    vc = load_matrix(MATRICES / "version-compat.yaml")
    upgrades = [c for c in vc.cases if c.compat == "upgrade"]
    assert upgrades and all("upgrade" in c.markers and c.brokers == 3 for c in upgrades)
    assert any("kafka_3_9" in c.markers and "ci" in c.markers for c in vc.cases)
    assert all("version_compat" in c.markers for c in vc.cases)


def test_mirror_maker_target_outside_the_mirror_scenario_is_one_line():
    with pytest.raises(MatrixError, match="mirror-maker needs scenario mirror"):
        parse_matrix(Path("x.yaml"), {"scenario": "replication", "dimensions": {
            "failure": ["hard"], "target": ["mirror-maker"]}})
    with pytest.raises(MatrixError, match="replication_policy"):
        parse_matrix(Path("x.yaml"), {"scenario": "mirror", "dimensions": {
            "replication_policy": ["prefix"]}})


def test_fault_plan_takes_the_mirror_maker_target_but_random_never_draws_it():
    from pytest_kreplica.faults import FaultPlan

    plan = FaultPlan(seed=4, failure="hard", target="mirror-maker", failures=2)
    assert [s.target for s in plan.faults()] == ["mirror-maker", "mirror-maker"]
    drawn = {s.target for s in FaultPlan(seed=4, failure="hard", target="random",
                                         failures=200).faults()}
    assert "mirror-maker" not in drawn
