"""``kreplica report``: verdict.json and report.html rebuilt from run directories that have
none (a history from another client, the planted fixtures) or an old one, on real Spark;
the index gains a column for every anomaly counted; ``kreplica --help`` says what each
command does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.json  # noqa: F401  (loaded at collection; see tests/unit/test_tradeoffs.py)
import pytest

from pytest_kreplica import cli
from pytest_kreplica.report import build_verdict, read_verdict, write_index, write_verdict
from pytest_kreplica.report.html import index_columns

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "histories"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("copied-from-ci")
    for name in ("clean", "lost"):
        shutil.copytree(FIXTURES / name, root / name)
    # an earlier verdict whose non-history parts must survive the rebuild
    write_verdict(root / "clean", build_verdict(
        case_id="clean-case", parameters={"acks": -1}, semantics="at-least-once",
        history={"valid": False, "counts": {"lost": 99}}, seed=42,
        checks=[{"name": "election bounded", "ok": True, "detail": "1.0 s"}]))
    code = cli.main(["report", str(root)])
    return root, code


def test_report_rebuilds_every_run_below(runs, capsys):
    root, code = runs
    assert code == 1  # the lost fixture fails
    lost = read_verdict(root / "lost")
    assert lost["passed"] is False and lost["counts"]["lost"] > 0
    assert lost["rebuilt"]["by"] == "kreplica report"
    assert (root / "lost" / "report.html").exists() and (root / "clean" / "report.html").exists()
    clean = read_verdict(root / "clean")
    assert clean["passed"] is True and clean["counts"]["lost"] == 0  # the checker's, now
    assert clean["case"] == "clean-case" and clean["seed"] == 42 and clean["checks"]
    assert clean["parameters"] == {"acks": -1}
    page = (root / "index.html").read_text()
    assert "href='lost/report.html'" in page and "2 case(s): 1 passed, 1 failed." in page


def test_report_of_one_run_dir_and_of_nothing(runs, tmp_path, capsys):
    root, _ = runs
    single = tmp_path / "single"
    shutil.copytree(FIXTURES / "clean", single)
    assert cli.main(["report", str(single)]) == 0
    assert json.loads((single / "verdict.json").read_text())["valid"] is True
    assert not (single / "index.html").exists()
    assert cli.main(["report", str(tmp_path / "empty-does-not-exist")]) == 2
    (tmp_path / "empty").mkdir()
    assert cli.main(["report", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert "no history found (expected sends.jsonl or sends.parquet" in err
    assert "Traceback" not in err


def test_index_has_a_column_per_counted_anomaly(tmp_path):
    for name, counts in (("a", {"sent": 10, "acked": 10, "nonmonotonic_sends": 1}),
                         ("b", {"sent": 10, "acked": 10, "lost": 2})):
        write_verdict(tmp_path / name, build_verdict(
            case_id=name, parameters={}, semantics="at-least-once",
            history={"valid": name == "a", "counts": counts}))
    verdicts = [read_verdict(tmp_path / n) for n in ("a", "b")]
    assert index_columns(verdicts) == ["sent", "acked", "lost", "unseen", "duplicated",
                                       "nonmonotonic_sends"]
    page = write_index(tmp_path).read_text()
    assert "<th>nonmonotonic_sends</th>" in page
    assert "<td class='num warn'>1</td>" in page  # reported, not invalidating
    assert "<td class='num bad'>2</td>" in page


def test_help_has_a_line_per_command(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "Each sub-command lives" not in out  # the module docstring's half sentence
    for command in cli.COMMANDS:
        line = next(line for line in out.splitlines() if line.strip().startswith(command + " "))
        assert len(line.split(None, 1)[1]) > 20, line
