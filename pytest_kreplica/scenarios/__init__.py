"""Scenarios: the phase runner (``runner``) and the scenarios built on it.

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

# the ``workload:`` dimension: what produces and reads; each module has ``produce`` and
# ``Consumer`` with the plain workload's signatures, and may set ``HISTORY_VERSION`` and
# ``coordinator_keys(topics)`` (the group / transactional id a coordinator target aims at)
WORKLOADS: dict[str, str] = {
    "plain": "pytest_kreplica.scenarios.workload",
    "txn": "pytest_kreplica.scenarios.txn",
    "txn_pipeline": "pytest_kreplica.scenarios.txn_pipeline",
}

# the ``client:`` dimension: which Kafka client drives the plain workload; each module has
# the plain workload's ``produce`` and ``Consumer``, ``CLIENT`` and ``client_version(case)``.
DEFAULT_CLIENT = "kafka-python"
CLIENTS: dict[str, str] = {
    DEFAULT_CLIENT: "pytest_kreplica.scenarios.workload",
    "java": "pytest_kreplica.scenarios.java_client",
    "librdkafka": "pytest_kreplica.scenarios.rdkafka_client",
}
# a workload other than plain on a client other than kafka-python (whose module is the
# workload's own): (client, workload) -> the module that drives it; any other pair is
# refused at collection
CLIENT_WORKLOADS: dict[tuple[str, str], str] = {
    ("java", "txn"): "pytest_kreplica.scenarios.java_txn",
    ("java", "txn_pipeline"): "pytest_kreplica.scenarios.java_pipeline",
}

__all__ = ["CLIENTS", "CLIENT_WORKLOADS", "DEFAULT_CLIENT", "SCENARIOS", "WORKLOADS",
           "client_module", "client_workload_module", "workload_module"]


def workload_module(name: str):
    """The module of the ``workload`` value ``name`` (imported on first use)."""
    import importlib

    return importlib.import_module(WORKLOADS[name])


def client_module(name: str):
    """The module of the ``client`` value ``name`` (imported on first use)."""
    import importlib

    return importlib.import_module(CLIENTS[name])


def client_workload_module(client: str, workload: str):
    """The module that drives ``workload`` on ``client`` (a ``CLIENT_WORKLOADS`` pair)."""
    import importlib

    return importlib.import_module(CLIENT_WORKLOADS[(client, workload)])
