"""The phase runner's pure parts and its wiring (no cluster): every registered scenario module
has the one entry ``run(case, pool, run_dir, options)``, ``kreplica_run`` dispatches
through ``SCENARIOS`` with the plugins' hooks, a MirrorMaker 2 fault goes through the same
``add_nemesis`` as a broker's (the component offered in ``ctx.components``), two clusters'
replica verdicts combine into one check, and the derived figures (election time, the
case's outcome) are computed once from their source."""

from __future__ import annotations

import importlib
import inspect
import random
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_kreplica.cluster.base import NodeState
from pytest_kreplica.faults.nemesis import Component
from pytest_kreplica.matrix import parse_matrix
from pytest_kreplica.plugin.failures import add_nemesis
from pytest_kreplica.scenarios import SCENARIOS
from pytest_kreplica.scenarios.replicas import Phases, ReplicaCheck, combine_checks
from pytest_kreplica.scenarios.runner import CaseContext, CaseHooks, CaseResult


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_module_has_the_one_entry(name):
    module = importlib.import_module(SCENARIOS[name])
    assert list(inspect.signature(module.run).parameters) == [
        "case", "pool", "run_dir", "options"], SCENARIOS[name]


DISPATCH_CONFTEST = """
    import sys
    import types

    import pytest

    from pytest_kreplica import scenarios

    CALLS = []

    class Result:
        phases = {"produce": 1.0}

        def summary(self):
            return {"case_id": "x", "verdict": "valid"}

    def run(case, pool, run_dir, options):
        CALLS.append((case.case_id, pool, run_dir.is_dir() and not any(run_dir.iterdir()),
                      [h.__name__ for h in options.hooks.during_produce]))
        return Result()

    fake = types.ModuleType("fake_scenario")
    fake.run = run
    sys.modules["fake_scenario"] = fake

    @pytest.hookimpl(trylast=True)
    def pytest_configure(config):
        config.pluginmanager.get_plugin("kreplica-first-run").done = True  # no jars needed

    @pytest.fixture
    def kreplica_pool():
        return "the-pool"

    @pytest.fixture(autouse=True)
    def registry(monkeypatch):
        monkeypatch.setitem(scenarios.SCENARIOS, "replication", "fake_scenario")
"""
DISPATCH_TEST = """
    import pytest

    from conftest import CALLS

    @pytest.mark.kreplica_scenario("replication")
    def test_case(kreplica_case, kreplica_run):
        kreplica_run(kreplica_case)
        (case_id, pool, fresh, hooks), = CALLS[-1:]
        print(f"RAN {case_id} pool={pool} fresh={fresh} hooks={hooks}")
"""


def test_kreplica_run_dispatches_through_scenarios(pytester):
    pytester.mkdir("matrices")
    (pytester.path / "matrices" / "m.yaml").write_text(textwrap.dedent("""
        scenario: replication
        dimensions:
          failure: [none, hard]
    """))
    pytester.makeconftest(textwrap.dedent(DISPATCH_CONFTEST))
    pytester.makepyfile(test_dispatch=textwrap.dedent(DISPATCH_TEST))
    result = pytester.runpytest("-q", "-s", "-p", "no:xdist")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "RAN m-nofail pool=the-pool fresh=True hooks=[]" in out
    assert "RAN m-hard pool=the-pool fresh=True hooks=['nemesis(hard leader)']" in out


@dataclass
class FakeProcess:
    """A MirrorMaker 2 stand-in: the strike / restore methods the nemesis calls."""

    state: NodeState = NodeState.RUNNING
    pid: int = 4242
    calls: tuple = ()

    def kill(self):
        self.calls += ("kill",)
        self.state = NodeState.STOPPED

    def start(self):
        self.calls += ("start",)
        self.state = NodeState.RUNNING


class Events:
    def __init__(self):
        self.rows = []

    def event(self, kind, **fields):
        self.rows.append((kind, fields.get("node"), fields.get("role")))


def test_mirror_maker_fault_goes_through_add_nemesis_with_the_component(tmp_path):
    case = parse_matrix(Path("mm.yaml"), {"scenario": "mirror", "dimensions": {
        "failure": ["hard"], "target": ["mirror-maker"], "downtime": [0.1]}}).cases[0]
    hooks = CaseHooks()
    add_nemesis(case, hooks)
    (nemesis,) = hooks.during_produce
    process = FakeProcess()
    writer = Events()
    ctx = CaseContext(case, None, writer, ["t"], random.Random(1), threading.Event(),
                      tmp_path)
    ctx.components["mirror-maker"] = Component("mirror-maker", "MirrorMaker 2", process,
                                               lambda: 0, lambda baseline, timeout: None)
    nemesis(ctx)
    assert process.calls == ("kill", "start")
    (fault,) = ctx.extra["faults"]
    assert fault["node"] == "mirror-maker" and fault["error"] is None
    assert [r[0] for r in writer.rows if r[2] == "mirror-maker"] == ["kill", "start",
                                                                      "recovered"]
    assert "election_s" not in ctx.extra and "election_max_s" not in ctx.extra


def logs(valid, divergence=(), **counts):
    base = {"corrupt_batches": 0, "missing_batches": 0, "divergent_batches": 0,
            "segments": 2}
    base.update(counts)
    return {"valid": valid, "counts": base, "first_divergence": list(divergence),
            "examples": {"corrupt_batches": [{"offset": 3}]} if not valid else {},
            "at_rest": True}


def test_two_clusters_replica_verdicts_combine_into_one_check():
    bad = {"topic": "source.t", "partition": 0, "offset": 3, "kind": "corrupt",
           "replicas": {"1": 7}}
    both = combine_checks({
        "source": ReplicaCheck(True, 2, [], logs=logs(True)),
        "target": ReplicaCheck(False, 3, [], logs=logs(False, [bad], corrupt_batches=1))})
    assert not both.valid and not both.at_rest and both.segments == 5
    assert both.logs["counts"]["corrupt_batches"] == 1 and both.logs["counts"]["segments"] == 4
    assert both.logs["first_divergence"] == [{**bad, "cluster": "target"}]
    assert both.logs["examples"]["corrupt_batches"] == [{"offset": 3, "cluster": "target"}]
    assert combine_checks({"source": ReplicaCheck(True, 1, [], logs=logs(True)),
                           "target": ReplicaCheck(True, 1, [], logs=logs(True))}).valid


def test_a_phase_timed_twice_adds_up(monkeypatch):
    """Both clusters' snapshots of a mirrored case land in one ``snapshot`` phase."""
    clock = iter([0.0, 1.0, 10.0, 12.0])
    monkeypatch.setattr("pytest_kreplica.scenarios.replicas.time.monotonic",
                        lambda: next(clock))
    phases = Phases()
    for _ in range(2):
        with phases.timed("snapshot"):
            pass
    assert phases == {"snapshot": 3.0}


@dataclass
class Verdict:
    valid: bool
    counts: dict


CASE = parse_matrix(Path("m.yaml"), {"dimensions": {"partitions": [1]}}).cases[0]


def test_election_time_is_derived_from_the_fault_records():
    faults = [{"election_s": 2.5}, {"election_s": None}, {"election_s": 4.0}]
    result = CaseResult(CASE, Path("r"), Verdict(True, {"sent": 1, "acked": 1}),
                        ReplicaCheck(True, 1, []), {}, {}, {"faults": faults})
    assert result.summary()["election_max_s"] == 4.0
    assert CaseResult(CASE, Path("r"), Verdict(True, {}), ReplicaCheck(True, 1, []), {}, {},
                      {}).summary()["election_max_s"] is None


def test_the_runners_judgment_is_the_result_not_recomputed():
    judged = {"passed": False, "reason": "check failed: x"}
    result = CaseResult(CASE, Path("r"), Verdict(True, {"sent": 1, "acked": 1}),
                        ReplicaCheck(True, 1, []), {}, {}, {}, outcome=judged)
    assert not result.valid and result.outcome is judged
