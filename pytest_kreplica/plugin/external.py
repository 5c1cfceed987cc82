"""``--kreplica-cluster FILE``: every case runs against a cluster the user started (backend
``external``); cases needing what the file does not offer are deselected, each reason said
once, so a green run never hides a case that could not have run there."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from ..cluster.external.config import ExternalConfig, load
from ..errors import InputError
from ..matrix import Case

HELP_CLUSTER = ("YAML file describing a running cluster and its fault commands: every case "
                "runs against it (backend external; env KREPLICA_CLUSTER)")
ENV = "KREPLICA_CLUSTER"
MARKER = "external: drives a cluster started out of band through the external backend"


def add_options(parser: pytest.Parser) -> None:
    parser.getgroup("kreplica").addoption("--kreplica-cluster", default=None, metavar="FILE",
                                          help=HELP_CLUSTER)


def cluster_file(config: pytest.Config) -> Path | None:
    value = config.getoption("kreplica_cluster", None) or os.environ.get(ENV)
    return None if not value else (Path.cwd() / str(value)).resolve()


def load_cluster(config: pytest.Config) -> ExternalConfig | None:
    """The validated cluster file, or None; bad input is one ``UsageError`` line."""
    path = cluster_file(config)
    if path is None:
        return None
    try:
        return load(path)
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None


class ExternalPlugin:
    """Deselects the cases the external cluster cannot run (registered only with a file)."""

    def __init__(self, cluster: ExternalConfig):
        self.cluster = cluster

    def reason(self, item: pytest.Item) -> str | None:
        case = getattr(item, "callspec", None) and item.callspec.params.get("kreplica_case")
        if not isinstance(case, Case):  # no case, or an empty parametrization's placeholder
            return None
        if case.backend != "external":
            return (f"its matrix pins backend {case.backend}; --kreplica-cluster runs "
                    "backend external only")
        return self.cluster.capabilities.lacks(case)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        keep, drop, why = [], [], Counter()
        for item in items:
            reason = self.reason(item)
            if reason is None:
                keep.append(item)
            else:
                drop.append(item)
                why[reason] += 1
        if not drop:
            return
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        for reason, count in why.items():
            line = f"kreplica: deselected {count} case(s): {reason}"
            if reporter is not None:
                reporter.write_line(line)
