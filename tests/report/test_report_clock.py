"""The timeline shows a clock fault with its legend entry and the skew measured per node."""

from __future__ import annotations

import pyarrow.json  # noqa: F401  (loaded at collection; see tests/unit/test_tradeoffs.py)

from pytest_kreplica.faults.registry import FAILURES
from pytest_kreplica.history import RunWriter
from pytest_kreplica.report.data import load
from pytest_kreplica.report.plots import fault_spans, timeline_svg

from .synthetic import T0, S, make_run


def test_the_measured_skew_is_on_the_timeline_per_node(tmp_path):
    make_run(tmp_path, messages=200)
    with RunWriter(tmp_path) as w:
        w.event("clock_skew", node="2", role="leader", time_ns=T0 + 1 * S,
                detail="fault #1: clock_skew failure of the leader (node 2); t-0 leader 2 "
                       "isr [1, 2, 3]; measured: skew +60.1 s (requested +60 s)")
        w.event("clock-reset", node="2", role="leader", time_ns=T0 + 4 * S, detail="restore")
        w.event("recovered", node="2", role="leader", time_ns=T0 + 5 * S, detail="in sync")
        w.event("clock_strobe", node="3", role="follower", time_ns=T0 + 6 * S,
                detail="fault #2: ...; measured: skew +0.0..+60.0 s (requested +0 / +60 s, "
                       "flipped every 2 s; 17 reads)")
        w.event("clock-reset", node="3", role="follower", time_ns=T0 + 9 * S, detail="x")
    data = load(tmp_path)
    spans = [s for s in fault_spans(data) if s["kind"].startswith("clock")]  # make_run's own too
    assert [(s["node"], s["skew"]) for s in spans] == [("node 2", "+60.1 s"),
                                                        ("node 3", "+0.0..+60.0 s")]
    assert spans[0]["restore"] is not None and spans[1]["restore"] is not None
    svg = timeline_svg(data)
    assert "skew +60.1 s" in svg and "skew +0.0..+60.0 s" in svg
    assert FAILURES["clock_skew"].label in svg and FAILURES["clock_strobe"].label in svg
