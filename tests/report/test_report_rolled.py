"""``kreplica report`` and the report's data on a history rolled into Parquet parts (a
soak's form, docs/history.md): found below a root, checked on real Spark, with the same
verdict and the same figures as its JSON Lines twin."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.json  # noqa: F401  (loaded at collection; see tests/unit/test_tradeoffs.py)
import pyarrow.parquet as pq

from pytest_kreplica import cli
from pytest_kreplica.report import read_verdict
from pytest_kreplica.report.data import load
from pytest_kreplica.validation.checker.arrow import read_arrow

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "histories"


def _rolled_copy(source: Path, target: Path, parts: int = 3) -> None:
    """``source`` with sends and polls as NAME.parquet folders of ``parts`` parts."""
    shutil.copytree(source, target)
    for name in ("sends", "polls"):
        table = read_arrow(source, name)
        (target / f"{name}.jsonl").unlink()
        folder = target / f"{name}.parquet"
        folder.mkdir()
        step = -(-table.num_rows // parts)
        for k in range(parts):
            pq.write_table(table.slice(k * step, step), folder / f"part-{k:05d}.parquet")


def test_report_of_a_rolled_history_matches_its_jsonl_twin(tmp_path):
    shutil.copytree(FIXTURES / "lost", tmp_path / "jsonl")
    _rolled_copy(FIXTURES / "lost", tmp_path / "rolled")
    assert cli.main(["report", str(tmp_path)]) == 1  # both runs found, both fail
    plain, rolled = read_verdict(tmp_path / "jsonl"), read_verdict(tmp_path / "rolled")
    assert rolled["counts"]["lost"] > 0
    assert rolled["counts"] == plain["counts"]
    assert (tmp_path / "rolled" / "report.html").stat().st_size > 0
    a, b = load(tmp_path / "jsonl"), load(tmp_path / "rolled")
    assert (b.t0_ns, b.offending_total, len(b.events)) == (a.t0_ns, a.offending_total,
                                                            len(a.events))
