"""One reader of a run directory's tables for every step: the trade-off and the report read
sends and polls as the checker does (its contract, its tolerance of a last line a crash cut
short), so a history the checker judged is never "cannot be read" one step later."""

from __future__ import annotations

import json

import pytest

from pytest_kreplica.errors import HistoryError
from pytest_kreplica.report.data import read_table
from pytest_kreplica.validation.checker.arrow import read_arrow
from pytest_kreplica.validation.tradeoffs import judge
from tests.planted_loss import leader_kill, write_lost_m3
from tests.unit.test_tradeoffs import COUNTS, snapshot

TORN = '{"process": 0, "topic": "t", "partition": 0, "id": "m9", "off'


def torn(run, name="sends"):
    with open(run / f"{name}.jsonl", "a") as f:
        f.write(TORN)  # no newline: the write a crash cut short
    return run


def test_a_torn_last_line_is_left_out_by_every_reader(tmp_path):
    run = torn(write_lost_m3(tmp_path))
    for table in (read_arrow(run, "sends"), read_table(run, "sends")):
        assert table.num_rows == 6 and "m9" not in table["id"].to_pylist()
    assert read_arrow(run, "sends").column_names[:4] == ["process", "topic", "partition", "id"]


def test_the_trade_off_of_a_loss_with_a_torn_last_line_is_judged(tmp_path):
    run = torn(torn(write_lost_m3(tmp_path)), "polls")
    snapshot(run, ["m0", "m1", "m2", "m4", "m5"])
    t = judge("at-least-once", COUNTS, run, leader_kill(), {"acks": 1})
    assert t["accepted"] is True, t["reason"]


def test_a_torn_line_elsewhere_and_a_bad_row_are_named(tmp_path):
    run = write_lost_m3(tmp_path)
    lines = (run / "sends.jsonl").read_text().splitlines(keepends=True)
    (run / "sends.jsonl").write_text("".join([lines[0], TORN + "\n", *lines[1:]]))
    with pytest.raises(HistoryError, match=r"sends.jsonl:2: not valid JSON"):
        read_arrow(run, "sends")
    bad = json.loads(lines[1]) | {"offset": -3}
    (run / "sends.jsonl").write_text("".join([lines[0], json.dumps(bad) + "\n", *lines[2:]]))
    for read in (read_arrow, read_table):
        with pytest.raises(HistoryError, match=r"sends.jsonl:2: key 'offset' is -3"):
            read(run, "sends")


def test_parquet_and_absent_tables(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = write_lost_m3(tmp_path)
    rows = read_arrow(run, "polls").to_pylist()
    (run / "polls.jsonl").unlink()
    pq.write_table(pa.Table.from_pylist([{k: r[k] for k in ("process", "poll", "topic",
                                                            "partition", "offset", "id",
                                                            "time_ns")} for r in rows]),
                   run / "polls.parquet")
    assert read_arrow(run, "polls").to_pylist() == rows
    assert read_arrow(run, "txns").num_rows == 0
    with pytest.raises(HistoryError, match="no txns table"):
        read_arrow(run, "txns", required=True)
