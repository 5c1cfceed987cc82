"""``ReplicationSuite``: the matrix as a base class that a broker's authors subclass.

In the manner of Flink's connector test framework (a suite base class that already holds the
tests; each system plugs in its environment), a subclass gets every ``replication`` case of
the matrices, with the same markers, run by the same fixtures (``kreplica_run``: the one phase
runner), against the cluster its ``kreplica_environment`` fixture provides::

    import pytest
    import pytest_kreplica as kreplica

    class TestMyBroker(kreplica.ReplicationSuite):
        kreplica_capabilities = kreplica.Capabilities(failures=("hard",), brokers=(3,))

        @pytest.fixture(scope="class")
        def kreplica_environment(self):
            yield "mycluster.yaml"   # or an ExternalConfig, or a (spec, workdir) -> Cluster

Cases the declared capabilities cannot run are deselected at collection, each reason printed
once (``SuitePlugin``). docs/authors-guide.md walks through it.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ..cluster.capabilities import Capabilities
from ..cluster.external.cluster import ExternalCluster
from ..cluster.external.config import ExternalConfig, load
from ..cluster.pool import ClusterPool
from ..errors import InputError
from ..matrix import Case
from .external import cluster_file

ENVIRONMENT_HELP = ("a ReplicationSuite subclass provides its cluster through the class-scoped "
                    "fixture kreplica_environment (yield a cluster YAML path, an ExternalConfig "
                    "or a (spec, workdir) -> Cluster factory), the class attribute "
                    "kreplica_cluster_file, or --kreplica-cluster FILE")


def as_factory(environment: Any) -> Callable[..., Any]:
    """What ``kreplica_environment`` yielded, as a ``(ClusterSpec, workdir) -> Cluster``."""
    if isinstance(environment, str | Path):
        environment = load(environment)
    if isinstance(environment, ExternalConfig):
        declared = environment

        def external(spec: Any, workdir: Path) -> Any:
            return ExternalCluster(spec, workdir, config=declared)
        return external
    if callable(environment):
        return environment
    raise InputError(f"kreplica_environment yielded {environment!r}; {ENVIRONMENT_HELP}")


class ReplicationSuite:
    """Subclass it (its name must match pytest's ``Test*``) to run the matrix against your
    cluster. Class attributes, all optional:

    - ``kreplica_capabilities``: what the environment offers (``Capabilities``); cases it
      cannot run are deselected at collection with one line saying why.
    - ``kreplica_cluster_file``: a cluster YAML (docs/external.md), relative to the test
      module; its capabilities replace ``kreplica_capabilities``.
    - ``kreplica_matrices``: matrix names (the project's ``kreplica_matrices_dir``, then the
      shipped matrices) or paths relative to the test module; default: the session's
      selection (``--kreplica-matrix``, else the project's matrices or every shipped one).
    """

    kreplica_capabilities: ClassVar[Capabilities] = Capabilities()
    kreplica_cluster_file: ClassVar[str | None] = None
    kreplica_matrices: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def kreplica_module_dir(cls) -> Path:
        return Path(inspect.getfile(cls)).resolve().parent

    @classmethod
    def kreplica_declared(cls) -> Capabilities:
        """The capabilities cases are judged against (the cluster file's when there is one)."""
        if cls.kreplica_cluster_file:
            return load(cls.kreplica_module_dir() / cls.kreplica_cluster_file).capabilities
        caps = cls.kreplica_capabilities
        if caps.where == Capabilities.where:
            caps = replace(caps, where=cls.__name__)
        return caps

    @classmethod
    def kreplica_matrix_selectors(cls) -> list[str]:
        """``kreplica_matrices`` with paths made absolute against the test module."""
        here = cls.kreplica_module_dir()
        return [str(here / m) if m.endswith((".yaml", ".yml")) else m
                for m in cls.kreplica_matrices]

    @pytest.fixture(scope="class")
    def kreplica_environment(self, pytestconfig: pytest.Config) -> Any:
        """Override this: yield what reaches your cluster (see ``as_factory``)."""
        if self.kreplica_cluster_file:
            return self.kreplica_module_dir() / self.kreplica_cluster_file
        declared = cluster_file(pytestconfig)
        if declared is None:
            pytest.fail(f"{type(self).__name__}: no environment; {ENVIRONMENT_HELP}",
                        pytrace=False)
        return declared

    @pytest.fixture(scope="class")
    def kreplica_output(self, kreplica_output: Path) -> Path:
        """Run directories under the session's output, in a folder per suite class (two
        classes may run the same case ids)."""
        path = kreplica_output / type(self).__name__
        path.mkdir(parents=True, exist_ok=True)
        return path

    @pytest.fixture(scope="class")
    def kreplica_pool(self, kreplica_environment: Any, kreplica_output: Path
                      ) -> Iterator[ClusterPool]:
        """The clusters of this class's cases, from its environment; closed after the class
        (an external cluster is only forgotten, never stopped)."""
        try:
            factory = as_factory(kreplica_environment)
        except InputError as exc:
            pytest.fail(str(exc), pytrace=False)
        pool = ClusterPool(kreplica_output / "clusters", factory)
        try:
            yield pool
        finally:
            pool.close_all()

    @pytest.mark.kreplica_scenario("replication")
    def test_replication(self, kreplica_case: Any, kreplica_run: Any) -> None:
        """C.1–C.5 and every fault of the matrix: the history valid under the case's
        semantics, every replica's log the same (or a loss explained by its evidence)."""
        kreplica_run(kreplica_case).assert_valid()


def suite_class(item: pytest.Item) -> type[ReplicationSuite] | None:
    cls = getattr(item, "cls", None)
    return cls if isinstance(cls, type) and issubclass(cls, ReplicationSuite) else None


def replica_logs(cls: type | None) -> bool:
    """Whether a test of ``cls`` may compare replica logs: False for a suite class whose
    environment has no readable log directories (``Capabilities.replica_logs``)."""
    if not (isinstance(cls, type) and issubclass(cls, ReplicationSuite)):
        return True
    return cls.kreplica_declared().replica_logs


class SuitePlugin:
    """Deselects the suite cases a class's capabilities cannot run, each reason said once."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        keep, drop, why = [], [], Counter()
        declared: dict[type, Capabilities] = {}
        for item in items:
            cls = suite_class(item)
            case = getattr(item, "callspec", None) and item.callspec.params.get("kreplica_case")
            reason = None
            if cls is not None and isinstance(case, Case):
                if cls not in declared:
                    try:
                        declared[cls] = cls.kreplica_declared()
                    except InputError as exc:
                        raise pytest.UsageError(str(exc)) from None
                reason = declared[cls].lacks(case)
            (keep if reason is None else drop).append(item)
            if reason is not None:
                why[(cls.__name__, reason)] += 1
        if not drop:
            return
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        for (name, reason), count in why.items():
            if reporter is not None:
                reporter.write_line(f"kreplica: deselected {count} case(s) of {name}: {reason}")
