"""Harness errors against a real 2-broker process cluster: a case the harness could not do
its job in ends as a pytest *error*, never a failure, with a verdict.json that judges
nothing about the broker (``passed: null``, a ``harness`` part naming what was expected and
what was seen) and its own count in the summary line.

Two cases of one inner matrix share one cluster: (a) a ``hard`` fault whose strike is
planted to do nothing (no SIGKILL is sent), which the nemesis must see when it reads the
victim's state back; (b) a case whose brokers are SIGSTOPped behind the cluster's back
once the pool's health gate passed, so the topics' admin requests time out within a short
bound. No Spark runs: neither case gets as far as a check.
"""

from __future__ import annotations

import json
import textwrap
from xml.etree import ElementTree

import pytest

MATRIX = """
    scenario: replication
    dimensions:
      failure: [hard, none]
      target: [leader]
      brokers: [2]
      replication_factor: [2]
      min_insync_replicas: [1]
      producer_mode: [async]
      messages: [300]
      downtime: [1]
"""

INNER_TEST = '''
    import dataclasses
    import os
    import signal

    import pytest

    from pytest_kreplica.faults.registry import FAILURES
    from pytest_kreplica.scenarios import runner
    from pytest_kreplica.validation import warmup

    # the planted fault: "hard" whose strike sends nothing; everything else is the product's
    FAILURES["hard"] = dataclasses.replace(FAILURES["hard"], strike=lambda cluster, node: None)
    warmup.start = lambda *args, **kwargs: None  # no case here reaches a check
    ADMIN_BOUND_S = 4.0

    @pytest.mark.kreplica_scenario("replication")
    def test_case(kreplica_case, kreplica_run, kreplica_pool, monkeypatch):
        frozen = []
        if kreplica_case.failure == "none":
            monkeypatch.setattr(runner, "TOPICS_TIMEOUT", ADMIN_BOUND_S)
            acquire = kreplica_pool.acquire

            def acquire_then_freeze(spec):
                cluster = acquire(spec)  # healthy: the health gate passed
                for node in cluster.nodes:  # the cluster still counts them running
                    os.killpg(node.pid, signal.SIGSTOP)
                    frozen.append(node.pid)
                return cluster
            monkeypatch.setattr(kreplica_pool, "acquire", acquire_then_freeze)
        try:
            kreplica_run(kreplica_case).assert_valid()
        finally:
            for pid in frozen:
                os.killpg(pid, signal.SIGCONT)
'''


def test_a_fault_that_did_not_act_and_an_admin_timeout_are_harness_errors(
        pytester: pytest.Pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "300")
    pytester.mkdir("matrices")
    (pytester.path / "matrices" / "mini.yaml").write_text(textwrap.dedent(MATRIX))
    pytester.makepyfile(test_cases=textwrap.dedent(INNER_TEST))
    out = tmp_path / "runs"
    result = pytester.runpytest_subprocess(
        "-rA", "-p", "no:xdist", "-p", "no:cacheprovider", "--junitxml=out.xml",
        f"--kreplica-output={out}", "--kreplica-no-replica-check", timeout=240)
    text = result.stdout.str()
    result.assert_outcomes(errors=2)
    assert "kreplica: 2 harness error" in text, text[-3000:]
    suite = ElementTree.parse(pytester.path / "out.xml").getroot().find("testsuite")
    assert (suite.get("errors"), suite.get("failures")) == ("2", "0"), text[-3000:]

    verdicts = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/verdict.json")}
    assert len(verdicts) == 2, sorted(verdicts)
    hard = next(v for case, v in verdicts.items() if "hard" in case)
    frozen = next(v for case, v in verdicts.items() if "hard" not in case)
    for verdict in (hard, frozen):
        assert verdict["passed"] is None and verdict["valid"] is None, verdict
        assert verdict["reason"].startswith("harness: "), verdict["reason"]

    # (a) the nemesis read the victim back: still running after a strike that did nothing
    (error,) = hard["harness"]["errors"]
    assert "hard did not act on node" in error, error
    assert "expected its state stopped after the strike, seen running" in error, error
    (fault,) = hard["faults"]
    assert fault["state_after_strike"] == "running" and fault["recovered_ns"] is not None
    events = [json.loads(line) for line in
              (out / next(c for c in verdicts if "hard" in c) / "events.jsonl")
              .read_text().splitlines()]
    assert [e["kind"] for e in events if e["node"] == str(fault["node"])] == \
        ["kill", "fault-did-not-act", "start", "recovered"]  # the strike, then the finding

    # (b) the topics' admin requests to frozen brokers, retried within the short bound
    (error,) = frozen["harness"]["errors"]
    assert "waited 4 s for topics" in error and "created; last seen:" in error, error
    result.stdout.fnmatch_lines([
        "ERROR test_cases.py::test_case[[]mini-*hard*[]] - *did not act on node*",
        "ERROR test_cases.py::test_case[[]mini-*[]] - *waited 4 s for topics*",
    ])
