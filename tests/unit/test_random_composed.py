"""The soak's composed nemesis, pure logic: ``random`` as a part of a composition (each
drawn per fault from the seed, ``random+random``), and MirrorMaker 2 among the random
targets of a two-cluster case (a component's fault always on its own)."""

from __future__ import annotations

import textwrap

import pytest

from pytest_kreplica.errors import InputError, MatrixError
from pytest_kreplica.faults.plan import FaultPlan
from pytest_kreplica.faults.registry import RANDOM_FAILURES, TARGETS, facilities_needed
from pytest_kreplica.matrix import DIMENSIONS, load_matrix
from pytest_kreplica.plugin.failures import MIRROR_COMPONENTS, fault_plan


def matrix(tmp_path, scenario="replication", **dims):
    lines = "".join(f"  {k}: [{v}]\n" for k, v in dims.items())
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent(f"""\
        description: soak
        scenario: {scenario}
        dimensions:
        """) + lines)
    return path


def test_random_plus_random_is_a_composed_case_with_one_failure_marker(tmp_path):
    (case,) = load_matrix(matrix(tmp_path, failure="random+random", brokers=5)).cases
    assert case.failure == "random+random"
    assert DIMENSIONS["failure"].id_part("random+random") == "random-plus-random"
    assert [m for m in case.markers if m.startswith("failure_")] == ["failure_random"]
    assert "composed_faults" in case.markers
    assert facilities_needed("random+random") == facilities_needed("random")


def test_random_parts_that_may_both_take_a_node_out_need_five_brokers(tmp_path):
    with pytest.raises(MatrixError, match="allowed: brokers >= 5"):
        load_matrix(matrix(tmp_path, failure="random+random", brokers=3))
    # a part that keeps its node running composes with random on three
    (case,) = load_matrix(matrix(tmp_path, failure="random+slow_link", brokers=3)).cases
    assert "failure_slow_link" in case.markers


def test_random_plus_random_draws_two_random_failures_per_step_from_the_seed():
    plan = FaultPlan(seed=11, failure="random+random", target="random", failures=20)
    steps = list(plan.steps())
    assert all(len(step) == 2 for step in steps)
    drawn = [spec.failure for step in steps for spec in step]
    assert set(drawn) <= set(RANDOM_FAILURES)
    assert len(set(drawn)) > 1  # 40 draws of three types: not one type every time
    assert all(second.overlaps == first.index for first, second in steps)
    again = list(FaultPlan(seed=11, failure="random+random", target="random",
                           failures=20).steps())
    assert again == steps
    other = list(FaultPlan(seed=12, failure="random+random", target="random",
                           failures=20).steps())
    assert other != steps


def test_a_composition_without_random_parts_draws_as_before():
    """``random`` parts add draws; a composition of named types keeps its schedule."""
    specs = list(FaultPlan(seed=42, failure="hard+slow_link", target="leader", failures=2,
                           downtime_s=6.0).faults())
    assert [s.failure for s in specs] == ["hard", "slow_link", "hard", "slow_link"]


def test_a_random_target_of_a_mirror_plan_draws_mirror_maker_and_strikes_it_alone():
    plan = FaultPlan(seed=3, failure="random+random", target="random", failures=40,
                     component_choices=MIRROR_COMPONENTS)
    steps = list(plan.steps())
    on_mm = [step for step in steps if step[0].target == "mirror-maker"]
    assert on_mm, "40 draws among four targets never drew mirror-maker"
    assert all(len(step) == 1 and step[0].failure in RANDOM_FAILURES for step in on_mm)
    brokers = [step for step in steps if step[0].target != "mirror-maker"]
    assert brokers and all(len(step) == 2 for step in brokers)
    assert all(spec.target in TARGETS for step in brokers for spec in step)
    assert [s.index for s in plan.faults()] == list(range(1, len(list(plan.faults())) + 1))


def test_without_components_a_random_target_draws_only_nodes():
    specs = list(FaultPlan(seed=3, failure="random", target="random", failures=40).faults())
    assert {s.target for s in specs} <= set(TARGETS)


def test_an_unknown_component_is_refused():
    with pytest.raises(InputError, match="component 'nosuch' is not allowed"):
        FaultPlan(seed=1, failure="hard", target="random", component_choices=("nosuch",))


def test_a_mirror_case_plan_offers_mirror_maker_and_a_replication_case_does_not(tmp_path):
    (mirror,) = load_matrix(matrix(tmp_path, "mirror", failure="random",
                                   target="random")).cases
    assert fault_plan(mirror).component_choices == MIRROR_COMPONENTS
    (plain,) = load_matrix(matrix(tmp_path, failure="random", target="random")).cases
    assert fault_plan(plain).component_choices == ()


def test_a_mirror_case_whose_failure_does_not_strike_a_process_never_draws_mirror_maker(
        tmp_path):
    (case,) = load_matrix(matrix(tmp_path, "mirror", failure="clock_skew",
                                 target="random")).cases
    assert fault_plan(case).component_choices == ()
