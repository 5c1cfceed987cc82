"""pytest plugin entry point (registered under ``pytest11``). Hooks, options and thin
fixtures only; Kafka clients, Spark and cluster backends are imported lazily inside fixtures.

A test function joins the matrix by asking for ``kreplica_case`` and naming its scenario::

    @pytest.mark.kreplica_scenario("replication")
    def test_replication(kreplica_case, kreplica_run):
        kreplica_run(kreplica_case).assert_valid()

Every selected matrix case of that scenario becomes one parametrized test, with markers from
its values and matrix, so ``pytest -m "smoke and compression_gzip"`` selects a subset.
"""

from __future__ import annotations

import importlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..cluster import Cluster, ClusterSpec, create_cluster, reap_orphans
from ..cluster.external.cluster import ExternalCluster
from ..cluster.pool import ClusterPool, cluster_spec, spec_key
from ..errors import HarnessError, InputError, MatrixError
from ..logmodel import pytest_plugin as log_model
from ..matrix import Case, Catalog, Matrix, load_all, static_markers
from ..scenarios import SCENARIOS
from ..scenarios.runner import CaseHooks, RunOptions
from ..validation import warmup
from ..validation.engine import jit
from . import external, failures, hookspecs, outcomes, record, repeat
from .failures import FailurePlugin
from .firstrun import FirstRunPlugin
from .options import KreplicaOptions, add_options, resolve
from .outcomes import expected_finding_marks, note_expected_finding
from .repeats import RepeatSummary
from .suite import ReplicationSuite, SuitePlugin, replica_logs
from .summary import RESULT_PROPERTY, SummaryCollector, encode

KAFKA_PYTHON_WARNING = r"(read|open)_text is deprecated"
_OPTIONS = pytest.StashKey[KreplicaOptions]()
_MATRICES = pytest.StashKey["list[Matrix] | MatrixError"]()
_EXTERNAL = pytest.StashKey["external.ExternalConfig | None"]()
_STORE = pytest.StashKey["Path | None"]()  # the results store (None: none)
_STOPS = pytest.StashKey["repeat.StopBook | None"]()  # until-fail's files (None: off)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
    repeat.add_options(parser)
    failures.add_options(parser)
    external.add_options(parser)
    log_model.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_OPTIONS] = resolve(config)
    jit.prefer("quick")  # a worker's Spark JVM checks a few small histories and exits
    try:
        jit.mode()  # a bad KREPLICA_SPARK_JIT is one line now, not an error in every case
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.addinivalue_line("markers", external.MARKER)
    # kafka-python's protocol loader warns hundreds of times per run about a stdlib API it
    # calls; not the user's to act on, and a project without our ini file would see them all
    config.addinivalue_line("filterwarnings", f"ignore:{KAFKA_PYTHON_WARNING}:DeprecationWarning")
    cluster_file = external.load_cluster(config)
    config.stash[_EXTERNAL] = cluster_file
    if cluster_file is not None:  # cases it cannot run are deselected, each reason said once
        config.pluginmanager.register(external.ExternalPlugin(cluster_file), "kreplica-external")
    config.addinivalue_line(
        "markers", "kreplica_scenario(name): parametrize this test (which must use the "
                   "kreplica_case fixture) with every selected matrix case of scenario NAME")
    config.addinivalue_line(
        "markers", "kreplica_spec(key): the cluster a case needs (cases are ordered by it)")
    for name, help_text in {**static_markers(), **outcomes.MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")
    # a HarnessError ends a test as an error, not a failure
    config.pluginmanager.register(outcomes.HarnessErrors(), "kreplica-harness-errors")
    if not hasattr(config, "workerinput"):  # xdist workers report; the controller prints
        config.pluginmanager.register(SummaryCollector(config), "kreplica-summary")
    _register_results(config)
    # nemesis, soak selection, index.html
    config.pluginmanager.register(FailurePlugin(config), "kreplica-failures")
    # one-time preparation before any case runs
    config.pluginmanager.register(FirstRunPlugin(config), "kreplica-first-run")
    # the log model's marker, --kreplica-replay and fixtures
    config.pluginmanager.register(log_model, "kreplica-log-model")
    # ReplicationSuite subclasses: cases their capabilities cannot run are deselected
    config.pluginmanager.register(SuitePlugin(), "kreplica-suite")


def _register_results(config: pytest.Config) -> None:
    """The results store's writer, until-fail and the repeats summary (plugin.record,
    plugin.repeat); the store and stop files are known now when the output is set, else
    once a worker's basetemp is (``kreplica_shared_dir``)."""
    opts = config.stash[_OPTIONS]
    config.addinivalue_line("markers", f"{repeat.MARKER}(index, count, case): one repeat "
                                       "of a case under --kreplica-repeat")
    if opts.output is not None or opts.results is not None:
        config.stash[_STORE] = record.store_path(opts.results, opts.output,
                                                 opts.output or Path.cwd())
    if opts.output is not None and opts.until_fail:
        config.stash[_STOPS] = repeat.StopBook(
            opts.output / repeat.STOP_DIR / record.run_id_of(config))
    config.pluginmanager.register(
        record.ResultsWriter(config, lambda: config.stash.get(_STORE, None)),
        "kreplica-results")
    config.pluginmanager.register(repeat.UntilFail(lambda: config.stash.get(_STOPS, None)),
                                  "kreplica-until-fail")
    if hasattr(config, "workerinput"):
        return
    config.pluginmanager.register(record.StoreLine(config), "kreplica-store-line")
    if opts.repeat is not None:
        config.pluginmanager.register(RepeatSummary(config), "kreplica-repeats")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(record.WorkerRunId(config), "kreplica-run-id")


def _register_markers(config: pytest.Config, matrices: list[Matrix]) -> None:
    registered = {line.split(":")[0].split("(")[0] for line in config.getini("markers")}
    for matrix in matrices:
        for case in matrix.cases:
            for name in case.markers:
                if name not in registered:
                    config.addinivalue_line("markers", f"{name}: a kreplica matrix marker")
                    registered.add(name)


def catalog(opts: KreplicaOptions) -> Catalog:
    """The matrices this run can name: the shipped ones and the project's directory."""
    return Catalog(opts.matrices_dir, required=opts.matrices_dir_required)


def _matrices(config: pytest.Config) -> list[Matrix]:
    """The selected matrices, loaded once per process; a problem is kept for
    ``pytest_collection_modifyitems`` to report as one line."""
    if _MATRICES not in config.stash:
        opts = config.stash[_OPTIONS]
        defaults = {"kafka_version": opts.kafka_version, "backend": opts.backend}
        known = catalog(opts)
        if not opts.matrices and known.required and not known.has_project():
            # only an error where a scenario test needs cases (pytest_generate_tests)
            config.stash[_MATRICES] = []
            return []
        try:
            matrices = load_all(known.resolve(opts.matrices), defaults, known)
        except MatrixError as exc:
            config.stash[_MATRICES] = exc
            return []
        _register_markers(config, matrices)
        config.stash[_MATRICES] = matrices
    loaded = config.stash[_MATRICES]
    return [] if isinstance(loaded, MatrixError) else loaded


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("kreplica_scenario")
    if marker is None or "kreplica_case" not in metafunc.fixturenames:
        return
    scenario = marker.args[0] if marker.args else marker.kwargs.get("name", "replication")
    opts = metafunc.config.stash[_OPTIONS]
    matrices = _suite_matrices(metafunc)
    if not matrices and not opts.matrices:
        try:
            catalog(opts).check_project()
        except MatrixError as exc:  # one line, no traceback, exit != 0
            pytest.fail(str(exc), pytrace=False)
    params = []
    for matrix in matrices or _matrices(metafunc.config):
        for case in matrix.cases:
            if case.scenario != scenario:
                continue
            marks = [getattr(pytest.mark, name) for name in case.markers]
            marks.append(pytest.mark.kreplica_spec(spec_key(cluster_spec(case))))
            marks.extend(expected_finding_marks(matrix.expected_findings.get(case.case_id)))
            if opts.repeat is None:
                params.append(pytest.param(case, id=case.case_id, marks=marks))
                continue
            for again, mark in repeat.repeats(case, opts.repeat):
                params.append(pytest.param(again, id=again.case_id, marks=[*marks, mark]))
    metafunc.parametrize("kreplica_case", params, indirect=True)


def _suite_matrices(metafunc: pytest.Metafunc) -> list[Matrix]:
    """The matrices a ``ReplicationSuite`` subclass names (``kreplica_matrices``), or none."""
    cls = metafunc.cls
    if not (isinstance(cls, type) and issubclass(cls, ReplicationSuite)) \
            or not cls.kreplica_matrices:
        return []
    opts = metafunc.config.stash[_OPTIONS]
    try:
        known = catalog(opts)
        matrices = load_all(known.resolve(cls.kreplica_matrix_selectors()),
                            {"kafka_version": opts.kafka_version, "backend": opts.backend}, known)
    except MatrixError as exc:
        pytest.fail(f"{cls.__name__}.kreplica_matrices: {exc}", pytrace=False)
    _register_markers(metafunc.config, matrices)
    return matrices


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Validate the selected matrices before anything runs: under xdist the controller
    collects nothing itself, so a worker's error would otherwise surface as a crash."""
    if not hasattr(session.config, "workerinput"):
        _matrices(session.config)
        _stop_on_matrix_error(session.config)


def _stop_on_matrix_error(config: pytest.Config) -> None:
    loaded = config.stash.get(_MATRICES, None)
    if isinstance(loaded, MatrixError):
        raise pytest.UsageError(str(loaded))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    _stop_on_matrix_error(config)
    # cases needing the same cluster run back to back (a worker keeps one cluster alive);
    # sorted() is stable and every xdist worker sees the same input, so the same order
    slots = [i for i, item in enumerate(items) if item.get_closest_marker("kreplica_spec")]
    ordered = sorted((items[i] for i in slots),
                     key=lambda item: item.get_closest_marker("kreplica_spec").args[0])
    for i, item in zip(slots, ordered, strict=True):
        items[i] = item


# ------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def kreplica_options(pytestconfig: pytest.Config) -> KreplicaOptions:
    """The resolved options (CLI > ini > env > default)."""
    return pytestconfig.stash[_OPTIONS]


@pytest.fixture
def kreplica_case(request: pytest.FixtureRequest, kreplica_shared_dir: Path) -> Case:
    """The matrix case this test instance runs (parametrized by ``kreplica_scenario``); a
    repeat of a case that failed already under until-fail is skipped here."""
    if not hasattr(request, "param"):
        pytest.fail("kreplica_case needs @pytest.mark.kreplica_scenario(NAME) on the test")
    repeat.skip_if_stopped(request.node, request.config.stash.get(_STOPS, None))
    return request.param


@pytest.fixture(scope="session")
def kreplica_shared_dir(pytestconfig: pytest.Config, kreplica_options: KreplicaOptions,
                        tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory every process of the session sees (``record.shared_dir``): where the
    default results store and until-fail's files go when no output directory is set."""
    shared = record.shared_dir(kreplica_options.output, tmp_path_factory.getbasetemp(),
                               record.is_worker(pytestconfig))
    stash = pytestconfig.stash
    if _STORE not in stash:
        stash[_STORE] = record.store_path(None, None, shared)
    if _STOPS not in stash and kreplica_options.until_fail:
        stash[_STOPS] = repeat.StopBook(shared / repeat.STOP_DIR
                                        / record.run_id_of(pytestconfig))
    return shared


@pytest.fixture(scope="session")
def kreplica_output(kreplica_options: KreplicaOptions,
                    tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the run directories go: ``--kreplica-output`` or a directory under basetemp."""
    if kreplica_options.output is not None:
        kreplica_options.output.mkdir(parents=True, exist_ok=True)
        return kreplica_options.output
    return tmp_path_factory.mktemp("kreplica", numbered=False)


@pytest.fixture(scope="session")
def kreplica_cluster_factory(pytestconfig: pytest.Config
                             ) -> Callable[[ClusterSpec, Path], Cluster]:
    """``(ClusterSpec, workdir) -> Cluster``; override it to plug in another backend. With
    ``--kreplica-cluster FILE`` the external backend gets that file's cluster."""
    declared = pytestconfig.stash.get(_EXTERNAL, None)
    if declared is None:
        return create_cluster

    def external_cluster(spec: ClusterSpec, workdir: Path) -> Cluster:
        return ExternalCluster(spec, workdir, config=declared)
    return external_cluster


@pytest.fixture(scope="session")
def kreplica_pool(kreplica_cluster_factory: Callable[[ClusterSpec, Path], Cluster],
                  kreplica_options: KreplicaOptions,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterPool]:
    """Clusters shared by this session's (= this xdist worker's) cases; all closed at the
    end. Orphans of an earlier, killed session are reaped first. With ``--kreplica-output``
    the clusters' directories (broker logs included) are kept beside the run directories."""
    reap_orphans()
    if kreplica_options.output is not None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        workdir = kreplica_options.output / "clusters" / worker
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        workdir = tmp_path_factory.mktemp("kreplica-clusters")
    pool = ClusterPool(workdir, kreplica_cluster_factory)
    try:
        yield pool
    finally:
        pool.close_all()


@pytest.fixture
def kreplica_record(request: pytest.FixtureRequest) -> Callable[[dict[str, Any]], None]:
    """Attach a case's result row to this test's report (it reaches the xdist controller
    and the summary table)."""

    def record(row: dict[str, Any]) -> None:
        request.node.user_properties.append((RESULT_PROPERTY, encode(row)))

    return record


@pytest.fixture
def kreplica_run(request: pytest.FixtureRequest, kreplica_options, kreplica_pool,
                 kreplica_output: Path, kreplica_record):
    """``kreplica_run(case) -> CaseResult``: run the case's scenario (``SCENARIOS``: the
    module's ``run``, with every ``pytest_kreplica_case_hooks`` addition) into a fresh run
    directory, and record the result, or an ``error`` row naming the run directory, for the
    summary."""

    def run(case: Case):
        run_dir = kreplica_output / case.case_id
        if run_dir.exists():  # histories are append-only: never mix two runs
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        started = time.monotonic()
        replica_check = kreplica_options.replica_check and replica_logs(request.cls)
        # Spark starts and warms up while the case starts its cluster and runs its workload
        warmup.start(kreplica_options.spark_master, verify=replica_check)
        row = {"case_id": case.case_id, "verdict": "error", "run_dir": str(run_dir),
               "seed": case.seed, "start_time": time.time()}
        try:
            hooks = CaseHooks()
            request.config.hook.pytest_kreplica_case_hooks(config=request.config, case=case,
                                                           hooks=hooks)
            scenario = importlib.import_module(SCENARIOS[case.scenario])
            result = scenario.run(case, kreplica_pool, run_dir, RunOptions(
                spark_master=kreplica_options.spark_master,
                replica_check=replica_check,
                hooks=hooks))
            row = {"seed": case.seed, "start_time": row["start_time"], **result.summary()}
            cut = getattr(result, "extra", {}).get("interrupted")  # a CaseResult's
            if cut:  # a soak cut short: checked and reported; no case after it runs
                request.session.shouldstop = (f"{case.case_id} cut short by {cut['signal']} "
                                              f"after {cut['after_s']} s; {run_dir}")
            finding = outcomes.expected_finding(request.node)
            if finding is not None:  # verdict.json (and index.html) say it is expected
                note_expected_finding(result.run_dir, finding)
            # per-phase timings as their own properties: they land in the JUnit XML
            for name, seconds in result.phases.items():
                request.node.user_properties.append((f"kreplica_phase_{name}", seconds))
            for key in ("election_max_s", "seed"):
                value = row.get(key, getattr(case, key, None))
                if value is not None:
                    request.node.user_properties.append((f"kreplica_{key}", value))
            return result
        except HarnessError as exc:  # an error, not a failure (plugin.outcomes)
            row["verdict"] = "harness"
            row["harness"] = str(exc)
            raise
        finally:
            row.setdefault("duration_s", time.monotonic() - started)
            kreplica_record(row)

    return run
