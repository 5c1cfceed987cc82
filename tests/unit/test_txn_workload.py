"""The ``txn`` workload's pure logic: the dimension, the registry, and how one transaction's
outcome is recorded (a stand-in producer; the real one runs in matrices/transactions.yaml)."""

from __future__ import annotations

import importlib
import json
import random
import threading
import time

import pytest

from pytest_kreplica.history import RunWriter
from pytest_kreplica.matrix import DIMENSIONS, InvalidValue
from pytest_kreplica.workloads import CLIENT_WORKLOADS, CLIENTS, WORKLOADS
from pytest_kreplica.workloads import txn as workload
from pytest_kreplica.workloads.plain import ProduceStats
from pytest_kreplica.workloads.protocol import Workload
from tests.fake_txn import FakeProducer


def test_workload_dimension_marks_txn_cases_and_names_its_values():
    dim = DIMENSIONS["workload"]
    assert dim.default == "plain" and dim.parse("txn") == "txn"
    assert dim.markers("txn") == ["txn"] and dim.markers("plain") == []
    with pytest.raises(InvalidValue, match="plain | txn"):
        dim.parse("transactions")


def test_every_registered_workload_has_the_runner_interface():
    """Every module of the three registries exposes a complete ``Workload``: the runner calls
    its members without probing (protocol.py)."""
    modules = {**WORKLOADS, **CLIENTS, **{"/".join(k): v for k, v in CLIENT_WORKLOADS.items()}}
    for name, module in modules.items():
        spec = importlib.import_module(module).WORKLOAD
        assert isinstance(spec, Workload), name
        assert callable(spec.produce) and callable(spec.consumer), name
        assert spec.client in CLIENTS, name
    assert importlib.import_module(WORKLOADS["txn"]).WORKLOAD.history_version == 2
    assert importlib.import_module(WORKLOADS["plain"]).WORKLOAD.history_version == 1
    assert importlib.import_module(CLIENTS["java"]).WORKLOAD.producer_handle is not None
    assert importlib.import_module(WORKLOADS["plain"]).WORKLOAD.coordinator_keys(["t"]) == {}
    assert importlib.import_module(WORKLOADS["txn"]).WORKLOAD.coordinator_keys(["t"])


class _Case:
    message_bytes = 0


def _run(tmp_path, producer, seed):
    stats = ProduceStats()
    with RunWriter(tmp_path) as w:
        usable, sent = workload._one_transaction(producer, "T1", random.Random(seed),
                                                 [("t", 0), ("t", 1)], _Case(), w, stats, 0)
    rows = [json.loads(x) for x in (tmp_path / "sends.jsonl").read_text().splitlines()]
    (txn,) = [json.loads(x) for x in (tmp_path / "txns.jsonl").read_text().splitlines()]
    assert sent == len(rows) == stats.sent
    return usable, rows, txn, stats


def _seed(commits: bool) -> int:
    return next(s for s in range(100)
                if (random.Random(s).random() < workload.COMMIT_SHARE) is commits)


def test_a_committed_transaction_records_its_sends_and_outcome(tmp_path):
    usable, rows, txn, stats = _run(tmp_path, FakeProducer(), _seed(True))
    assert usable and txn["status"] == "committed" and txn["end_ns"] is not None
    assert rows and all(r["txn"] == "T1" and r["status"] == "ok" for r in rows)
    assert stats.acked_ids == {r["id"] for r in rows}


def test_an_aborted_transaction_is_never_waited_for(tmp_path):
    usable, rows, txn, stats = _run(tmp_path, FakeProducer(), _seed(False))
    assert usable and txn["status"] == "aborted" and stats.acked_ids == set()
    assert stats.failed == len(rows)


def test_a_failed_commit_is_indeterminate_and_replaces_the_producer(tmp_path):
    usable, rows, txn, stats = _run(tmp_path, FakeProducer(fail="commit"), _seed(True))
    assert not usable and txn["status"] == "info" and "commit failed" in txn["error"]
    assert stats.acked_ids == set() and stats.info == len(rows)


def test_a_failure_before_commit_is_settled_by_an_abort(tmp_path):
    producer = FakeProducer(fail="send")
    usable, rows, txn, _ = _run(tmp_path, producer, _seed(True))
    assert usable and txn["status"] == "aborted" and txn["end_ns"] is None
    assert producer.calls[-1] == "abort" and rows == []


class _ProduceCase(_Case):
    seed, partitions, messages = 7, 2, 40


class _SlowProducer(FakeProducer):
    """Takes a few milliseconds per commit, as a real one does, so both producers get turns."""

    def commit_transaction(self):
        time.sleep(0.005)
        super().commit_transaction()


def test_two_producers_write_at_once_with_their_own_ids_and_transactions(tmp_path,
                                                                         monkeypatch):
    made: list[str] = []

    def fake(case, bootstrap, transactional_id):
        made.append(transactional_id)
        return _SlowProducer()

    monkeypatch.setattr(workload, "transactional_producer", fake)
    with RunWriter(tmp_path) as w:
        stats = workload.produce(_ProduceCase(), ["t"], "localhost:1", w)
    txns = [json.loads(x) for x in (tmp_path / "txns.jsonl").read_text().splitlines()]
    sends = [json.loads(x) for x in (tmp_path / "sends.jsonl").read_text().splitlines()]
    assert sorted(made) == ["kr-txn-t-0", "kr-txn-t-3"]
    assert {t["process"] for t in txns} == set(workload.PRODUCER_PROCESSES)
    assert len({t["txn"] for t in txns}) == len(txns)
    assert all(s["txn"].startswith(f"P{s['process']}-") for s in sends)
    assert stats.sent == len(sends) >= _ProduceCase.messages


def test_a_producer_that_cannot_start_fails_the_produce_phase(tmp_path, monkeypatch):
    def broken(case, bootstrap, transactional_id):
        raise RuntimeError(f"no coordinator for {transactional_id}")

    monkeypatch.setattr(workload, "transactional_producer", broken)
    with RunWriter(tmp_path) as w, pytest.raises(RuntimeError, match="no coordinator"):
        workload.produce(_ProduceCase(), ["t"], "localhost:1", w)


def test_a_transactional_call_that_never_returns_is_given_up_on(monkeypatch):
    """kafka-python's abort waited for good after a coordinator kill: the call is bounded,
    and a transaction whose abort never returned leaves the producer to be replaced."""
    release = threading.Event()
    with pytest.raises(workload.TransactionCallTimeout, match="abort_transaction did not"):
        workload.bounded(lambda: release.wait(30), "abort_transaction", timeout=0.2)
    with pytest.raises(RuntimeError, match="boom"):
        workload.bounded(lambda: (_ for _ in ()).throw(RuntimeError("boom")), "commit")

    class Hanging(FakeProducer):
        def abort_transaction(self):
            release.wait(30)

    monkeypatch.setattr(workload, "END_TIMEOUT_S", 0.2)
    assert workload.after_failure(Hanging(), commit=False, ended=False) == ("info", False)
    release.set()


def test_a_close_that_gives_up_is_an_event_of_the_run(tmp_path, monkeypatch):
    """Both producers' closes time out: each is forced (``close_producer``) and its line is
    the ``stop`` event's detail, where a swallowed exception used to leave no trace."""
    monkeypatch.setattr(workload, "transactional_producer",
                        lambda case, bootstrap, txn_id: _SlowProducer(fail="close"))
    with RunWriter(tmp_path) as w:
        workload.produce(_ProduceCase(), ["t"], "localhost:1", w)
    events = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    stops = [e for e in events if e["kind"] == "stop"]
    assert sorted(e["process"] for e in stops) == sorted(workload.PRODUCER_PROCESSES)
    assert all("producer close gave up after 10 s: KafkaTimeoutError" in e["detail"]
               for e in stops), stops
