"""pytest-kreplica: Kafka replication system tests as a pytest matrix.

The public API is ``__all__`` below (listed in docs/api.md; a unit test keeps the two equal).
Every name loads on first use (PEP 562 ``__getattr__``): the pytest plugin imports this
package at every pytest start, so ``import pytest_kreplica`` imports none of its modules and
nothing heavy (pyspark, kafka, docker, matplotlib).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # errors (the tree is drawn in errors.py)
    "KreplicaError": "pytest_kreplica.errors",
    "InputError": "pytest_kreplica.errors",
    "MatrixError": "pytest_kreplica.errors",
    "HistoryError": "pytest_kreplica.errors",
    "EnvironmentProblem": "pytest_kreplica.errors",
    "CheckError": "pytest_kreplica.errors",
    "ClusterError": "pytest_kreplica.errors",
    "NodeError": "pytest_kreplica.errors",
    # matrices and cases
    "Case": "pytest_kreplica.matrix",
    "Matrix": "pytest_kreplica.matrix",
    "DIMENSIONS": "pytest_kreplica.matrix",
    "load_matrix": "pytest_kreplica.matrix",
    "parse_matrix": "pytest_kreplica.matrix",
    # clusters
    "backend_names": "pytest_kreplica.cluster",
    "Cluster": "pytest_kreplica.cluster",
    "ClusterSpec": "pytest_kreplica.cluster",
    "TopicSpec": "pytest_kreplica.cluster",
    "create_cluster": "pytest_kreplica.cluster",
    # running a case
    "SCENARIOS": "pytest_kreplica.scenarios",
    "run_case": "pytest_kreplica.scenarios.runner",
    "CaseHooks": "pytest_kreplica.scenarios.runner",
    "CaseContext": "pytest_kreplica.scenarios.runner",
    "CaseResult": "pytest_kreplica.scenarios.result",
    # your broker under the matrix (docs/authors-guide.md)
    "ReplicationSuite": "pytest_kreplica.plugin.suite",
    "Capabilities": "pytest_kreplica.cluster.capabilities",
    # the run directory and its checks
    "SEMANTICS": "pytest_kreplica.history",
    "RunWriter": "pytest_kreplica.history",
    "check": "pytest_kreplica.validation.checker",
    "Verdict": "pytest_kreplica.validation.checker",
    "verify_logs": "pytest_kreplica.validation.replicas.verify",
    "write_report": "pytest_kreplica.report",
    "write_index": "pytest_kreplica.report",
}

__all__ = [  # the curated public names (docs/api.md); each is a key of _EXPORTS
    "__version__", "KreplicaError", "InputError", "MatrixError", "HistoryError",
    "EnvironmentProblem", "CheckError", "ClusterError", "NodeError", "Case", "Matrix",
    "DIMENSIONS", "load_matrix", "parse_matrix", "backend_names", "Cluster", "ClusterSpec",
    "TopicSpec", "create_cluster", "SCENARIOS", "run_case", "CaseHooks", "CaseContext",
    "CaseResult", "ReplicationSuite", "Capabilities", "SEMANTICS", "RunWriter", "check",
    "Verdict", "verify_logs", "write_report", "write_index",
]

if TYPE_CHECKING:
    from .cluster import Cluster, ClusterSpec, TopicSpec, backend_names, create_cluster
    from .cluster.capabilities import Capabilities
    from .errors import (
        CheckError,
        ClusterError,
        EnvironmentProblem,
        HistoryError,
        InputError,
        KreplicaError,
        MatrixError,
        NodeError,
    )
    from .history import SEMANTICS, RunWriter
    from .matrix import DIMENSIONS, Case, Matrix, load_matrix, parse_matrix
    from .plugin.suite import ReplicationSuite
    from .report import write_index, write_report
    from .scenarios import SCENARIOS
    from .scenarios.result import CaseResult
    from .scenarios.runner import CaseContext, CaseHooks, run_case
    from .validation.checker import Verdict, check
    from .validation.replicas.verify import verify_logs


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
