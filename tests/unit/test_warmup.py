"""The background Spark warm-up of a pytest worker (``validation/warmup.py``): started once
per process, and a warm-up that fails is logged, never raised (the cases' own validation
reports the cause); a case's validation waits for it. Spark itself is faked here;
tests/checker/test_warmup.py runs it."""

import logging
import threading
from types import SimpleNamespace

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
    checked = []
    monkeypatch.setattr(warmup, "check", lambda run_dir, **k: checked.append(
        (run_dir / "sends.jsonl").stat().st_size) or SimpleNamespace(counts=_planted_counts()))
    caplog.set_level(logging.INFO, logger=warmup.__name__)
    warmup.start("local[1]", verify=False).join(10)
    assert started == ["local[1]"] and verified == []
    assert len(checked) == 1 and checked[0] > 0  # the history existed when it was checked
    assert "Spark warmed up in the background" in caplog.text


def _planted_counts():
    acked = warmup.HISTORY_PARTITIONS * warmup.HISTORY_PER_PARTITION
    return {"acked": acked, "polled": acked - 1, "lost": 1, "poll_skips": 1}


def test_a_check_that_misses_the_planted_loss_is_a_failed_warm_up(monkeypatch, caplog):
    monkeypatch.setattr(warmup, "_thread", None)
    monkeypatch.setattr(warmup, "start_spark", lambda master: None)
    monkeypatch.setattr(warmup, "check", lambda run_dir, **k: SimpleNamespace(
        counts={**_planted_counts(), "lost": 0}))
    caplog.set_level(logging.INFO, logger=warmup.__name__)
    warmup.start(None, verify=False).join(10)
    assert "warming Spark up in the background failed" in caplog.text
    assert "expected {'acked': 500, 'polled': 499, 'lost': 1, 'poll_skips': 1}" in caplog.text
    assert "'lost': 0" in caplog.text


def test_wait_joins_a_running_warm_up_and_is_bounded(monkeypatch, caplog):
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(10,), daemon=True)
    thread.start()
    monkeypatch.setattr(warmup, "_thread", thread)
    caplog.set_level(logging.INFO, logger=warmup.__name__)
    assert warmup.running()
    assert warmup.wait(timeout=0.2) is True  # it waited, and gave up after the bound
    assert "still running after 0 s" in caplog.text
    release.set()
    thread.join(10)
    assert not warmup.running() and warmup.wait() is False  # nothing left to wait for
