"""Shared helpers for the checker tests: a small history builder and one Spark session for
the whole test session (a Spark check costs seconds; a session start costs more)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from pytest_kreplica.history import RunWriter, write_run_json


class History:
    """Writes a run directory through the real RunWriter with a fake, strictly increasing
    clock, so a test reads like the story it plants."""

    def __init__(self, run_dir: Path, topic: str = "t", partition: int = 0, roll=None):
        self.run_dir = run_dir
        if roll is None:
            self.writer = RunWriter(run_dir)
        else:  # sends and polls rolled into Parquet parts (docs/history.md)
            from pytest_kreplica.history import POLLS, SENDS
            from pytest_kreplica.validation.checker.arrow import arrow_schema

            self.writer = RunWriter(run_dir, roll=roll,
                                    schemas={n: arrow_schema(n) for n in (SENDS, POLLS)})
        self.clock = itertools.count(1000, 10)
        self.polls_made: dict[int, int] = {}
        self.topic, self.partition = topic, partition

    def send(self, id, offset=None, status="ok", process=0, topic=None, partition=None,
             cluster=None):
        t0 = next(self.clock)
        self.writer.send(process=process, topic=topic or self.topic,
                         partition=self.partition if partition is None else partition, id=id,
                         offset=offset, status=status, invoke_ns=t0,
                         complete_ns=next(self.clock), cluster=cluster)
        return self

    def acked(self, count, start=0, prefix="m", **kw):
        """``count`` acknowledged sends m<start>.. at offsets start.."""
        for i in range(start, start + count):
            self.send(f"{prefix}{i}", i, **kw)
        return self

    def poll(self, process, records, topic=None, partition=None, cluster=None, index=True):
        """One poll call returning ``records``: offsets (id = m<offset>) or (offset, id)."""
        n = self.polls_made.get(process, 0)
        self.polls_made[process] = n + 1
        t = next(self.clock)
        for i, rec in enumerate(records):
            offset, rid = rec if isinstance(rec, tuple) else (rec, f"m{rec}")
            self.writer.poll(process=process, poll=n, topic=topic or self.topic,
                             partition=self.partition if partition is None else partition,
                             offset=offset, id=rid, time_ns=t, index=i if index else None,
                             cluster=cluster)
        return self

    def polls(self, process, offsets, per_call=3, **kw):
        offsets = list(offsets)
        for i in range(0, len(offsets), per_call):
            self.poll(process, offsets[i:i + per_call], **kw)
        return self

    def event(self, kind, process=None, node=None):
        self.writer.event(kind, process=process, node=node, time_ns=next(self.clock))
        return self

    def meta(self, **meta):
        write_run_json(self.run_dir, meta)
        return self

    def close(self) -> Path:
        self.writer.close()
        return self.run_dir


def lost_in_and_out_of_the_log(h: History) -> Path:
    """A history that lost m3 (read past; the broker kept it) and m6 (nothing read past it;
    it never reached the log), with a one-replica snapshot of t-0 holding m0..m5: its check
    looks both up in the replica's log."""
    from pytest_kreplica.validation.replicas.synth import (
        build_batch,
        message_values,
        write_partition,
    )

    h.acked(7).polls(1, [0, 1, 2]).event("rebalance", process=1).polls(1, [4, 5])
    run = h.close()
    ids = [f"m{i}" for i in range(6)]
    write_partition(run / "replicas" / "1" / "t-0",
                    [build_batch(0, message_values(ids[:3])),
                     build_batch(3, message_values(ids[3:]))], per_segment=2)
    (run / "replicas.json").write_text(json.dumps({
        "nodes": {"1": "replicas/1"},
        "partitions": [{"topic": "t", "partition": 0, "leader": 1, "replicas": [1],
                        "isr": [1], "high_watermark": 6}],
        "at_rest": True}))
    return run


@pytest.fixture
def history(tmp_path):
    made = []

    def make(name="run", **kw) -> History:
        h = History(tmp_path / name, **kw)
        made.append(h)
        return h

    yield make
    for h in made:
        h.writer.close()


@pytest.fixture(scope="session")
def spark_session():
    from pytest_kreplica.validation.engine.spark import get_spark, stop_spark

    session = get_spark()
    yield session
    stop_spark()


@pytest.fixture(params=["spark", "baseline"])
def checker(request):
    """Both implementations of the rules: the Spark checker and the plain-Python baseline."""
    if request.param == "spark":
        request.getfixturevalue("spark_session")
        from pytest_kreplica.validation.checker import check

        return check
    from pytest_kreplica.validation.checker.baseline import check_baseline

    return lambda run_dir, semantics=None: check_baseline(run_dir, semantics)
