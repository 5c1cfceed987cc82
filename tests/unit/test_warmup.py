"""The background Spark warm-up of a pytest worker (``validation/warmup.py``): started once
per process, and a warm-up that fails is logged, never raised (the cases' own validation
reports the cause). Spark itself is faked here; tests/checker/test_warmup.py runs it."""

import logging

from pytest_kreplica.errors import CheckError
from pytest_kreplica.validation import warmup


def test_a_failed_warm_up_is_only_logged_and_runs_once(monkeypatch, caplog):
    monkeypatch.setattr(warmup, "_thread", None)
    calls = []

    def fail(master):
        calls.append(master)
        raise CheckError("Spark could not start (no Java)")

    monkeypatch.setattr(warmup, "start_spark", fail)
    caplog.set_level(logging.INFO, logger=warmup.__name__)
    thread = warmup.start("local[1]")
    thread.join(10)
    assert not thread.is_alive()
    assert "warming Spark up in the background failed" in caplog.text
    assert "no Java" in caplog.text
    assert warmup.start("local[1]") is thread and calls == ["local[1]"]


def test_without_replica_checks_only_the_session_is_warmed(monkeypatch, caplog):
    monkeypatch.setattr(warmup, "_thread", None)
    started, verified = [], []
    monkeypatch.setattr(warmup, "start_spark", started.append)
    monkeypatch.setattr(warmup, "verify_logs", lambda *a, **k: verified.append(a))
    caplog.set_level(logging.INFO, logger=warmup.__name__)
    warmup.start("local[1]", verify=False).join(10)
    assert started == ["local[1]"] and verified == []
    assert "Spark warmed up in the background" in caplog.text
