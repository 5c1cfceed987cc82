"""Scenarios: the phase runner (``runner``) and the scenarios built on it; what produces and
reads during a case is a workload (``pytest_kreplica.workloads``).

``SCENARIOS`` is the registry: a scenario's name (the ``scenario:`` key of a matrix) and the
module that runs it; each such module has ``run(case, pool, run_dir, options) -> CaseResult``
(``runner.RunOptions``), which the plugin's ``kreplica_run`` fixture calls. It names modules
as strings so that the matrix and the plugin can read the vocabulary without importing Kafka
clients, Spark or Docker.
"""

from __future__ import annotations

SCENARIOS: dict[str, str] = {
    "replication": "pytest_kreplica.scenarios.replication",
    "mirror": "pytest_kreplica.scenarios.mirror",
    "version-compat": "pytest_kreplica.scenarios.upgrade",
}

__all__ = ["SCENARIOS"]
