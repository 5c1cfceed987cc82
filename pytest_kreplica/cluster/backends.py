"""Which cluster backends exist: name -> "module:Class", imported only when a cluster is made.

To add a backend: one module with a ``Cluster`` subclass whose constructor takes
``(spec, workdir)``, plus one line in ``BACKENDS`` (or, from another package, an entry point
in the ``kreplica.backends`` group naming ``module:Class``). The matrix's ``backend`` values
and ``--kreplica-backend`` read ``backend_names()``, so the new name is accepted everywhere.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from pathlib import Path

from ..errors import InputError
from .base import Cluster, ClusterSpec

ENTRY_POINT_GROUP = "kreplica.backends"

BACKENDS: dict[str, str] = {
    "process": "pytest_kreplica.cluster.process.cluster:ProcessCluster",
    "docker": "pytest_kreplica.cluster.docker.cluster:DockerCluster",
    "external": "pytest_kreplica.cluster.external.cluster:ExternalCluster",
}


def backends() -> dict[str, str]:
    """The built-in backends and those other packages declare as entry points (a built-in
    name wins: a plugin cannot replace ``process``)."""
    found = dict(BACKENDS)
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry.name, entry.value)
    return found


def backend_names() -> tuple[str, ...]:
    """The allowed values of the ``backend`` dimension and ``--kreplica-backend``."""
    return tuple(backends())


def backend_class(name: str) -> type[Cluster]:
    """The class behind backend ``name`` (its module is imported now, not before)."""
    table = backends()
    if name not in table:
        raise InputError(f"backend {name!r} is unknown; allowed: {', '.join(table)}")
    module, _, attr = table[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def create_cluster(spec: ClusterSpec, workdir: Path) -> Cluster:
    """Build (not start) a cluster of ``spec.backend`` whose files live under ``workdir``."""
    return backend_class(spec.backend)(spec, workdir)
