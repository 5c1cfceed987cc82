"""Expressions kept per Spark session (validation/engine/reuse.py): pure logic, no Spark."""

from __future__ import annotations

from pytest_kreplica.validation.engine import reuse, spark


def test_a_builder_runs_once_per_arguments_until_forget():
    calls = []

    @reuse.per_session
    def columns(flag: bool) -> list[str]:
        calls.append(flag)
        return [f"built for {flag}"]

    first = columns(True)
    assert columns(True) is first  # the same objects, not rebuilt
    assert columns(False) == ["built for False"]
    assert calls == [True, False]
    reuse.forget()
    assert columns(True) is not first
    assert calls == [True, False, True]


def test_two_builders_with_the_same_arguments_keep_their_own():
    @reuse.per_session
    def one() -> str:
        return "one"

    @reuse.per_session
    def two() -> str:
        return "two"

    assert (one(), two()) == ("one", "two")


class _Session:
    """Stands for a classic session: ``stop_spark`` only calls its ``stop``."""

    stopped = False

    def stop(self) -> None:
        self.stopped = True


def test_stopping_the_session_forgets_what_was_built_in_it(monkeypatch):
    calls = []

    @reuse.per_session
    def columns() -> list[int]:
        calls.append(1)
        return [len(calls)]

    before = columns()
    session = _Session()
    monkeypatch.setattr(spark, "_session", session)
    monkeypatch.setattr(spark, "_session_url", "local[2]")
    monkeypatch.setattr(spark, "_archive_making", None)
    spark.stop_spark()
    assert session.stopped
    assert columns() == [2] and before == [1]  # built again for the next session
