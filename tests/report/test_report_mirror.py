"""The report of a mirrored run shows both clusters: each cluster's nodes and node events,
MirrorMaker 2's faults on a row of its own, what the source acknowledged and the target
polled over time, and the mirror lag (report.html and verdict.json). A made-up run here;
the report of a real mirrored run is checked in tests/report/test_report_real_mirror.py
and in every C.6 system case."""

from __future__ import annotations

import pyarrow.json  # noqa: F401  (loaded at collection; see tests/unit/test_tradeoffs.py)
import pytest

from pytest_kreplica.report import build_verdict, write_report, write_verdict
from pytest_kreplica.report.data import clusters_section, load
from pytest_kreplica.report.plots import fault_spans, timeline_rows

from .synthetic import MIRROR_DUPLICATES, make_mirrored_run

FAULT = {"index": 1, "failure": "hard", "target": "mirror-maker", "topic": None,
         "partition": None, "node": "mirror-maker", "fault_s": 5.0, "recovery_s": 4.0,
         "state_after_strike": "stopped"}


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    d = tmp_path_factory.mktemp("results") / "mirror-maker-failure-hard"
    make_mirrored_run(d)
    data = load(d)
    doc = build_verdict(case_id="mirror-maker-failure-hard", parameters={"failure": "hard"},
                        semantics="at-least-once",
                        history={"valid": True, "counts": {"duplicated": MIRROR_DUPLICATES}},
                        faults=[FAULT], seed=3, extra={"clusters": clusters_section(data)})
    write_verdict(d, doc)
    write_report(d)
    return d, data, doc


def test_series_join_source_acks_to_target_polls_by_id(mirrored):
    _, data, _ = mirrored
    m = data.mirror
    assert m is not None and m.topics == {"t": "source.t"}
    assert m.source_acked.values[-1] == 1000 and m.target_seen.values[-1] == 1000
    assert m.target_polled.values[-1] == 1000 + MIRROR_DUPLICATES
    assert m.duplicated == MIRROR_DUPLICATES
    assert data.offending_total == 0 and data.unseen.values[-1] == 0
    # before the kill 0.1 s; acknowledged during the outage (3-12 s): until 12 s
    assert m.lag_s[:300].max() == pytest.approx(0.099, abs=0.002)  # in acknowledgement order
    assert m.lag_s[300:].min() > 2.0 and 8.9 < m.lag_s.max() <= 9.0
    assert m.lag_quantile(0.5) == pytest.approx(4.0, abs=0.05)  # 300 x 0.1 s, 700 x 2-9 s
    during = (data.unseen.t > 4) & (data.unseen.t < 11)
    assert data.unseen.values[during].max() > 500


def test_timeline_rows_are_both_clusters_and_mirror_maker(mirrored):
    _, data, _ = mirrored
    rows = timeline_rows(data)
    assert rows == ["source node 1", "source node 2", "source node 3", "MirrorMaker 2",
                    "target node 1", "target node 2", "target node 3"]
    (span,) = fault_spans(data)
    assert (span["node"], span["kind"], span["start"], span["restore"], span["recovered"]) \
        == ("MirrorMaker 2", "kill", 3.0, 8.0, 12.0)


def test_verdict_clusters_section(mirrored):
    _, _, doc = mirrored
    c = doc["clusters"]
    assert c["source"]["kafka_version"] == "3.9.2" and c["target"]["kafka_version"] == "4.3.1"
    assert c["source"]["nodes"] == ["1", "2", "3"] and c["source"]["acked"] == 1000
    assert c["target"]["duplicated"] == MIRROR_DUPLICATES
    assert [e["kind"] for e in c["mirror_maker"]["events"]] == [
        "start", "kill", "start", "recovered"]
    assert [e["kind"] for e in c["target"]["events"] if e["node"]] == ["elect"]
    assert [e["kind"] for e in c["source"]["events"]] == ["start"]  # the producer
    assert c["mirror_maker"]["lag"]["lag_p50_s"] == pytest.approx(4.0, abs=0.05)
    over = c["over_time"]
    assert 0 < len(over) <= 130 and over[-1]["acked_source"] == 1000
    assert over[-1]["polled_target"] == 1000 + MIRROR_DUPLICATES


def test_report_html_shows_both_clusters_the_fault_and_the_lag(mirrored):
    d, _, _ = mirrored
    page = (d / "report.html").read_text()
    assert page.count("<svg") == 2
    assert "<h2>Clusters</h2>" in page
    for text in ("source node 1", "target node 3", "MirrorMaker 2",  # timeline rows
                 "kill (mirror-maker)",  # the fault bar
                 "Faults on both clusters and MirrorMaker 2",
                 "Source cluster: acknowledged; target cluster: polled",
                 "Mirror lag: acknowledged on the source to first polled on the target",
                 "1000 acknowledged", f"{MIRROR_DUPLICATES} id(s) duplicated",
                 "1 fault(s): kill at 3.0 s"):
        assert text in page, text
    assert "<td>mirror-maker</td><td>kill</td>" in page  # the events table names the side
