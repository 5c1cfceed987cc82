"""``check(run_dir)``: read a run directory, run the Spark rules, return a Verdict."""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ...errors import CheckError, HistoryError, InputError, KreplicaError
from ...history import EVENTS, POLLS, SEMANTICS, SENDS, TXNS, read_run_json
from ...rundir import REPLICAS_JSON
from ..engine.spark import kept_frames, sized_shuffle, small_input, spark_log, start_spark
from .spark_tables import read_spark
from .tables import (
    Table,
    check_run_dir,
    find_table,
    first_jsonl_problem,
    first_problem,
    parquet_schema_problem,
    read_assignments,
    read_exempting_events,
    table_bytes,
)
from .verdict import DEFAULT_SEMANTICS, EXAMPLES_PER_ANOMALY, Verdict


def resolve_semantics(semantics: str | None, meta: dict[str, Any]) -> str:
    """Argument > run.json > at-least-once."""
    chosen = semantics if semantics is not None else meta.get("semantics")
    if chosen is None:
        return DEFAULT_SEMANTICS
    if chosen not in SEMANTICS:
        raise InputError(f"semantics {chosen!r}: allowed: {', '.join(SEMANTICS)}")
    return chosen


def is_mirrored(run_dir: Path, meta: dict[str, Any]) -> bool:
    """A MirrorMaker run maps its topics in run.json: ``"mirror": {"topics": {"t": "s.t"}}``."""
    mirror = meta.get("mirror")
    if mirror is None:
        return False
    topics = mirror.get("topics") if isinstance(mirror, dict) else None
    if not isinstance(topics, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in topics.items()
    ):
        raise HistoryError(
            f"{run_dir / 'run.json'}: key 'mirror.topics' must map topic names to topic names"
        )
    return True


def check(
    run_dir: str | os.PathLike[str],
    semantics: str | None = None,
    spark_master: str | None = None,
) -> Verdict:
    """Check a run directory's history against shared/HISTORY.md on Spark.

    Raises HistoryError (one line naming the file, and the line where there is one) when the
    directory cannot be read; returns a Verdict otherwise.
    """
    path = check_run_dir(run_dir)
    meta = read_run_json(path, missing_ok=True)
    chosen = resolve_semantics(semantics, meta)
    mirrored = is_mirrored(path, meta)
    sends_table = find_table(path, SENDS)
    polls_table = find_table(path, POLLS)
    for table in (sends_table, polls_table):
        problem = parquet_schema_problem(table) if table.format == "parquet" else None
        if problem:
            raise HistoryError(problem)
    events_table = find_table(path, EVENTS, required=False)
    exempting = read_exempting_events(events_table)
    v2 = is_v2(path, meta)
    # version 2 only: a rebalance exempts just the partitions that changed owner
    assignments = read_assignments(events_table) if v2 else None
    txns_table = find_table(path, TXNS, required=False) if v2 else None
    if txns_table is not None:
        problem = first_problem(txns_table)
        if problem:
            raise HistoryError(problem)

    spark = start_spark(spark_master)
    extra: dict[str, Any] = {}
    size = _input_bytes(sends_table, polls_table, txns_table)
    one_task = small_input(size)
    # the pool is left (its threads joined) before the kept tables are freed
    with (_spark_errors(path), sized_shuffle(spark, size), kept_frames() as kept,
          ThreadPoolExecutor(2, thread_name_prefix="kreplica-txn-rules") as pool):
        from . import findings, rules

        # numbered as read: the examples are read back by these numbers (rules.ROW)
        sends_df = read_spark(spark, sends_table, row=rules.ROW)
        polls_df = read_spark(spark, polls_table, row=rules.ROW)
        if one_task:  # in one partition the joins, windows and aggregations over them start
            # without an exchange (docs/checker.md, "One partition for a small history")
            sends_df, polls_df = sends_df.coalesce(1), polls_df.coalesce(1)
        txn_jobs: list[Future] = []
        if v2:
            from . import txn

            out = txn.outcomes(spark, path, one_task)
            if one_task:  # the three chains below build a dozen joins each over these
                # three tables: kept by Spark, each plan starts from them, not from a file's
                # scan and parse, and a step is analysed in a fraction of the time
                sends_df, polls_df, out = _checkpointed(pool, (sends_df, polls_df, out))
                kept.extend((sends_df, polls_df, out))
            txn_jobs = _start_txn_rules(pool, sends_df, polls_df, out,
                                        pipeline_inputs(path, meta))
            sends_df, polls_df = txn.v1_view(sends_df, polls_df, out)
            extra["history_version"] = txn.HISTORY_VERSION
        frames = rules.build(sends_df, polls_df, exempting, mirrored, assignments,
                             one_task=one_task)
        found = findings.find(frames)  # counts and examples in one pass
        raw = found.counts
        _judge_bad_rows(raw, sends_table, polls_table, extra)
        counts = {k: v for k, v in raw.items() if k not in ("bad_sends", "bad_polls",
                                                            "reused_ids")}
        if raw["reused_ids"]:
            extra["reused_ids"] = raw["reused_ids"]
        examples: dict[str, list] = dict(found.examples)
        if (path / REPLICAS_JSON).exists():
            _locate_missing(spark, path, frames, found, counts, examples, extra)
        for job in txn_jobs:  # their counts and examples (a failure is raised here)
            job_counts, job_examples = job.result()
            counts.update(job_counts)
            examples.update(job_examples)
    return Verdict.from_counts(counts, chosen, examples, extra)


def history_bytes(run_dir: str | os.PathLike[str]) -> int | None:
    """The bytes of a run directory's sends, polls and transactions (what sizes its check),
    or None when they cannot be found (``check`` then says why, in one line)."""
    path = Path(run_dir)
    try:
        return _input_bytes(find_table(path, SENDS), find_table(path, POLLS),
                            find_table(path, TXNS, required=False))
    except (HistoryError, OSError):
        return None


def _input_bytes(*tables) -> int:
    """What sizes a check: its shuffle partitions, one task, the one-off driver's JIT."""
    return sum(table_bytes(t) for t in tables)


def _checkpointed(pool: ThreadPoolExecutor, frames: tuple) -> list:
    """Each frame's ``localCheckpoint``: the first ones in the pool, the last in this thread,
    so their three small jobs run at once (one after another before: a one-off check of a
    small transactional history against a warm Connect server 3.56 → 3.36 s, a warm local
    check 1.98 → 1.89 s; docs/checker.md)."""
    started = [pool.submit(df.localCheckpoint) for df in frames[:-1]]
    last = frames[-1].localCheckpoint()
    return [job.result() for job in started] + [last]


def _start_txn_rules(pool: ThreadPoolExecutor, sends_df, polls_df, out,
                     inputs: list[str] | None) -> list[Future]:
    """The transactional rules (their DataFrames built, then counted) and the cycle search,
    each a chain of small Spark jobs of its own, run beside the version 1 rules: a small
    history's check is mostly the driver building, planning and scheduling one tiny stage
    after another, so the three chains overlap on two cores (docs/checker.md, "A small
    transactional history")."""
    from . import cycles, txn

    def txn_rules():
        return txn.find(txn.build(sends_df, polls_df, out, inputs), EXAMPLES_PER_ANOMALY)

    return [pool.submit(txn_rules),
            pool.submit(cycles.find, sends_df, polls_df, out, EXAMPLES_PER_ANOMALY)]


def pipeline_inputs(run_dir: Path, meta: dict[str, Any]) -> list[str] | None:
    """The topics a read-process-write pipeline reads: run.json ``pipeline.inputs``."""
    pipeline = meta.get("pipeline")
    if pipeline is None:
        return None
    inputs = pipeline.get("inputs") if isinstance(pipeline, dict) else None
    if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
        raise HistoryError(f"{run_dir / 'run.json'}: key 'pipeline.inputs' must be a list of "
                           f"topic names")
    return inputs


def is_v2(run_dir: Path, meta: dict[str, Any]) -> bool:
    """History version 2 (docs/history.md): run.json says so, or a txns table exists."""
    return meta.get("history_version") == 2 or find_table(run_dir, TXNS, required=False) \
        is not None


def _judge_bad_rows(raw: dict[str, int], sends: Table, polls: Table,
                    extra: dict[str, Any]) -> None:
    """Spark counted rows that break the contract: name the first one, or accept a last line
    cut short by a crash (it was left out of every count)."""
    for table, bad in ((sends, raw["bad_sends"]), (polls, raw["bad_polls"])):
        if not bad:
            continue
        if table.format == "json":
            problem, torn = first_jsonl_problem(table)
            if problem is None and torn and bad == 1:
                extra.setdefault("ignored_torn_last_line", []).append(table.path.name)
                continue
        else:
            problem = first_problem(table)
        raise HistoryError(problem or f"{table}: {bad} rows do not match the contract")


def _locate_missing(spark, run_dir: Path, frames, found, counts: dict[str, int],
                    examples: dict[str, list], extra: dict[str, Any]) -> None:
    """Where the replica-log verifier is installed, look the lost and unseen ids up in the
    replicas' logs: ``in_log`` (kept by the broker, missed by the consumer) / ``not_in_log``.
    ``locate_missing(spark, run_dir, missing)`` gets a DataFrame (id, cluster, topic,
    partition, offset, anomaly) and returns ``{"counts": {...}, "examples": {...}}``."""
    if not counts["lost"] + counts["unseen"]:
        counts.update(in_log=0, not_in_log=0)
        return
    try:
        from ..replicas.locate import locate_missing
    except ImportError as exc:
        if exc.name not in (None, "pytest_kreplica.validation.replicas",
                            "pytest_kreplica.validation.replicas.locate"):
            raise
        extra["replica_lookup"] = ("not available "
                                   "(pytest_kreplica.validation.replicas.locate missing)")
        return
    from . import findings

    missing = (findings.missing_ids(frames) if found.missing is None
               else findings.missing_frame(spark, found.missing))
    located = locate_missing(spark, run_dir, missing) or {}
    found_counts = dict(located.get("counts", {}))
    for key in ("in_log", "not_in_log"):
        counts[key] = int(found_counts.pop(key, 0) or 0)
    if found_counts:
        extra["replica_lookup"] = found_counts
    for key, rows in (located.get("examples") or {}).items():
        if rows:
            examples[key] = list(rows)


class _spark_errors:
    """Turn a Spark / py4j failure into one line (no Java traceback reaches the user): a
    ``CheckError``, so a case whose check died is a harness error, never a verdict."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is None or isinstance(exc, KreplicaError) or not isinstance(exc, Exception):
            return False
        if isinstance(exc, OSError):  # a file of the run vanished while it was read
            raise CheckError(f"{self.run_dir}: could not be read to the end: "
                             f"{exc.strerror or exc} ({exc.filename or 'a file'})") from None
        try:
            from py4j.protocol import Py4JError
            from pyspark.errors import PySparkException
        except ImportError:  # pragma: no cover
            return False
        if not isinstance(exc, PySparkException | Py4JError):
            return False
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        # a Spark job that died: the harness', not the run's (the tables were read already)
        raise CheckError(
            f"{self.run_dir}: Spark could not check this run: {first[:300]} (Spark log: "
            f"{spark_log()})"
        ) from None
