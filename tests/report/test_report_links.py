"""The timeline marks the ISR changes a link fault's watch recorded (``isr`` events)."""

from __future__ import annotations

import pyarrow.json  # noqa: F401  (loaded at collection; see tests/unit/test_tradeoffs.py)

from pytest_kreplica.history import RunWriter
from pytest_kreplica.report.data import load
from pytest_kreplica.report.plots import timeline_svg

from .synthetic import T0, S, make_run


def test_isr_changes_are_on_the_timeline(tmp_path):
    make_run(tmp_path, messages=200)
    with RunWriter(tmp_path) as w:
        w.event("one_way_partition", node="3", role="leader", time_ns=T0 + 1 * S,
                detail="fault #1: ...; measured: toward the node no answer in 2 s")
        w.event("isr", node="3", time_ns=T0 + 3 * S, detail="t-0 isr [1, 2, 3] -> [3] (leader 3)")
        w.event("heal", node="3", role="leader", time_ns=T0 + 5 * S, detail="restore")
        w.event("isr", node="3", time_ns=T0 + 6 * S,
                detail="t-0 isr [3] -> [1, 2, 3] (leader 3)")
        w.event("recovered", node="3", role="leader", time_ns=T0 + 6 * S, detail="in sync")
    svg = timeline_svg(load(tmp_path))
    assert "isr 1" in svg and "isr 3" in svg
    assert "one-way partition" in svg  # the registry's legend label
