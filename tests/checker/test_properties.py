"""Property tests: generated clean histories are valid; k planted anomalies of one kind are
found exactly k times. Many examples on the plain-Python baseline, one per anomaly kind on
Spark (two Spark checks of about ten seconds each), where the Spark verdict must also equal
the baseline's: the baseline's examples explore the histories, the Spark ones prove the
engine agrees on them."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_kreplica.validation.checker import ANOMALIES
from pytest_kreplica.validation.checker.baseline import check_baseline

from .generate import KINDS, clean_histories, plant

QUICK = settings(max_examples=150, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])
SPARK = settings(max_examples=1, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


def nonzero(verdict):
    return {name: verdict.counts[name] for name in ANOMALIES if verdict.counts[name]}


@contextmanager
def written(gen) -> Iterator[Path]:
    """The history as a run directory, removed afterwards (Hypothesis runs many)."""
    root = Path(tempfile.mkdtemp(prefix="kreplica-prop-"))
    try:
        yield gen.write(root / "run")
    finally:
        shutil.rmtree(root, ignore_errors=True)


@QUICK
@given(gen=clean_histories())
def test_clean_histories_are_valid_baseline(gen):
    with written(gen) as run_dir:
        verdict = check_baseline(run_dir)
    assert nonzero(verdict) == {}, verdict.summary()
    assert verdict.counts["acked"] == sum(len(p.records) for p in gen.parts)


@QUICK
@given(gen=clean_histories(), kind=st.sampled_from(KINDS), k=st.integers(1, 3), data=st.data())
def test_planted_k_found_exactly_baseline(gen, kind, k, data):
    expected = plant(data.draw, gen, kind, k)
    assume(expected is not None)
    with written(gen) as run_dir:
        verdict = check_baseline(run_dir)
    assert nonzero(verdict) == expected, verdict.summary()


@pytest.mark.parametrize("kind", KINDS)
def test_planted_k_found_exactly_spark(kind, spark_session, monkeypatch):
    """In one task (a small history's plan) and as a large history's plan with window-1
    buckets of two offsets, so that every rule that reaches across offsets does so across
    buckets (``windows.by_offset``)."""
    import pytest_kreplica.validation.engine.spark as engine
    from pytest_kreplica.validation.checker import check, windows

    @SPARK
    @given(gen=clean_histories(), k=st.integers(1, 3), data=st.data())
    def run(gen, k, data):
        expected = plant(data.draw, gen, kind, k)
        assume(expected is not None)
        with written(gen) as run_dir:
            verdict, reference = check(run_dir), check_baseline(run_dir)
            with monkeypatch.context() as m:
                m.setattr(engine, "SMALL_INPUT_BYTES", 0)
                m.setattr(windows, "BUCKET_BITS", 1)
                bucketed = check(run_dir)
        assert nonzero(verdict) == expected, verdict.summary()
        assert verdict.counts == reference.counts
        assert bucketed.counts == reference.counts, bucketed.summary()

    run()
