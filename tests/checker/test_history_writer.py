"""The run-directory writer: rows land as one JSON object per line, flushed at once,
from many threads without interleaving; run.json is written atomically."""

from __future__ import annotations

import json
import threading

import pytest

from pytest_kreplica.errors import HistoryError
from pytest_kreplica.history import RunWriter, now_ns, read_run_json, write_run_json


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_creates_dir_and_all_three_tables_even_when_empty(tmp_path):
    run = tmp_path / "a" / "b"
    with RunWriter(run):
        pass
    for name in ("sends", "polls", "events"):
        assert (run / f"{name}.jsonl").read_text() == ""


def test_rows_have_the_contract_columns(tmp_path):
    with RunWriter(tmp_path) as w:
        w.send(process=0, topic="t", partition=0, id="p0-000001", offset=5, status="ok",
               invoke_ns=10, complete_ns=20, error=None)
        w.poll(process=1, poll=3, topic="t", partition=0, offset=5, id="p0-000001",
               time_ns=30, index=0)
        w.event("kill", node=2, role="leader", detail="SIGKILL", process=None, time_ns=40)
    assert _rows(tmp_path / "sends.jsonl") == [
        {"process": 0, "topic": "t", "partition": 0, "id": "p0-000001", "offset": 5,
         "status": "ok", "invoke_ns": 10, "complete_ns": 20, "error": None}
    ]
    assert _rows(tmp_path / "polls.jsonl") == [
        {"process": 1, "poll": 3, "topic": "t", "partition": 0, "offset": 5,
         "id": "p0-000001", "time_ns": 30, "index": 0}
    ]
    assert _rows(tmp_path / "events.jsonl") == [
        {"time_ns": 40, "kind": "kill", "process": None, "node": "2", "role": "leader",
         "detail": "SIGKILL"}
    ]


def test_row_is_on_disk_before_close(tmp_path):
    w = RunWriter(tmp_path)
    w.send(process=0, topic="t", partition=0, id="x", offset=None, status="info",
           error="KafkaTimeoutError")
    row = _rows(tmp_path / "sends.jsonl")[0]  # read by another handle, writer still open
    assert row["offset"] is None and row["status"] == "info"
    assert row["error"] == "KafkaTimeoutError"
    w.close()


def test_default_times_come_from_the_monotonic_clock(tmp_path):
    before = now_ns()
    with RunWriter(tmp_path) as w:
        w.send(process=0, topic="t", partition=0, id="x", offset=1, status="ok")
        w.event("start")
    after = now_ns()
    send = _rows(tmp_path / "sends.jsonl")[0]
    assert before <= send["invoke_ns"] <= send["complete_ns"] <= after
    assert before <= _rows(tmp_path / "events.jsonl")[0]["time_ns"] <= after


def test_cluster_column_only_for_mirrored_runs(tmp_path):
    with RunWriter(tmp_path) as w:
        w.send(process=0, topic="t", partition=0, id="x", offset=1, status="ok",
               cluster="source")
        w.poll(process=1, poll=0, topic="source.t", partition=0, offset=7, id="x",
               cluster="target")
    assert _rows(tmp_path / "sends.jsonl")[0]["cluster"] == "source"
    assert _rows(tmp_path / "polls.jsonl")[0]["cluster"] == "target"


def test_unknown_status_is_refused_and_nothing_written(tmp_path):
    with RunWriter(tmp_path) as w, pytest.raises(ValueError, match="ok, fail, info"):
        w.send(process=0, topic="t", partition=0, id="x", offset=1, status="maybe")
    assert (tmp_path / "sends.jsonl").read_text() == ""


def test_reopening_appends_never_rewrites(tmp_path):
    for i in range(2):
        with RunWriter(tmp_path) as w:
            w.event("start", process=i)
    assert [r["process"] for r in _rows(tmp_path / "events.jsonl")] == [0, 1]


def test_write_after_close_fails(tmp_path):
    w = RunWriter(tmp_path)
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.event("start")


def test_threads_never_interleave_lines(tmp_path):
    threads, per_thread = 8, 500
    with RunWriter(tmp_path) as w:

        def produce(p):
            for i in range(per_thread):
                w.send(process=p, topic="t", partition=0, id=f"p{p}-{i:06d}" + "x" * 200,
                       offset=i, status="ok")

        workers = [threading.Thread(target=produce, args=(p,)) for p in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    rows = _rows(tmp_path / "sends.jsonl")
    assert len(rows) == threads * per_thread
    for p in range(threads):
        mine = [r["offset"] for r in rows if r["process"] == p]
        assert mine == list(range(per_thread))


def test_run_json_round_trip_and_atomic(tmp_path):
    meta = {"semantics": "exactly-once", "case": {"faults": ["kill"]}, "brokers": 3}
    write_run_json(tmp_path, meta)
    assert read_run_json(tmp_path) == meta
    write_run_json(tmp_path, {"semantics": "at-most-once"})
    assert read_run_json(tmp_path) == {"semantics": "at-most-once"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]  # no temp file left


def test_run_json_missing(tmp_path):
    with pytest.raises(HistoryError, match="run.json: no such file"):
        read_run_json(tmp_path)
    assert read_run_json(tmp_path, missing_ok=True) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"semantics": ', "run.json:1: not valid JSON"),
        ("[1, 2]", "expected a JSON object, found list"),
        ('{"semantics": "twice"}', "key 'semantics' is 'twice'; allowed: at-least-once"),
    ],
)
def test_run_json_bad(tmp_path, text, message):
    (tmp_path / "run.json").write_text(text)
    with pytest.raises(HistoryError, match=message) as info:
        read_run_json(tmp_path)
    assert "\n" not in str(info.value)
