"""The rolled history writer (history_parts): parts of a fixed schema, rolled every N rows
or M seconds, written atomically, read back by the checker's reader row for row."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pytest_kreplica.history import POLLS, SENDS, Roll, RunWriter
from pytest_kreplica.history_parts import PartsTable
from pytest_kreplica.validation.checker.arrow import arrow_schema, read_arrow


def _writer(run_dir, rows=3, seconds=3600.0):
    return RunWriter(run_dir, roll=Roll(rows=rows, seconds=seconds),
                     schemas={n: arrow_schema(n) for n in (SENDS, POLLS)})


def _send(w, i, status="ok"):
    w.send(process=0, topic="t", partition=0, id=f"m{i}", offset=i if status == "ok" else None,
           status=status, invoke_ns=10 * i, complete_ns=10 * i + 5)


def _parts(folder):
    return sorted(p.name for p in folder.iterdir())


def test_rolls_every_n_rows_and_the_rest_on_close(tmp_path):
    w = _writer(tmp_path, rows=3)
    for i in range(7):
        _send(w, i)
    assert _parts(tmp_path / "sends.parquet") == ["part-00000.parquet", "part-00001.parquet"]
    w.close()
    names = _parts(tmp_path / "sends.parquet")
    assert names == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    counts = [pq.read_metadata(tmp_path / "sends.parquet" / n).num_rows for n in names]
    assert counts == [3, 3, 1]
    assert not (tmp_path / "sends.jsonl").exists()
    assert (tmp_path / "events.jsonl").exists()  # events stay JSON Lines


def test_rolls_after_m_seconds(tmp_path, monkeypatch):
    clock = iter([0.0, 1.0, 5.0, 5.5])
    monkeypatch.setattr("pytest_kreplica.history_parts.time.monotonic", lambda: next(clock))
    table = PartsTable(tmp_path / "sends.parquet", arrow_schema(SENDS), Roll(rows=100,
                                                                              seconds=4.0))
    row = {"process": 0, "topic": "t", "partition": 0, "id": "m", "offset": 0,
           "status": "ok", "invoke_ns": 1, "complete_ns": 2, "error": None}
    table.append(row)  # 1 s after the start: buffered
    assert table.parts == 0
    table.append(row)  # 5 s: rolled
    assert table.parts == 1
    assert pq.read_metadata(tmp_path / "sends.parquet" / "part-00000.parquet").num_rows == 2


def test_every_part_has_the_contract_schema_even_with_null_columns(tmp_path):
    with _writer(tmp_path, rows=2) as w:
        _send(w, 0, "fail")
        _send(w, 1, "info")  # part 0: offset all null, no cluster, no txn
        _send(w, 2)
    for folder, name in ((tmp_path / "sends.parquet", SENDS), (tmp_path / "polls.parquet", POLLS)):
        for part in folder.iterdir():
            assert pq.read_schema(part).remove_metadata() == arrow_schema(name)


def test_an_empty_table_is_one_empty_part(tmp_path):
    with _writer(tmp_path):
        pass
    assert _parts(tmp_path / "polls.parquet") == ["part-00000.parquet"]
    assert read_arrow(tmp_path, POLLS).num_rows == 0


def test_reader_round_trip_matches_the_jsonl_writer(tmp_path):
    def write(w):
        for i in range(5):
            _send(w, i, "ok" if i != 3 else "info")
            w.poll(process=1, poll=i, topic="t", partition=0, offset=i, id=f"m{i}",
                   time_ns=100 + i, index=0, cluster="target" if i == 4 else None)

    with RunWriter(tmp_path / "json") as w:
        write(w)
    with _writer(tmp_path / "rolled", rows=2) as w:
        write(w)
    for name in (SENDS, POLLS):
        assert (read_arrow(tmp_path / "rolled", name).to_pylist()
                == read_arrow(tmp_path / "json", name).to_pylist())


def test_a_part_is_written_under_a_hidden_name_then_renamed(tmp_path, monkeypatch):
    seen = []
    real = pq.write_table

    def spy(table, where, **kw):
        seen.append(where.name)
        real(table, where, **kw)
        assert not (where.parent / "part-00000.parquet").exists()  # not visible yet

    monkeypatch.setattr(pq, "write_table", spy)
    with _writer(tmp_path, rows=1) as w:
        _send(w, 0)
    assert seen[0] == ".part-00000.parquet.tmp"
    assert _parts(tmp_path / "sends.parquet") == ["part-00000.parquet"]


def test_a_failed_part_leaves_no_temporary_file(tmp_path, monkeypatch):
    def broken(table, where, **kw):
        where.write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    w = _writer(tmp_path, rows=1)
    with pytest.raises(OSError, match="disk full"):
        _send(w, 0)
    assert _parts(tmp_path / "sends.parquet") == []


def test_a_killed_writer_leaves_only_complete_parts_the_reader_accepts(tmp_path):
    w = _writer(tmp_path, rows=2)
    for i in range(5):
        _send(w, i)
    w.poll(process=1, poll=0, topic="t", partition=0, offset=0, id="m0", time_ns=1, index=0)
    (tmp_path / "sends.parquet" / ".part-00002.parquet.tmp").write_bytes(b"torn")
    # no close: the fifth send and the poll were still buffered (what a killed run loses)
    assert read_arrow(tmp_path, SENDS)["id"].to_pylist() == ["m0", "m1", "m2", "m3"]


def test_a_reopened_table_numbers_its_parts_on(tmp_path):
    for _ in range(2):
        with _writer(tmp_path, rows=10) as w:
            _send(w, 0)
    assert _parts(tmp_path / "sends.parquet") == ["part-00000.parquet", "part-00001.parquet"]


def test_a_rolled_writer_needs_both_schemas(tmp_path):
    with pytest.raises(ValueError, match="schemas of sends and polls"):
        RunWriter(tmp_path, roll=Roll(), schemas={SENDS: arrow_schema(SENDS)})
    with pytest.raises(ValueError, match="must be > 0"):
        Roll(rows=0)


def test_events_rows_are_still_json_lines(tmp_path):
    with _writer(tmp_path) as w:
        w.event("kill", node=2, time_ns=5)
    assert json.loads((tmp_path / "events.jsonl").read_text())["kind"] == "kill"
