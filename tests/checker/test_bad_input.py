"""Unreadable run directories: one line naming the file (and line), never a traceback."""

from __future__ import annotations

import json

import pytest

from pytest_kreplica.errors import HistoryError, InputError
from pytest_kreplica.validation.checker import check
from pytest_kreplica.validation.checker.baseline import check_baseline

GOOD_SEND = {"process": 0, "topic": "t", "partition": 0, "id": "m0", "offset": 0,
             "status": "ok", "invoke_ns": 1, "complete_ns": 2, "error": None}
GOOD_POLL = {"process": 1, "poll": 0, "topic": "t", "partition": 0, "offset": 0, "id": "m0",
             "time_ns": 3, "index": 0}


def write(run, sends=None, polls=None, raw_sends=None):
    run.mkdir(exist_ok=True)
    lines = [json.dumps(r) for r in (sends if sends is not None else [GOOD_SEND])]
    (run / "sends.jsonl").write_text(
        raw_sends if raw_sends is not None else "\n".join(lines) + "\n")
    (run / "polls.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in (polls if polls is not None else [GOOD_POLL])))
    return run


BAD_LINES = [
    ("malformed", '{"process": 0, "topic": "t"', "sends.jsonl:2: not valid JSON"),
    ("wrong type", json.dumps({**GOOD_SEND, "id": "m1", "partition": "zero"}),
     "sends.jsonl:2: key 'partition' is \"zero\"; expected an integer"),
    ("unknown status", json.dumps({**GOOD_SEND, "id": "m1", "status": "maybe"}),
     "sends.jsonl:2: key 'status' is 'maybe'; allowed: ok, fail, info"),
    ("missing key", json.dumps({k: v for k, v in GOOD_SEND.items() if k != "id"}),
     "sends.jsonl:2: key 'id' is missing or null"),
]


@pytest.mark.parametrize(("what", "line", "message"), BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_bad_line_is_named(tmp_path, spark_session, what, line, message):
    run = write(tmp_path / "run", raw_sends=json.dumps(GOOD_SEND) + "\n" + line + "\n"
                + json.dumps({**GOOD_SEND, "id": "m2", "offset": 1}) + "\n")
    for checker in (check, check_baseline):
        with pytest.raises(HistoryError) as info:
            checker(run)
        assert message in str(info.value), checker
        assert "\n" not in str(info.value)


def test_torn_last_line_of_a_crashed_run_is_left_out(tmp_path, spark_session):
    torn = json.dumps({**GOOD_SEND, "id": "m1", "offset": 1})[:25]  # no newline: cut short
    run = write(tmp_path / "run", raw_sends=json.dumps(GOOD_SEND) + "\n" + torn)
    verdict = check(run)
    assert verdict.counts["sent"] == 1 and verdict.valid
    assert verdict.extra == {"ignored_torn_last_line": ["sends.jsonl"]}
    assert check_baseline(run).counts["sent"] == 1


def test_torn_line_in_the_middle_is_an_error(tmp_path, spark_session):
    torn = json.dumps(GOOD_SEND)[:25]
    run = write(tmp_path / "run", raw_sends=torn + "\n" + json.dumps(GOOD_SEND) + "\n")
    with pytest.raises(HistoryError, match="sends.jsonl:1: not valid JSON"):
        check(run)


@pytest.mark.parametrize("checker", [check, check_baseline], ids=["spark", "baseline"])
def test_errors_found_before_spark_starts(tmp_path, checker):
    with pytest.raises(HistoryError, match="no such run directory"):
        checker(tmp_path / "nope")
    (tmp_path / "file").write_text("")
    with pytest.raises(HistoryError, match="not a directory"):
        checker(tmp_path / "file")
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(HistoryError, match=r"no sends table \(sends.jsonl or sends.parquet\)"):
        checker(run)
    write(run)
    (run / "polls.jsonl").unlink()
    with pytest.raises(HistoryError, match="no polls table"):
        checker(run)
    write(run)
    (run / "sends.parquet").mkdir()
    with pytest.raises(HistoryError, match="both sends.jsonl and sends.parquet exist"):
        checker(run)
    (run / "sends.parquet").rmdir()
    (run / "run.json").write_text('{"semantics": "sometimes"}')
    with pytest.raises(HistoryError, match="key 'semantics' is 'sometimes'; allowed"):
        checker(run)
    (run / "run.json").write_text('{"mirror": {"topics": ["t"]}}')
    with pytest.raises(HistoryError, match="'mirror.topics' must map topic names"):
        checker(run)
    (run / "run.json").write_text("{}")
    with pytest.raises(InputError, match="semantics 'twice'"):
        checker(run, semantics="twice")
    (run / "events.jsonl").write_text('{"time_ns": "late", "kind": "assign"}\n')
    with pytest.raises(HistoryError, match="events.jsonl:1: key 'time_ns' is \"late\""):
        checker(run)


def test_parquet_wrong_column_type_named_before_spark(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = write(tmp_path / "run")
    (run / "sends.jsonl").unlink()
    rows = {**{k: [v] for k, v in GOOD_SEND.items()}, "offset": ["zero"]}
    pq.write_table(pa.table(rows), run / "sends.parquet")
    with pytest.raises(HistoryError, match="column 'offset' has type string; expected an integer"):
        check(run)


def test_parquet_unknown_status_named(tmp_path, spark_session):
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = write(tmp_path / "run")
    (run / "sends.jsonl").unlink()
    rows = {k: [v, v] for k, v in GOOD_SEND.items()}
    rows["status"] = ["ok", "maybe"]
    rows["error"] = pa.array([None, None], pa.string())
    pq.write_table(pa.table(rows), run / "sends.parquet")
    with pytest.raises(HistoryError, match=r"sends.parquet: row 2: key 'status' is 'maybe'"):
        check(run)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("table", ["sends", "polls"])
def test_an_offset_below_zero_is_refused(tmp_path, spark_session, table, fmt):
    """An offset below 0 is no position in a log: it could stand for a record a consumer
    never read (a loss hidden), so the table is refused, as replicas.json refuses it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = {"sends": [GOOD_SEND, {**GOOD_SEND, "id": "m1", "offset": 1}],
            "polls": [GOOD_POLL, {**GOOD_POLL, "id": "m1", "offset": 1}]}
    rows[table][1]["offset"] = -1
    run = write(tmp_path / "run", sends=rows["sends"], polls=rows["polls"])
    where = f"{table}.jsonl:2"
    if fmt == "parquet":
        (run / f"{table}.jsonl").unlink()
        pq.write_table(pa.Table.from_pylist(rows[table]), run / f"{table}.parquet")
        where = f"{table}.parquet: row 2"
    for checker in (check, check_baseline):
        with pytest.raises(HistoryError) as info:
            checker(run)
        assert f"{where}: key 'offset' is -1; expected an integer >= 0" in str(info.value)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", ["READ_COMMITTED", "committed", ""])
def test_an_unknown_isolation_is_refused(tmp_path, spark_session, value):
    """An isolation level outside the contract would switch the transactional rules off
    for those polls (neither read_committed nor read_uncommitted)."""
    run = write(tmp_path / "run", sends=[{**GOOD_SEND, "txn": "T1"}],
                polls=[{**GOOD_POLL, "isolation": "read_committed", "generation": 1},
                       {**GOOD_POLL, "poll": 1, "isolation": value, "generation": 1}])
    (run / "txns.jsonl").write_text(json.dumps({"process": 0, "txn": "T1", "status":
                                                "committed", "begin_ns": 0, "end_ns": 2,
                                                "complete_ns": 3}) + "\n")
    (run / "run.json").write_text('{"history_version": 2}')
    with pytest.raises(HistoryError) as info:
        check(run)
    assert (f"polls.jsonl:2: key 'isolation' is {value!r}; allowed: read_committed, "
            f"read_uncommitted") in str(info.value)
    assert "\n" not in str(info.value)
