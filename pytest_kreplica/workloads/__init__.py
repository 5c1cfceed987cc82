"""Workloads: what produces and reads during a case, one module per workload and client,
each exposing a ``WORKLOAD`` (``protocol.Workload``, the one contract the runner relies on).

The registries below name modules as strings so that the matrix and the plugin can read the
vocabulary without importing Kafka clients, Spark or Docker.
"""

from __future__ import annotations

# every module named below exposes ``WORKLOAD`` (``protocol.Workload``)
# the ``workload:`` dimension (on kafka-python): what produces and reads
WORKLOADS: dict[str, str] = {
    "plain": "pytest_kreplica.workloads.plain",
    "txn": "pytest_kreplica.workloads.txn",
    "txn_pipeline": "pytest_kreplica.workloads.txn_pipeline",
}

# the ``client:`` dimension: which Kafka client drives the plain workload
DEFAULT_CLIENT = "kafka-python"
CLIENTS: dict[str, str] = {
    DEFAULT_CLIENT: "pytest_kreplica.workloads.plain",
    "java": "pytest_kreplica.workloads.java_client",
    "librdkafka": "pytest_kreplica.workloads.rdkafka_client",
}
# a workload other than plain on a client other than kafka-python (whose module is the
# workload's own): (client, workload) -> the module that drives it; any other pair is
# refused at collection
CLIENT_WORKLOADS: dict[tuple[str, str], str] = {
    ("java", "txn"): "pytest_kreplica.workloads.java_txn",
    ("java", "txn_pipeline"): "pytest_kreplica.workloads.java_pipeline",
}

__all__ = ["CLIENTS", "CLIENT_WORKLOADS", "DEFAULT_CLIENT", "WORKLOADS", "client_module",
           "client_workload_module", "workload_module"]


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
