"""The pieces of the tiering faults that need no broker: the uploads counted per fault
window, the frozen store's note and sweep (on a real directory, with the real chattr), and
the registry entries' vocabulary."""

from __future__ import annotations

import json
import os

import pytest

from pytest_kreplica.cluster.facilities.impl import tieredfreeze
from pytest_kreplica.faults.registry import FAILURES, STRIKE_EVENTS, facilities_needed
from pytest_kreplica.scenarios.tiered import upload_windows

TOPIC_ID = "A" * 22
S = 1_000_000_000


def _segment(folder, start, mtime_s):
    path = folder / f"{start:020d}-{'B' * 21}{start % 10}.log"
    path.write_bytes(b"x")
    os.utime(path, ns=(int(mtime_s * S), int(mtime_s * S)))


def test_upload_windows_counts_uploads_just_before_the_strike_and_until_the_restore(tmp_path):
    store = tmp_path / "store"
    folder = store / f"t-0-{TOPIC_ID}"
    folder.mkdir(parents=True)
    for start, when in ((0, 100.0), (10, 108.5), (20, 109.5), (30, 111.0), (40, 130.0)):
        _segment(folder, start, when)
    (store / f"other-0-{TOPIC_ID}").mkdir()
    _segment(store / f"other-0-{TOPIC_ID}", 0, 110.5)  # another partition: not counted
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"kind": "kill", "time_ns": 110 * S, "detail": "fault #1: hard failure of node 1"},
            {"kind": "start", "time_ns": 115 * S, "detail": "fault #1: restore node 1"},
            {"kind": "recovered", "time_ns": 120 * S, "detail": "fault #1: every replica in sync"}]
    (run / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert upload_windows(run, store, [("t", 0)], wall_minus_mono_ns=0) == [
        {"fault": "fault #1", "uploaded_before": 3, "uploaded_just_before_strike": 2,
         "uploaded_strike_to_restore": 1, "uploaded_total": 5}]


def test_upload_windows_of_a_case_without_faults_is_empty(tmp_path):
    (tmp_path / "events.jsonl").write_text(json.dumps({"kind": "drain-start", "time_ns": 1}))
    assert upload_windows(tmp_path, tmp_path / "no-store", [("t", 0)]) == []


def test_a_frozen_store_refuses_new_files_and_the_sweep_thaws_it_when_its_freezer_died(
        tmp_path, monkeypatch):
    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "kafka-tiered-storage"
    (root / f"t-0-{TOPIC_ID}").mkdir(parents=True)
    try:
        assert tieredfreeze.freeze(root) == 2
        assert tieredfreeze.is_frozen(root)
        assert tieredfreeze.write_refused(root) is not None
        assert tieredfreeze.write_refused(root / f"t-0-{TOPIC_ID}") is not None
        assert tieredfreeze.sweep_stale() == []  # its freezer (this process) lives
        note = next((tmp_path / "cache" / tieredfreeze.NOTES).glob("*.json"))
        info = json.loads(note.read_text())
        note.write_text(json.dumps({**info, "owner": {"pid": info["owner"]["pid"],
                                                      "started": 1.0}}))  # a dead freezer
        assert tieredfreeze.sweep_stale() == [str(root)]
        assert not tieredfreeze.is_frozen(root)
        assert tieredfreeze.write_refused(root) is None
    finally:
        tieredfreeze.thaw(root)  # never leave an undeletable tmp dir behind


@pytest.mark.parametrize("name", ["empty_restart", "remote_store_readonly"])
def test_the_tiering_faults_are_registered_with_their_own_events(name):
    failure = FAILURES[name]
    assert STRIKE_EVENTS[failure.event] is failure
    assert failure.runs_on("process") and not failure.random


def test_the_remote_store_fault_asks_for_a_tiered_cluster():
    assert facilities_needed("remote_store_readonly") == {"tiered_storage"}
    assert facilities_needed("empty_restart") == frozenset()
