"""The report of a real mirrored run: ``fixtures/histories/mirrored-hard`` is the history
of a C.6 case (1-broker source and target, Kafka 4.3.1, MirrorMaker 2 at-least-once,
SIGKILLed once during the produce and restarted), copied with
``scripts/copy-run-fixture`` (machine paths scrubbed), with the verdict the Spark checker
wrote for it. Building the report from it must show both clusters' timelines and the
MirrorMaker 2 fault, and the report's own reading must agree with the checker."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.json  # noqa: F401  (loaded at collection; see tests/unit/test_tradeoffs.py)
import pytest

from pytest_kreplica.report import read_verdict, write_report
from pytest_kreplica.report.data import clusters_section, load
from pytest_kreplica.report.plots import fault_spans, timeline_rows

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "mirrored-hard"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("real-mirror") / FIXTURE.name
    shutil.copytree(FIXTURE, run_dir)
    write_report(run_dir)
    return run_dir, load(run_dir), read_verdict(run_dir)


def test_fixture_is_a_hard_mirror_maker_failure(report):
    _, data, verdict = report
    assert data.mirrored and verdict["passed"] and verdict["semantics"] == "at-least-once"
    (fault,) = verdict["faults"]
    assert (fault["failure"], fault["node"], fault["state_after_strike"]) == (
        "hard", "mirror-maker", "stopped")


def test_report_reading_agrees_with_the_spark_checker(report):
    _, data, verdict = report
    counts = verdict["counts"]
    assert data.counts["acked"] == counts["acked"] and data.counts["polled"] == counts["polled"]
    assert data.offending_total == counts["lost"] + counts["unseen"]
    assert data.mirror.duplicated == counts["duplicated"]
    assert clusters_section(data)["target"]["duplicated"] == \
        verdict["clusters"]["target"]["duplicated"]


def test_both_clusters_timelines_and_the_fault_are_in_the_html(report):
    run_dir, data, verdict = report
    rows = timeline_rows(data)
    source = [r for r in rows if r.startswith("source node")]
    target = [r for r in rows if r.startswith("target node")]
    assert source and target and rows.index("MirrorMaker 2") == len(source)
    (span,) = fault_spans(data)
    assert span["node"] == "MirrorMaker 2" and span["kind"] == "kill"
    assert span["start"] < span["restore"] < span["recovered"]
    page = (run_dir / "report.html").read_text()
    for text in (*source, *target, "MirrorMaker 2", "kill (mirror-maker)",
                 "<h2>Clusters</h2>", "Faults on both clusters and MirrorMaker 2",
                 "Source cluster: acknowledged; target cluster: polled",
                 "Mirror lag: acknowledged on the source to first polled on the target"):
        assert text in page, text
    kinds = [e["kind"] for e in verdict["clusters"]["mirror_maker"]["events"]]
    assert kinds == ["start", "kill", "start", "recovered"]
    for kind in kinds:
        assert f"<td>mirror-maker</td><td>{kind}</td>" in page
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert {e.get("cluster") for e in events if e.get("process") == 0} == {"source"}
    assert {e.get("cluster") for e in events if e.get("process") == 1} == {"target"}
