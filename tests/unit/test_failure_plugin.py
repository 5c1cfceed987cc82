"""The failure plugin's pytest logic through ``pytester`` (no cluster: the inner tests only
look at the hooks the plugin adds): soak cases stay out unless asked for, the duration
option, the ci subset of a failure matrix, and the hooks a failure case gets."""

from __future__ import annotations

import textwrap

import pytest

FAILURES = """
    scenario: replication
    dimensions:
      failure: [none, hard]
      acks: [-1, 1]
    marks:
      ci: [{failure: hard, acks: -1}]
"""
SOAK = """
    scenario: replication
    markers: [soak]
    dimensions:
      failure: [random]
      target: [random]
      duration: [600]
"""
HOOKS_TEST = """
    import pytest
    from pytest_kreplica.scenarios.runner import CaseHooks

    @pytest.mark.kreplica_scenario("replication")
    def test_case(kreplica_case, pytestconfig):
        hooks = CaseHooks()
        pytestconfig.hook.pytest_kreplica_case_hooks(config=pytestconfig, case=kreplica_case,
                                                     hooks=hooks)
        names = [h.__name__ for h in hooks.during_produce]
        print(f"HOOKS {kreplica_case.case_id} {kreplica_case.semantics} {names} "
              f"keep={len(hooks.keep_producing)}")
"""


@pytest.fixture
def project(pytester: pytest.Pytester):
    pytester.mkdir("matrices")
    (pytester.path / "matrices" / "fail.yaml").write_text(textwrap.dedent(FAILURES))
    (pytester.path / "matrices" / "production.yaml").write_text(textwrap.dedent(SOAK))
    pytester.makepyfile(test_cases=textwrap.dedent(HOOKS_TEST))
    return pytester


def test_soak_cases_run_only_when_asked_for(project):
    plain = project.runpytest("--strict-markers", "-q")
    plain.assert_outcomes(passed=4, deselected=1)
    asked = project.runpytest("--strict-markers", "-q", "-m", "soak")
    asked.assert_outcomes(passed=1, deselected=4)
    by_name = project.runpytest("--strict-markers", "-q", "--kreplica-matrix", "production")
    by_name.assert_outcomes(passed=1)


def test_failure_cases_get_a_nemesis_and_their_semantics(project):
    out = project.runpytest("-q", "-s", "-m", "fail").stdout.str()
    assert "HOOKS fail-acks-1-nofail at-least-once [] keep=0" in out
    assert "HOOKS fail-acks-1-hard at-least-once ['nemesis(hard leader)'] keep=1" in out
    assert "HOOKS fail-acks1-hard at-least-once ['nemesis(hard leader)'] keep=1" in out


def test_ci_subset_of_a_failure_matrix(project):
    result = project.runpytest("--strict-markers", "-q", "-m", "ci", "-s")
    result.assert_outcomes(passed=1, deselected=4)
    assert "HOOKS fail-acks-1-hard " in result.stdout.str()


@pytest.mark.parametrize("value", ["-5", "soon"])
def test_bad_duration_is_one_line_usage_error(project, value):
    result = project.runpytest("-q", "--kreplica-duration", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"--kreplica-duration / KREPLICA_DURATION: bad value '{value}'; allowed: a "
            f"number of seconds > 0") in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_add_nemesis_fails_a_component_target_through_the_standard_hook(tmp_path):
    """A scenario with a component (MirrorMaker 2) hands it to ``add_nemesis``: the same
    nemesis hook strikes and restores it, with the scenario's recovery bound and producer
    rate, and its records and checks land in ``ctx.extra``."""
    import random
    import threading
    from pathlib import Path

    from pytest_kreplica.cluster.base import NodeState
    from pytest_kreplica.faults import Component
    from pytest_kreplica.matrix import parse_matrix
    from pytest_kreplica.plugin.failures import add_nemesis
    from pytest_kreplica.scenarios.runner import CaseContext, CaseHooks

    (case,) = parse_matrix(Path("x.yaml"), {"scenario": "mirror", "dimensions": {
        "failure": ["hard"], "target": ["mirror-maker"], "downtime": [0]}}).cases

    class Process:
        pid, state, calls = 7, NodeState.RUNNING, []

        def kill(self):
            self.calls.append("kill")
            self.state = NodeState.STOPPED

        def start(self):
            self.calls.append("start")
            self.state = NodeState.RUNNING

    class Writer:
        kinds: list[str] = []

        def event(self, kind, **fields):
            self.kinds.append(kind)

    proc, waited = Process(), []
    hooks = CaseHooks()
    add_nemesis(case, hooks, recovery_timeout=33.0, produce_rate=250.0,
                components=lambda ctx: {"mirror-maker": Component(
                    "mirror-maker", "MirrorMaker 2", proc, lambda: 5,
                    lambda base, timeout: waited.append((base, timeout)))})
    assert hooks.produce_rate == 250.0 and len(hooks.keep_producing) == 1
    ctx = CaseContext(case, None, Writer(), ["t"], random.Random(1), threading.Event(),
                      tmp_path)
    (nemesis,) = hooks.during_produce
    nemesis(ctx)
    assert proc.calls == ["kill", "start"] and waited == [(5, 33.0)]
    assert Writer.kinds == ["kill", "start", "recovered"]
    (fault,) = ctx.extra["faults"]
    assert fault["node"] == "mirror-maker" and fault["error"] is None
    assert [c["ok"] for c in ctx.extra["checks"]] == [True]
    assert hooks.keep_producing[0]() is False  # the producer may stop: the faults are done


def test_a_produce_phase_nemesis_strikes_after_the_workloads_first_send(tmp_path):
    """A client still starting (no send yet) is not struck: the plan starts at the first
    send."""
    import random
    import threading
    import time
    from pathlib import Path

    from pytest_kreplica.cluster.base import NodeState
    from pytest_kreplica.faults import Component
    from pytest_kreplica.matrix import parse_matrix
    from pytest_kreplica.plugin.failures import add_nemesis
    from pytest_kreplica.scenarios.runner import CaseContext, CaseHooks
    from pytest_kreplica.workloads.sends import ProduceStats

    (case,) = parse_matrix(Path("x.yaml"), {"scenario": "mirror", "dimensions": {
        "failure": ["hard"], "target": ["mirror-maker"], "downtime": [0]}}).cases
    struck: list[float] = []

    class Process:
        pid, state = 7, NodeState.RUNNING

        def kill(self):
            struck.append(time.monotonic())
            self.state = NodeState.STOPPED

        def start(self):
            self.state = NodeState.RUNNING

    class Writer:
        def event(self, kind, **fields):
            pass

    hooks = CaseHooks()
    add_nemesis(case, hooks, components=lambda ctx: {"mirror-maker": Component(
        "mirror-maker", "MirrorMaker 2", Process(), lambda: 5, lambda base, timeout: None)})
    ctx = CaseContext(case, None, Writer(), ["t"], random.Random(1), threading.Event(),
                      tmp_path, stats=ProduceStats())
    sent_at: list[float] = []

    def first_send() -> None:
        time.sleep(1.0)
        sent_at.append(time.monotonic())
        ctx.stats.sent = 1

    sender = threading.Thread(target=first_send)
    sender.start()
    (nemesis,) = hooks.during_produce
    nemesis(ctx)
    sender.join()
    assert struck and struck[0] >= sent_at[0]
