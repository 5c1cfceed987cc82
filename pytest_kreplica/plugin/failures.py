"""pytest side of the failure scenarios (C.2-C.5, C.8): puts a nemesis into every case whose
``failure`` is not ``none``, adds the election time to the matrix summary, writes the run's
index.html, keeps soak cases out of ordinary runs, and prints progress of long cases.

Registered by ``plugin.pytest_configure``. The nemesis and ``report`` are light at import
(``report`` loads matplotlib and pyarrow on first use), so they are imported here at the top.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..cluster.sizing import SMALL_REPLICAS, case_replicas, scaled_wait
from ..errors import ClusterError
from ..faults import (
    ELECTION_TIMEOUT_S,
    NONE,
    RANDOM,
    RANDOM_FAILURES,
    RECOVERY_TIMEOUT_S,
    Component,
    FaultPlan,
    Nemesis,
    coordinator_resolvers,
    scenario_checks,
)
from ..faults.registry import parts_of
from ..report import write_index
from ..waits import wait_until
from ..workloads.choice import workload_of

if TYPE_CHECKING:
    from ..matrix import Case
    from ..scenarios.runner import CaseContext, CaseHooks

Say = Callable[["CaseContext", str], None]

SOAK_MARKER = "soak"
ASYNC_FAULT_RATE = 1000.0  # sends/s of an async producer while faults run: keeps soaks small
PROGRESS_EVERY_S = 10.0
SOAK_PROGRESS_EVERY_S = 60.0  # a duration-bounded case runs for hours: one line a minute
# how long a produce-phase nemesis waits for the workload's first send (a client JVM starting
# on a loaded machine) before its plan's first quiet time starts; then it strikes anyway
FIRST_SEND_WAIT_S = 30.0
ENV_DURATION = "KREPLICA_DURATION"
MIRROR_COMPONENTS = ("mirror-maker",)  # what a mirror case's random target may draw besides nodes


def fault_plan(case: Case, duration: float | None = None) -> FaultPlan:
    """The case's seeded plan; in a two-cluster (mirror) case whose failures all strike a
    process (clean / hard / soft, or random ones), a ``random`` target draws MirrorMaker 2
    too, as the plan's C.8 asks."""
    signals = all(p == RANDOM or p in RANDOM_FAILURES for p in parts_of(case.failure))
    mirrored = case.scenario == "mirror" and signals
    return FaultPlan(seed=case.seed, failure=case.failure, target=case.target,
                     failures=case.failures, downtime_s=case.downtime,
                     duration_s=duration if duration is not None else case.duration,
                     component_choices=MIRROR_COMPONENTS if mirrored else ())


class FailurePlugin:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.duration = _duration_override(config)

    # -- cases -----------------------------------------------------------------------
    def pytest_kreplica_case_hooks(self, config: pytest.Config, case: Case,
                                   hooks: CaseHooks) -> None:
        if case.failure == NONE:
            return
        duration = case.duration  # only duration-bounded (soak) cases take the override
        if duration is not None and self.duration is not None:
            duration = self.duration
        add_nemesis(case, hooks, say=self._progress_sink(case), duration=duration)

    def _progress_sink(self, case: Case) -> Say:
        """Progress goes to the case's progress.log, and to the terminal when this process
        owns it (not an xdist worker, whose output pytest does not show live)."""
        reporter = None
        if not hasattr(self.config, "workerinput"):
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        lock = threading.Lock()

        def say(ctx: CaseContext, message: str) -> None:
            line = f"[{case.case_id}] {message}"
            with lock:
                with open(ctx.run_dir / "progress.log", "a", encoding="utf-8") as out:
                    out.write(f"{time.strftime('%H:%M:%S')} {message}\n")
                if reporter is not None:
                    reporter.write_line(line)

        return say

    # -- selection ------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Soak cases run only when asked for (``-m soak`` or ``--kreplica-matrix
        production``): a plain ``pytest tests/system`` must never start an hours-long run."""
        markexpr = config.getoption("markexpr", "") or ""
        matrices = getattr(config.option, "kreplica_matrix", None) or []
        if SOAK_MARKER in markexpr or any("production" in str(m) for m in matrices):
            return
        keep, drop = [], []
        for item in items:
            (drop if item.get_closest_marker(SOAK_MARKER) else keep).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    # -- summary ---------------------------------------------------------------------------
    def pytest_kreplica_summary(self, config: pytest.Config, rows: list[dict[str, Any]],
                                terminalreporter: Any) -> None:
        dirs = [Path(r["run_dir"]) for r in rows if r.get("run_dir")]
        if not dirs:
            return
        root = Path(os.path.commonpath([str(d.parent) for d in dirs]))
        try:
            index = write_index(root)
        except Exception as exc:  # the index is a convenience; never fail the run on it
            terminalreporter.write_line(f"kreplica: index.html not written: {exc!r}")
            return
        if index is not None:
            terminalreporter.write_line(f"kreplica report index: {index}")


def _await_first_send(ctx: CaseContext, say: Say) -> None:
    """Until the workload has sent its first record (bounded), so a fault strikes while
    the client works, not while its process is still starting."""
    stats = ctx.stats
    if stats is None:
        return
    try:
        wait_until(lambda: stats.sent > 0 or ctx.stop.is_set(), FIRST_SEND_WAIT_S,
                   "the workload's first send before the first fault",
                   lambda: f"{stats.sent} sent")
    except ClusterError as exc:
        say(ctx, f"{exc}; the nemesis starts anyway")


def add_nemesis(case: Case, hooks: CaseHooks, *, say: Say | None = None,
                duration: float | None = None,
                components: Callable[[CaseContext], dict[str, Component]] | None = None,
                recovery_timeout: float | None = None, produce_rate: float | None = None
                ) -> None:
    """Put a nemesis for ``case`` into ``hooks`` (a ``runner.CaseHooks``): it runs in the
    produce phase (or the consume phase, ``fault_timing: consume``) against ``ctx.cluster``,
    the producer keeps sending until its faults are done, and its records, elections and
    scenario checks go into the case's verdict.json through ``ctx.extra``.

    Component targets (MirrorMaker 2) come from ``ctx.components``, which the scenario that
    owns the component fills once it runs; a caller outside the plugin may pass
    ``components`` instead: called with the case context, it returns ``{target: Component}``;
    ``recovery_timeout`` bounds each restore, ``produce_rate`` caps the producer while
    faults run (default: ``ASYNC_FAULT_RATE`` for an async producer)."""
    done = threading.Event()
    say = say or (lambda ctx, message: None)
    if duration is None:
        duration = case.duration
    timeouts = {} if recovery_timeout is None else {"recovery_timeout": recovery_timeout}
    replicas = case_replicas(case)
    if replicas > SMALL_REPLICAS:  # the production shape: restarts recover thousands of logs
        timeouts = {"election_timeout": scaled_wait(ELECTION_TIMEOUT_S, replicas),
                    "recovery_timeout": max(recovery_timeout or 0.0,
                                            scaled_wait(RECOVERY_TIMEOUT_S, replicas))}

    def nemesis(ctx: CaseContext) -> None:
        plan = fault_plan(case, duration)
        partitions = [(t, p) for t in ctx.topics for p in range(case.partitions)]
        keys = workload_of(case).coordinator_keys(ctx.topics)
        nem = Nemesis(ctx.cluster, ctx.writer, plan, partitions,
                      progress=lambda msg: say(ctx, msg),
                      components=components(ctx) if components is not None else ctx.components,
                      roles=coordinator_resolvers(ctx.cluster, keys) if keys else None,
                      **timeouts)
        ctx.extra["fault_plan"] = plan.to_dict()
        ticker = _Ticker(ctx, nem, say, SOAK_PROGRESS_EVERY_S if case.duration is not None
                         else PROGRESS_EVERY_S)
        try:
            if case.fault_timing != "consume":
                _await_first_send(ctx, say)
            nem.run(stop=ctx.stop)
        finally:
            done.set()
            ticker.stop()
            ctx.extra["faults"] = [r.to_dict() for r in nem.records]  # with election_s
            ctx.extra["checks"] = scenario_checks(
                nem.records, unclean_leader_election=case.unclean_leader_election)

    nemesis.__name__ = f"nemesis({case.failure} {case.target})"
    if case.fault_timing == "consume":
        hooks.during_consume.append(nemesis)
    else:
        hooks.during_produce.append(nemesis)
        hooks.keep_producing.append(lambda: not done.is_set())
        if produce_rate is not None:
            hooks.produce_rate = produce_rate
        elif case.producer_mode == "async" and hooks.produce_rate is None:
            hooks.produce_rate = ASYNC_FAULT_RATE


class _Ticker:
    """Every ``every_s``: sent / acked / consumed, the faults struck and the next one."""

    def __init__(self, ctx: CaseContext, nem: Nemesis, say: Say, every_s: float):
        self._stop, self._every_s = threading.Event(), every_s
        self._thread = threading.Thread(target=self._loop, args=(ctx, nem, say), daemon=True,
                                        name="kreplica-progress")
        self._thread.start()

    def _loop(self, ctx: CaseContext, nem: Nemesis, say: Say) -> None:
        while not self._stop.wait(self._every_s):
            stats, consumer = ctx.stats, ctx.consumer
            sent, acked = (stats.sent, stats.ok) if stats is not None else ("?", "?")
            consumed = consumer.polled if consumer is not None else "?"
            if nem.current_fault:
                faults = f"fault in progress: {nem.current_fault}"
            else:
                faults = f"next fault: {nem.next_fault or 'none'}"
            say(ctx, f"sent {sent}, acked {acked}, consumed {consumed}; "
                     f"{len(nem.records)} fault(s) struck; {faults}")

    def stop(self) -> None:
        self._stop.set()


def _duration_override(config: pytest.Config) -> float | None:
    """``--kreplica-duration`` (or env ``KREPLICA_DURATION``) overrides the ``duration`` of
    every soak case: the tox ``soak`` env passes the length of the run this way."""
    value = getattr(config.option, "kreplica_duration", None)
    if value is None:
        value = os.environ.get(ENV_DURATION)
    if value in (None, ""):
        return None
    try:
        seconds = float(value)
        if seconds <= 0:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(f"--kreplica-duration / {ENV_DURATION}: bad value {value!r}; "
                                f"allowed: a number of seconds > 0") from None
    return seconds


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("kreplica")
    group.addoption("--kreplica-duration", dest="kreplica_duration", default=None,
                    help="seconds a soak case (matrix production, marker soak) produces and "
                         f"injects faults; overrides its duration (env {ENV_DURATION})")
