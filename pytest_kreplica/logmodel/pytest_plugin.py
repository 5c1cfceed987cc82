"""The log model's pytest face: the ``log_model`` marker, ``--kreplica-replay FILE`` and the
fixtures the log-model tests and replay files use. Registered by the kreplica plugin;
Hypothesis and the clients are imported only inside the fixtures.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .replay import load_machine

MARKER = "log_model"
MARKER_HELP = ("the stateful log-model property test: Hypothesis drives a topic's "
               "log and a model side by side on a real cluster")
HELP_REPLAY = ("run a log-model replay file (the shrunk failing program a log-model test "
               "wrote into its run directory) instead of the collected tests")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("kreplica")
    group.addoption("--kreplica-replay", default=None, metavar="FILE", help=HELP_REPLAY)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: {MARKER_HELP}")
    replay = config.getoption("kreplica_replay", None)
    if replay is None:
        return
    path = Path(replay)
    if not path.is_file() or path.suffix != ".py":
        raise pytest.UsageError(f"--kreplica-replay: {replay} is not a replay file (a .py "
                                f"file a log-model test wrote into its run directory)")
    config.args[:] = [str(path.resolve())]


@pytest.fixture
def kreplica_log_cluster(kreplica_pool: Any, kreplica_options: Any) -> Any:
    """A healthy pool cluster with the log model's broker settings (reused by every
    log-model test of the session; each example brings its own topic)."""
    from .runner import cluster_spec

    return kreplica_pool.acquire(cluster_spec(kreplica_options.kafka_version,
                                              kreplica_options.backend))


@pytest.fixture
def kreplica_log_tiered_cluster(kreplica_pool: Any, kreplica_options: Any) -> Any:
    """A healthy pool cluster for the log model's tiered profile: the same broker settings
    plus the remote tier (Kafka's LocalTieredStorage) on every node."""
    from .runner import cluster_spec

    return kreplica_pool.acquire(cluster_spec(kreplica_options.kafka_version,
                                              kreplica_options.backend, tiered=True))


@pytest.fixture
def kreplica_log_dir(kreplica_output: Path, request: pytest.FixtureRequest) -> Path:
    """This test's run directory: ``<output>/log-model/<test name>`` (emptied first)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)[:100]
    run_dir = kreplica_output / "log-model" / name
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    return run_dir


@pytest.fixture
def kreplica_log_replay(kreplica_pool: Any, kreplica_options: Any, kreplica_log_dir: Path
                        ) -> Callable[[list, str], None]:
    """``replay(STEPS, MACHINE)``: run a replay file's program on a new topic of the
    cluster its machine needs (with the remote tier for the tiered profile's machines)."""
    from .runner import cluster_spec, replay_program  # lazy: Hypothesis

    def replay(steps: list, machine: str) -> None:
        cls = load_machine(machine)
        cluster = kreplica_pool.acquire(cluster_spec(
            kreplica_options.kafka_version, kreplica_options.backend,
            tiered=getattr(cls, "TIERED", False)))
        replay_program(cluster, kreplica_log_dir, steps, cls)

    return replay
