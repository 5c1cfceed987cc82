"""The test command's file order (tests/schedule.py) and the summary's reading of test ids."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_kreplica.plugin.summary import case_id_of, without_group
from tests import schedule

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Item:
    nodeid: str


def test_a_long_file_starts_first_and_a_file_stays_in_its_order():
    items = [Item("a.py::t1"), Item("s.py::c[x]"), Item("a.py::t2"), Item("b.py::t"),
             Item("s.py::c[y]")]
    seconds = {"b.py::t": 30.0, "s.py::c[x]": 50.0, "s.py::c[y]": 60.0}
    ordered = [i.nodeid for i in schedule.longest_first(items, seconds)]
    # s.py (110 s) before b.py (30 s) before a.py (2 × the 1 s default)
    assert ordered == ["s.py::c[x]", "s.py::c[y]", "b.py::t", "a.py::t1", "a.py::t2"]


def test_xdists_group_suffix_is_not_part_of_the_recorded_id():
    assert without_group("a.py::t@a.py") == "a.py::t"
    assert without_group("a.py::t[x@y]") == "a.py::t[x@y]"
    assert without_group("a.py::t[x]@kreplica-process-b3") == "a.py::t[x]"


def test_the_durations_script_reads_junit_and_keeps_tests_of_a_second(tmp_path):
    xml = tmp_path / "junit.xml"
    xml.write_text('<testsuites><testsuite>'
                   '<testcase classname="tests.unit.test_a" name="test_x[p]"'
                   ' time="2.5"/><testcase classname="tests.unit.test_a.TestB" name="test_y"'
                   ' time="1.25"/><testcase classname="tests.unit.test_a" name="test_z"'
                   ' time="0.2"/></testsuite></testsuites>')
    out = tmp_path / "durations.json"
    run = subprocess.run([sys.executable, str(REPO / "scripts/test-durations"), str(xml), str(out)],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(out.read_text()) == {"tests/unit/test_a.py::test_x[p]": 2.5,
                                           "tests/unit/test_a.py::TestB::test_y": 1.2}


def test_the_durations_script_refuses_a_file_that_is_not_junit(tmp_path):
    bad = tmp_path / "x.xml"
    bad.write_text("not xml")
    run = subprocess.run([sys.executable, str(REPO / "scripts/test-durations"), str(bad)],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "not junit XML" in run.stderr


@pytest.mark.parametrize(("nodeid", "case_id"), [
    ("tests/system/test_replication.py::test_replication[smoke-p1]", "smoke-p1"),
    ("tests/system/test_replication.py::test_replication[smoke-p1]@kreplica-process-b3-kdefault",
     "smoke-p1"),
    ("t.py::test_x[odd@id]", "odd@id"),
])
def test_the_summary_finds_the_case_id_under_loadgroup(nodeid, case_id):
    assert case_id_of(nodeid) == case_id
