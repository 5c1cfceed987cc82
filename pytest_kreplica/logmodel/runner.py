"""Run the log machine against a cluster under a Hypothesis profile; on a failure write the shrunk
program as a replay file into the run directory; at the end compare the replicas.

Profiles (``PROFILES``): ``ci`` is 20 examples x 20 steps on one reused cluster (every rule but
one of the two disruptions runs in it; about a minute on 2 cores: the search for bugs is the
soak's), ``soak`` runs for hours, ``tiered-ci`` / ``tiered-soak`` are the sizes of the tiered
profile (``tiered.TieredLogMachine`` on a cluster with the remote tier);
``KREPLICA_LOG_EXAMPLES`` overrides the number of examples of any profile. A profile with a
``duration_s`` (the tiered soak's hour) runs rounds of its examples until that much time has
passed, so it lasts its hour on a fast machine and a slow one; ``KREPLICA_LOG_DURATION``
overrides it (``0``: one round). The example database lives under the output directory, so a
failure found once is tried first on the next run."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.stateful import run_state_machine_as_test

from ..cluster.base import ClusterSpec
from ..validation.replicas.snapshot import snapshot_replicas
from ..validation.replicas.verify import verify_logs
from .machine import RETENTION_CHECK_MS, LogEnv, LogMachine
from .replay import write_replay
from .system import RETRY_S, LogSystem

if TYPE_CHECKING:  # pragma: no cover
    from ..cluster.base import Cluster, ClusterSpec

PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"max_examples": 20, "stateful_step_count": 20, "max_disruptions": 1},
    "soak": {"max_examples": 20_000, "stateful_step_count": 60, "max_disruptions": 3},
    # the teeth tests: a planted fault must be found and shrunk quickly
    "teeth": {"max_examples": 25, "stateful_step_count": 10, "max_disruptions": 0},
    # the tiered profile (``tiered.TieredLogMachine`` on a cluster with the remote tier): every
    # example waits for uploads, so fewer fit the CI run's minute (the replica check takes
    # half of it), and no restart or leader move (seconds each): the soak has them
    "tiered-ci": {"max_examples": 6, "stateful_step_count": 8, "max_disruptions": 0},
    # rounds of 50 examples (each a Hypothesis run of its own, fresh draws) for an hour
    "tiered-soak": {"max_examples": 50, "stateful_step_count": 40, "max_disruptions": 3,
                    "duration_s": 3600.0},
    "tiered-teeth": {"max_examples": 15, "stateful_step_count": 8, "max_disruptions": 0},
}
TIERED_FACILITY = "tiered_storage"  # cluster.facilities: the remote tier on every node
ENV_EXAMPLES = "KREPLICA_LOG_EXAMPLES"
ENV_DURATION = "KREPLICA_LOG_DURATION"
DATABASE_DIR = "hypothesis-db"


def cluster_spec(kafka_version: str | None, backend: str, tiered: bool = False) -> ClusterSpec:
    """The cluster the log model needs: 3 nodes, retention checked every 250 ms; with
    ``tiered``, the remote tier on every node (Kafka's LocalTieredStorage, a directory of
    this machine: the process backend)."""
    spec = ClusterSpec(brokers=3, kafka_version=kafka_version,
                       backend="process" if tiered else backend,
                       facilities=frozenset({TIERED_FACILITY} if tiered else ()))
    return spec.with_config(log_retention_check_interval_ms=RETENTION_CHECK_MS,
                            log_initial_task_delay_ms=0)


def profile_settings(profile: str, database_dir: Path | None) -> settings:
    """Hypothesis settings of ``profile`` (examples overridable by KREPLICA_LOG_EXAMPLES)."""
    if profile not in PROFILES:
        raise ValueError(f"log-model profile {profile!r} is unknown; allowed: "
                         f"{', '.join(PROFILES)}")
    chosen = PROFILES[profile]
    examples = int(os.environ.get(ENV_EXAMPLES) or chosen["max_examples"])
    return settings(
        max_examples=examples, stateful_step_count=chosen["stateful_step_count"],
        deadline=None, derandomize=False, print_blob=True,
        database=None if database_dir is None else DirectoryBasedExampleDatabase(
            str(database_dir)),
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck))


@dataclass
class LogModelRun:
    """What one run did (for the test's assertions and the docs' figures)."""

    examples: int
    steps: int
    rules: dict[str, int]  # steps per rule
    seconds: float
    topics: list[str]
    run_dir: Path
    observed: dict[str, int]  # what the broker was seen doing by itself (tiered profile)
    rounds: int = 1  # Hypothesis runs made (a profile with a duration runs until it passed)


def profile_duration(profile: str) -> float:
    """Seconds a profile runs rounds for (KREPLICA_LOG_DURATION overrides; 0: one round)."""
    value = os.environ.get(ENV_DURATION)
    if value:
        try:
            seconds = float(value)
        except ValueError:
            raise ValueError(f"{ENV_DURATION}={value!r}: expected seconds (a number >= 0)"
                             ) from None
        if seconds < 0:
            raise ValueError(f"{ENV_DURATION}={value!r}: expected seconds (a number >= 0)")
        return seconds
    return float(PROFILES.get(profile, {}).get("duration_s", 0.0))


def run_log_model(cluster: Cluster, run_dir: Path, profile: str = "ci",
                  machine: type[LogMachine] = LogMachine, database_dir: Path | None = None,
                  read_timeout_s: float = 10.0, topic_prefix: str = "logmodel",
                  retry_s: float = RETRY_S) -> LogModelRun:
    """Run ``machine`` under ``profile``; a failure writes ``run_dir/replay.py`` (the shrunk
    program), adds its path to the exception, and re-raises."""
    run_dir.mkdir(parents=True, exist_ok=True)
    system = LogSystem(cluster, read_timeout_s=read_timeout_s, retry_s=retry_s)
    env = LogEnv(system, run_dir, topic_prefix=topic_prefix,
                 max_disruptions=PROFILES[profile]["max_disruptions"])
    started = time.monotonic()
    deadline = started + profile_duration(profile)
    rounds = 0
    try:
        while rounds == 0 or time.monotonic() < deadline:
            rounds += 1
            run_state_machine_as_test(lambda: machine(env),
                                      settings=profile_settings(profile, database_dir))
    except BaseException as exc:
        path = write_replay(run_dir, env.program, machine, exc)
        exc.add_note(f"log model: the minimal program ({len(env.program)} steps) is in {path}; "
                     f"re-run it with: pytest --kreplica-replay {path}")
        raise
    finally:
        system.close()
    return LogModelRun(env.examples, env.steps, dict(env.rules), time.monotonic() - started,
                       env.topics, run_dir, dict(env.observed), rounds)


def replay_program(cluster: Cluster, run_dir: Path, steps: list[tuple[str, dict[str, Any]]],
                   machine: type[LogMachine], read_timeout_s: float = 10.0,
                   retry_s: float = RETRY_S) -> LogEnv:
    """Run a recorded program step by step (invariants after each) on a new topic."""
    run_dir.mkdir(parents=True, exist_ok=True)
    system = LogSystem(cluster, read_timeout_s=read_timeout_s, retry_s=retry_s)
    env = LogEnv(system, run_dir, topic_prefix=f"replay-{int(time.time())}",
                 max_disruptions=len(steps))
    try:
        state = machine(env)
        for name, kwargs in steps:
            state.replay_step(name, kwargs)
        state.teardown()
    finally:
        system.close()
    return env


def verify_topics(cluster: Cluster, topics: list[str], run_dir: Path,
                  spark_master: str | None = None) -> Any:
    """Snapshot every replica of ``topics`` into ``run_dir`` and run the replica-log
    verifier over the committed range; returns its verdict."""

    snapshot_replicas(cluster, topics, run_dir, timeout=60.0)
    return verify_logs(run_dir, spark_master=spark_master)
