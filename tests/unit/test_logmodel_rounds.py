"""A log-model profile with a duration runs rounds of Hypothesis runs until that much time
has passed (the tiered soak's hour on any machine); KREPLICA_LOG_DURATION overrides it."""

from __future__ import annotations

import time

import pytest
from hypothesis.stateful import RuleBasedStateMachine, rule

from pytest_kreplica.logmodel.runner import (
    ENV_DURATION,
    ENV_EXAMPLES,
    PROFILES,
    profile_duration,
    run_log_model,
)


class Ticking(RuleBasedStateMachine):
    """A stand-in machine (no cluster): each step takes a little time."""

    def __init__(self, env):
        super().__init__()
        self.env = env

    @rule()
    def tick(self) -> None:
        self.env.record("tick", {})
        time.sleep(0.002)


def test_a_profile_with_a_duration_runs_rounds_until_it_passed(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_EXAMPLES, "2")
    monkeypatch.setenv(ENV_DURATION, "0.6")
    run = run_log_model(None, tmp_path, profile="tiered-soak", machine=Ticking)
    assert run.seconds >= 0.6
    assert run.rounds >= 2
    assert run.rules["tick"] > 0


def test_a_profile_without_a_duration_is_one_round(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_EXAMPLES, "2")
    monkeypatch.delenv(ENV_DURATION, raising=False)
    assert "duration_s" not in PROFILES["teeth"]
    run = run_log_model(None, tmp_path, profile="teeth", machine=Ticking)
    assert run.rounds == 1


def test_the_duration_comes_from_the_profile_unless_overridden(monkeypatch):
    monkeypatch.delenv(ENV_DURATION, raising=False)
    assert profile_duration("tiered-soak") == 3600.0
    assert profile_duration("ci") == 0.0
    monkeypatch.setenv(ENV_DURATION, "0")
    assert profile_duration("tiered-soak") == 0.0


@pytest.mark.parametrize("value", ["soon", "-5"])
def test_a_bad_duration_names_the_variable_and_what_it_wants(monkeypatch, value):
    monkeypatch.setenv(ENV_DURATION, value)
    with pytest.raises(ValueError, match=rf"{ENV_DURATION}='{value}': expected seconds"):
        profile_duration("tiered-soak")
