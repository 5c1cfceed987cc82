"""The background warm-up on real Spark (``validation/warmup.py``): it starts the session and
verifies a snapshot of two partitions (two tasks, so two Python workers start), and that
snapshot is a valid one: the warm-up does the work a first case would, not a no-op."""

import logging

from pytest_kreplica.validation import warmup
from pytest_kreplica.validation.replicas.verify import verify_logs


def test_the_tiny_snapshot_is_verified_as_two_partitions(tmp_path, spark_session):
    warmup.write_tiny_snapshot(tmp_path)
    verdict = verify_logs(tmp_path)
    assert verdict.valid
    assert (verdict.counts["partitions"], verdict.counts["replicas"],
            verdict.counts["batches"]) == (2, 4, 4)


def test_the_warm_up_runs_to_its_end(monkeypatch, caplog, spark_session):
    monkeypatch.setattr(warmup, "_thread", None)
    caplog.set_level(logging.INFO, logger=warmup.__name__)
    thread = warmup.start(None)
    thread.join(300)
    assert not thread.is_alive(), "the warm-up still ran after 300 s"
    assert "Spark warmed up in the background" in caplog.text, caplog.text
