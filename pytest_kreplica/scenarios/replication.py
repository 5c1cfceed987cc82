"""Scenario ``replication`` (C.1, and with the failure dimensions C.2-C.5): one cluster from
the session pool, the case's workload on it, every hook the plugins added (the nemesis)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..cluster.pool import cluster_spec
from . import tiered
from .runner import CaseResult, RunOptions, run_case

if TYPE_CHECKING:
    from ..cluster.pool import ClusterPool
    from ..matrix import Case


def run(case: Case, pool: ClusterPool, run_dir: Path, options: RunOptions) -> CaseResult:
    """Take a healthy cluster of the case's spec from ``pool`` and run the case on it."""
    acquired, started = time.monotonic(), pool.started
    cluster = pool.acquire(cluster_spec(case))
    if getattr(case, "tiered", "off") == "on":  # the read across the tier boundary
        options.hooks.cleanup.append(tiered.final_read_step)
    # run.json's ``cluster_reused``: the case ran on a cluster an earlier case started (the
    # benchmarks' per-case overhead is measured on those)
    reused = pool.started == started
    return run_case(case, cluster, run_dir, options.hooks, spark_master=options.spark_master,
                    replica_check=options.replica_check,
                    cluster_ready_s=time.monotonic() - acquired,
                    run_meta={"cluster_reused": reused})
