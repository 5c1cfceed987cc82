"""What the two-cluster system tests (C.6 test_mirror.py, C.7 test_upgrade.py) share: a
fresh run directory per case and its row in the matrix summary, recorded whether the case
ran to a result or failed on the way (the single-cluster tests get both from the plugin's
``kreplica_run``)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def recorded_run(kreplica_output, kreplica_record) -> Callable[..., Any]:
    """``recorded_run(case, body)``: ``body(run_dir) -> CaseResult`` runs in a fresh
    ``<output>/<case id>/``; the summary gets ``result.summary()``, or an ``error`` row
    naming the run directory when ``body`` raised."""

    def run(case: Any, body: Callable[[Any], Any]) -> Any:
        run_dir = kreplica_output / case.case_id
        if run_dir.exists():  # histories are append-only: never mix two runs
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        row = {"case_id": case.case_id, "verdict": "error", "run_dir": str(run_dir)}
        try:
            result = body(run_dir)
            row = result.summary()
            return result
        finally:
            kreplica_record(row)

    return run


@pytest.fixture
def mirror_pair_run(kreplica_options, kreplica_pool, recorded_run) -> Callable[..., Any]:
    """``mirror_pair_run(case, target_version=None) -> CaseResult``: a source and a target
    cluster from the session pool, MirrorMaker 2 between them, the case run and recorded."""
    from pytest_kreplica.scenarios.mirror import acquire_pair, run_mirror_case

    def run(case: Any, target_version: str | None = None) -> Any:
        def body(run_dir: Any) -> Any:
            source, target = acquire_pair(kreplica_pool, case, target_version)
            return run_mirror_case(case, source, target, run_dir,
                                   spark_master=kreplica_options.spark_master,
                                   replica_check=kreplica_options.replica_check)

        return recorded_run(case, body)

    return run
