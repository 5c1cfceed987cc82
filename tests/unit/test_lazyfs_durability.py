"""The lazy filesystem's bookkeeping without FUSE: what a power cut takes from which file."""

from __future__ import annotations

import os

from pytest_kreplica.cluster.facilities.impl.lazyfs import Durability


def _file(root, name, data):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_cut_keeps_what_was_fsynced_and_drops_the_rest(tmp_path):
    d = Durability()
    seg = _file(tmp_path, "t-0/0.log", b"a" * 100)
    d.before_change("/t-0/0.log", 100)  # a write begins at 100 durable bytes
    seg.write_bytes(b"a" * 150)
    d.before_change("/t-0/0.log", 150)  # a later write does not move the durable length
    seg.write_bytes(b"a" * 180)
    said = d.cut(str(tmp_path))
    assert os.path.getsize(seg) == 100
    assert (said["files"], said["bytes"], said["tracked"], said["writes"]) == (1, 80, 1, 2)
    assert said["examples"] == [{"file": "t-0/0.log", "size": 180, "kept": 100}]
    assert said["logs"] == ["t-0"] and said["log_bytes"] == 80
    assert d.cut(str(tmp_path))["bytes"] == 0  # all durable after a cut


def test_fsync_makes_a_file_durable_and_a_new_file_starts_empty(tmp_path):
    d = Durability()
    synced = _file(tmp_path, "a", b"x" * 10)
    d.before_change("/a", 0)
    d.synced("/a")
    fresh = _file(tmp_path, "b", b"y" * 7)
    d.created("/b")
    said = d.cut(str(tmp_path))
    assert os.path.getsize(synced) == 10 and os.path.getsize(fresh) == 0
    assert said["bytes"] == 7 and said["files"] == 1


def test_renames_carry_a_files_and_a_directorys_entries(tmp_path):
    d = Durability()
    d.created("/t-0/1.log")
    d.created("/t-0/1.index")
    d.created("/x.tmp")
    d.renamed("/t-0", "/t-0.abc-delete")
    d.renamed("/x.tmp", "/x")
    assert sorted(d.durable) == ["/t-0.abc-delete/1.index", "/t-0.abc-delete/1.log", "/x"]
    d.removed("/t-0.abc-delete")
    assert sorted(d.durable) == ["/x"]


def test_a_truncation_below_the_durable_length_is_not_undone(tmp_path):
    d = Durability()
    f = _file(tmp_path, "f", b"z" * 40)
    d.before_change("/f", 100)
    d.truncated("/f", 40)
    said = d.cut(str(tmp_path))
    assert os.path.getsize(f) == 40 and said["bytes"] == 0


def test_a_file_gone_before_the_cut_is_skipped_and_sync_clears_everything(tmp_path):
    d = Durability()
    d.created("/gone")
    assert d.cut(str(tmp_path))["files"] == 0
    d.created("/kept")
    assert d.sync_all()["tracked"] == 1 and d.durable == {}
