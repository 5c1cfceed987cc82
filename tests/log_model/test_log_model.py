"""The log model against a real 3-node cluster: the CI profile (20 examples x 20 steps on one
reused pool cluster, every rule run at least once but one of the two disruptions), the soak
profile (hours; runs only with ``-m soak``), and the replica-log verifier over every topic the
examples wrote."""

from __future__ import annotations

import os
import time

import pytest

from pytest_kreplica.logmodel.machine import WEIGHTS
from pytest_kreplica.logmodel.runner import (
    DATABASE_DIR,
    ENV_EXAMPLES,
    PROFILES,
    run_log_model,
    verify_topics,
)

pytestmark = pytest.mark.log_model
DISRUPTIONS = ("restart_node", "move_leader")  # share max_disruptions per example


def _run_and_verify(cluster, run_dir, output, profile, kreplica_options):
    started = time.monotonic()
    run = run_log_model(cluster, run_dir, profile=profile, topic_prefix=f"logmodel-{profile}",
                        database_dir=output / DATABASE_DIR)
    print(f"log model {profile}: {run.examples} examples, {run.steps} steps in "
          f"{run.seconds:.1f} s (total with topic setup {time.monotonic() - started:.1f} s)")
    verdict = verify_topics(cluster, run.topics, run_dir, kreplica_options.spark_master)
    assert verdict.valid, verdict.summary()
    assert verdict.counts["partitions"] == len(run.topics)
    for topic in run.topics:
        cluster.delete_topics([topic])
    return run


@pytest.mark.ci
def test_log_model_ci(kreplica_log_cluster, kreplica_log_dir, kreplica_output,
                      kreplica_options):
    run = _run_and_verify(kreplica_log_cluster, kreplica_log_dir, kreplica_output, "ci",
                          kreplica_options)
    wanted = int(os.environ.get(ENV_EXAMPLES) or PROFILES["ci"]["max_examples"])
    assert run.examples >= wanted  # Hypothesis may add explicit / database examples
    assert run.steps > run.examples
    # every rule of weight 2 or more ran (20 examples do not always reach a rule of weight 1:
    # Hypothesis' choice among rules is not uniform; the soak profile wants every rule), and at
    # least one of the two disruptions, which share one slot per example
    frequent = {r for r, w in WEIGHTS.items() if w >= 2}
    missing = frequent - set(run.rules)
    assert not missing, f"never ran: {missing} (ran: {run.rules})"
    assert set(DISRUPTIONS) & set(run.rules), f"no restart and no leader move: {run.rules}"


@pytest.mark.soak
def test_log_model_soak(kreplica_log_cluster, kreplica_log_dir, kreplica_output,
                        kreplica_options):
    _run_and_verify(kreplica_log_cluster, kreplica_log_dir, kreplica_output, "soak",
                    kreplica_options)
