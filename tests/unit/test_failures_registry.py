"""FAILURES is the one table of failure types: every entry is complete, the matrix's
``failure`` / ``target`` vocabularies and backend rule are derived from it, and the nemesis,
the scenario checks and the loss evidence follow an entry they have never seen by name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_kreplica.cluster import backend_names
from pytest_kreplica.errors import MatrixError
from pytest_kreplica.faults import (
    FAILURE_VALUES,
    FAILURES,
    RANDOM_FAILURES,
    TARGET_VALUES,
    FaultPlan,
    FaultRecord,
    Nemesis,
    failures_on,
    scenario_checks,
)
from pytest_kreplica.faults.failure import GONE_AT_STRIKE, LEADER_GONE, Failure
from pytest_kreplica.matrix import DIMENSIONS, InvalidValue, parse_matrix
from pytest_kreplica.validation.evidence import excusing_events


@pytest.mark.parametrize("name", list(FAILURES))
def test_every_failure_is_complete(name):
    f = FAILURES[name]
    assert f.name == name
    assert callable(f.strike) and callable(f.restore)
    assert f.event and f.restore_event and f.event != f.restore_event
    assert re.fullmatch(r"#[0-9a-f]{6}", f.colour) and f.label and f.doc
    # every backend (None), or at least one known backend
    assert f.backends is None or f.backends and set(f.backends) <= set(backend_names())
    assert any(f.runs_on(b) for b in backend_names())
    assert f.leader_gone in LEADER_GONE
    # a component either takes both halves of the failure or neither
    assert (f.strike_component is None) == (f.restore_component is None)


def test_events_and_colours_tell_failures_apart():
    assert len({f.event for f in FAILURES.values()}) == len(FAILURES)
    assert len({f.colour for f in FAILURES.values()}) == len(FAILURES)
    assert not {f.event for f in FAILURES.values()} & {"recovered", "elect"}


def test_matrix_vocabularies_are_the_registry():
    assert ("none", *FAILURES, "random") == FAILURE_VALUES
    for dim, values in (("failure", FAILURE_VALUES), ("target", TARGET_VALUES)):
        parse = DIMENSIONS[dim].parse
        assert [parse(v) for v in values] == list(values)
        with pytest.raises(InvalidValue) as err:
            parse("flood")
        assert str(err.value) == " | ".join(values)
    assert set(RANDOM_FAILURES) == {n for n, f in FAILURES.items() if f.random}
    assert "partition" not in RANDOM_FAILURES  # docker-only: a soak runs on any backend


def test_matrix_backend_rule_comes_from_the_registry():
    matrix = {"scenario": "replication",
              "dimensions": {"failure": ["partition"], "backend": ["process"]}}
    allowed = " | ".join(failures_on("process"))  # none | clean | hard | soft | links | random
    with pytest.raises(MatrixError, match=r"partition needs backend docker .*got backend "
                                          r"process; allowed on process: "
                                          + re.escape(allowed) + "$"):
        parse_matrix(Path("x.yaml"), matrix)
    matrix["dimensions"]["backend"] = ["docker"]
    (case,) = parse_matrix(Path("x.yaml"), matrix).cases
    assert case.failure == "partition"


class _Cluster:
    """Records the calls a failure's strike / restore make; answers the wait for health."""

    def __init__(self):
        self.calls = []

    def freeze(self, node):
        self.calls.append(("freeze", node))

    def thaw(self, node, timeout):
        self.calls.append(("thaw", node, timeout))

    def wait_healthy(self, topics, timeout):
        self.calls.append(("healthy", tuple(topics)))


class _Writer:
    def __init__(self):
        self.kinds = []

    def event(self, kind, **fields):
        self.kinds.append(kind)


FROZEN = Failure(name="frozen", doc="a made-up failure", event="freeze",
                 restore_event="thaw", colour="#123456", label="freeze", backends=None,
                 moves_leadership=True, leader_gone=GONE_AT_STRIKE, random=False,
                 strike=lambda cluster, node: cluster.freeze(node),
                 restore=lambda cluster, node, timeout: cluster.thaw(node, timeout))


def test_a_new_registry_entry_drives_the_nemesis_checks_and_evidence(monkeypatch):
    """What "add a failure type = one module + one registry line" rests on: nobody names
    the failure types but the registry."""
    monkeypatch.setitem(FAILURES, "frozen", FROZEN)
    cluster, writer = _Cluster(), _Writer()
    plan = FaultPlan(seed=1, failure="frozen", target="leader")
    nemesis = Nemesis(cluster, writer, plan, [("t", 0)], recovery_timeout=7.0)
    spec = plan.preview(1)[0]
    record = FaultRecord(spec.index, spec.failure, spec.target, "t", 0, node=2)
    nemesis._strike(spec, record)
    nemesis._restore(spec, record)
    assert cluster.calls == [("freeze", 2), ("thaw", 2, 7.0), ("healthy", ("t",))]
    assert writer.kinds == ["freeze", "thaw", "recovered"]
    assert record.error is None

    # it moves leadership: a leader failure without an election fails its check
    led = FaultRecord(1, "frozen", "leader", "t", 0, node=2, leader_before=2,
                      strike_ns=10, restore_ns=20, recovered_ns=30)
    assert [c["ok"] for c in scenario_checks([led])] == [True, False]
    # ... and explains an acks=1 loss of what the leader acknowledged before the strike
    (event,) = excusing_events([led.to_dict()], {"acks": 1})
    assert event["until_ns"] == 10 and event["failure"] == "frozen"
