"""Plots for report.html, drawn with matplotlib and returned as inline SVG text so the page
is one self-contained file. Every plot shares the time axis (seconds since the run began)
and shades the faults, so a rise in unseen messages lines up with the fault that caused it."""

from __future__ import annotations

import io
import re
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from ..faults import RESTORE_EVENTS, STRIKE_EVENTS  # noqa: E402
from .data import RunData  # noqa: E402

WIDTH_IN = 10.5
LEFT, RIGHT = 0.09, 0.98  # shared margins: the plots' time axes line up on the page


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg")  # no tight bbox: every plot keeps the same x extent
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype: inline in HTML


MIRROR_ROW = "MirrorMaker 2"
SCATTER_BINS = 1500  # a per-message scatter keeps each bin's extremes: an hours-long soak's


def extremes(t: np.ndarray, v: np.ndarray, bins: int = SCATTER_BINS
             ) -> tuple[np.ndarray, np.ndarray]:
    """At most ``2 * bins`` points of a time-sorted scatter: each time bin's lowest and
    highest value (a spike survives; the quantile lines use every point). An hour of
    acknowledgements drawn one by one made an SVG of tens of megabytes."""
    if len(t) <= 2 * bins:
        return t, v
    edges = np.linspace(t[0], t[-1], bins + 1)
    which = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, bins - 1)
    starts = np.flatnonzero(np.r_[True, which[1:] != which[:-1]])
    ends = np.r_[starts[1:], len(t)]
    keep = []
    for a, b in zip(starts, ends, strict=True):
        chunk = v[a:b]
        low, high = a + int(np.argmin(chunk)), a + int(np.argmax(chunk))
        keep.extend(sorted({low, high}))
    index = np.asarray(keep)
    return t[index], v[index]


def row_of(event: dict[str, Any]) -> str | None:
    """The timeline row an event belongs to: ``node N`` in a one-cluster run, ``source node
    N`` / ``target node N`` when the event names its cluster, the MirrorMaker 2 row for
    the component between two clusters; None for client events (no node)."""
    node = event.get("node")
    if node is None:
        return None
    if node == "mirror-maker" or event.get("role") == "mirror-maker":
        return MIRROR_ROW
    cluster = event.get("cluster")
    return f"{cluster} node {node}" if cluster else f"node {node}"


def timeline_rows(data: RunData) -> list[str]:
    """Every node of the run's cluster(s), top to bottom: a mirrored run shows the source's
    nodes, then MirrorMaker 2, then the target's nodes."""
    cluster = data.run.get("cluster", {}) or {}
    if data.mirrored:
        rows = [f"source node {n}" for n in _sorted_ids((cluster.get("source") or {})
                                                          .get("nodes", {}))]
        rows.append(MIRROR_ROW)
        rows += [f"target node {n}" for n in _sorted_ids((cluster.get("target") or {})
                                                           .get("nodes", {}))]
    else:
        rows = [f"node {n}" for n in _sorted_ids(cluster.get("nodes", {}))]
    seen = [r for e in data.events if (r := row_of(e)) is not None]
    for r in sorted(set(seen) - set(rows), key=lambda n: (len(n), n)):
        rows.append(r)
    return rows


def _sorted_ids(nodes: Any) -> list[str]:
    return sorted((str(n) for n in nodes or {}), key=lambda n: (len(n), n))


def fault_spans(data: RunData) -> list[dict[str, Any]]:
    """(row, kind, strike s, restore s, recovered s) per fault, paired from the events."""
    spans: list[dict[str, Any]] = []
    open_by_row: dict[str, dict[str, Any]] = {}
    for e in data.events:
        kind, row, t = e.get("kind"), row_of(e), data.seconds(e.get("time_ns"))
        if kind in STRIKE_EVENTS and row is not None:
            span = {"node": row, "kind": kind, "role": e.get("role"), "start": t,
                    "restore": None, "recovered": None, "skew": skew_of(e)}
            spans.append(span)
            open_by_row[row] = span
        elif kind in RESTORE_EVENTS and row in open_by_row:
            open_by_row[row]["restore"] = t
        elif kind == "recovered" and row in open_by_row:
            open_by_row.pop(row)["recovered"] = t
    for span in spans:
        if span["restore"] is None:
            span["restore"] = data.end_s
    return spans


SKEW = re.compile(r"measured: skew ([^;(]+? s)")


def skew_of(event: dict[str, Any]) -> str | None:
    """The clock skew a strike measured on its node ("+60.0 s"; clock faults), else None."""
    match = SKEW.search(event.get("detail") or "")
    return match.group(1) if match else None


def _shade(ax: Any, spans: list[dict[str, Any]]) -> None:
    for s in spans:
        ax.axvspan(s["start"], s["restore"], color=STRIKE_EVENTS[s["kind"]].colour,
                   alpha=0.12, lw=0)


def timeline_svg(data: RunData) -> str:
    """One row per node (per cluster, and MirrorMaker 2, in a mirrored run): bars while it
    was down or paused, a lighter tail until it had recovered, diamonds where a new leader
    was seen, triangles where a component was started; drain marked."""
    spans = fault_spans(data)
    nodes = timeline_rows(data)
    height = 0.55 * max(len(nodes), 1) + 1.9
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height))
    left = LEFT + (0.03 if data.mirrored else 0.0)
    fig.subplots_adjust(left=left, right=RIGHT, top=1 - 0.45 / height, bottom=1.15 / height)
    row = {n: len(nodes) - 1 - i for i, n in enumerate(nodes)}  # first row on top
    for s in spans:
        y = row[s["node"]]
        ax.barh(y, s["restore"] - s["start"], left=s["start"], height=0.5,
                color=STRIKE_EVENTS[s["kind"]].colour)
        if s["recovered"] is not None:
            ax.barh(y, s["recovered"] - s["restore"], left=s["restore"], height=0.5,
                    color=STRIKE_EVENTS[s["kind"]].colour, alpha=0.3)
        skew = f", skew {s['skew']}" if s.get("skew") else ""  # the node's measured clock
        ax.annotate(f"{s['kind']} ({s['role']}){skew}", (s["start"], y + 0.32), fontsize=8)
    started = False
    for e in data.events:
        t, r = data.seconds(e.get("time_ns")), row_of(e)
        if e.get("kind") == "elect" and r in row:
            controller = e.get("role") == "controller"
            ax.plot(t, row[r] + (0.18 if controller else 0), zorder=3, ms=7,
                    marker="s" if controller else "D",
                    color="#17becf" if controller else "#2ca02c")
        elif e.get("kind") == "isr" and r in row:  # a watched ISR changed (link faults)
            size = (e.get("detail") or "").rpartition("-> [")[2].split("]")[0].count(",") + 1
            ax.plot(t, row[r] - 0.2, zorder=3, ms=5, marker="|", color="#d62728")
            ax.annotate(f"isr {size}", (t, row[r] - 0.42), fontsize=6, color="#d62728")
        elif e.get("kind") == "start" and r == MIRROR_ROW and not any(
                s["node"] == r and s["restore"] == t for s in spans):
            ax.plot(t, row[r], zorder=3, ms=7, marker="^", color="#2ca02c")
            started = True
    drain = [data.seconds(e.get("time_ns")) for e in data.events
             if e.get("kind") in ("drain-start", "drain-end")]
    if drain:
        ax.axvspan(min(drain), max(max(drain), min(drain) + data.end_s / 400),
                   color="#7f7f7f", alpha=0.25, lw=0)
        ax.annotate("drain", (min(drain), 1.0), xycoords=("data", "axes fraction"),
                    fontsize=8, color="#555", ha="right", va="bottom")
    ax.set_yticks([row[n] for n in nodes], nodes)
    ax.set_ylim(-0.6, max(len(nodes), 1) - 0.2)
    ax.set_xlim(0, data.end_s)
    ax.set_xlabel("seconds since the run began")
    ax.grid(axis="x", alpha=0.3)
    legend = [Patch(color=f.colour, label=f.label) for k, f in STRIKE_EVENTS.items()
              if any(s["kind"] == k for s in spans)]
    legend.append(Patch(color="#bbbbbb", label="restored, catching up"))
    legend.append(plt.Line2D([], [], marker="D", color="#2ca02c", ls="", label="new leader"))
    if any(e.get("kind") == "elect" and e.get("role") == "controller" for e in data.events):
        legend.append(plt.Line2D([], [], marker="s", color="#17becf", ls="",
                                 label="new controller"))
    if started:
        legend.append(plt.Line2D([], [], marker="^", color="#2ca02c", ls="",
                                 label="MirrorMaker 2 started"))
    fig.legend(handles=legend, loc="lower center", ncol=6, fontsize=8, frameon=False)
    title = ("Faults on both clusters and MirrorMaker 2" if data.mirrored
             else "Faults and leader changes")
    ax.set_title(title, pad=14)
    return _svg(fig)


def _unseen_panel(ax, data: RunData, title: str) -> None:
    """Acknowledged but not yet consumed over time, and how many never were."""
    ax.step(data.unseen.t, data.unseen.values, where="post", color="#1f77b4", lw=1.4)
    ax.fill_between(data.unseen.t, data.unseen.values, step="post", alpha=0.15)
    ax.set_ylabel("unseen messages")
    ax.set_title(title)
    final = int(data.unseen.values[-1]) if len(data.unseen.values) else 0
    if final:
        ax.text(0.99, 0.95, f"{final} never consumed", transform=ax.transAxes,
                ha="right", va="top", color="#d62728", fontsize=10, fontweight="bold")


def _rate_panel(ax, data: RunData) -> None:
    t = data.acked_rate.t
    width = float(t[1] - t[0]) if len(t) > 1 else 1.0
    ax.bar(t, data.acked_rate.values, width=width, align="edge", color="#2ca02c", alpha=0.7)
    ax.set_ylabel("acks / s")
    ax.set_xlabel("seconds since the run began")


def _quantile_lines(ax, values: Any, unit: str) -> None:
    """The p50 (solid) and p99 (dashed) of ``values`` as lines, labelled in ``unit``."""
    for q, style in ((0.5, "-"), (0.99, "--")):
        value = float(np.quantile(values, q))
        ax.axhline(value, color="#555", lw=0.8, ls=style,
                   label=f"p{int(q * 100)} {unit.format(value)}")
    ax.legend(loc="upper left", fontsize=8, frameon=False)


def _latency_panel(ax, data: RunData) -> None:
    """Each acknowledgement's latency (invoke to ack) at its time: a fault's cost to the
    client, beside the stretches the availability verdict judges."""
    lat = data.ack_latency
    if len(lat.values):
        ax.plot(*extremes(lat.t, lat.values), ls="", marker=".", ms=2, color="#9467bd")
        _quantile_lines(ax, lat.values, "{:.0f} ms")
    ax.set_ylabel("ack latency\n(ms)")
    ax.set_title("Acknowledgement latency: send invoked to acknowledged, by acknowledgement "
                 "time")


def _finish_axes(axes, data: RunData, spans) -> None:
    """Faults shaded, a grid, the run's whole time range, counts from zero."""
    for ax in axes:
        _shade(ax, spans)
        ax.grid(alpha=0.3)
        ax.set_xlim(0, data.end_s)
        ax.set_ylim(bottom=0)


def series_svg(data: RunData) -> str:
    """Unseen (acknowledged, not yet consumed) and consumer lag, stacked, faults shaded."""
    if data.mirrored:
        return mirror_series_svg(data)
    spans = fault_spans(data)
    fig, (top, mid, late, low) = plt.subplots(
        4, 1, figsize=(WIDTH_IN, 9.0), sharex=True,
        gridspec_kw={"height_ratios": [3, 2, 2, 1.4]})
    _unseen_panel(top, data, "Acknowledged but not yet consumed (unseen)")
    mid.step(data.lag.t, data.lag.values, where="post", color="#ff7f0e", lw=1.4)
    mid.set_ylabel("consumer lag\n(offsets)")
    mid.set_title("Consumer lag: highest acknowledged minus highest polled offset")
    _latency_panel(late, data)
    _rate_panel(low, data)
    _finish_axes((top, mid, late, low), data, spans)
    fig.subplots_adjust(left=LEFT, right=RIGHT, top=0.96, bottom=0.06, hspace=0.4)
    return _svg(fig)


def mirror_series_svg(data: RunData) -> str:
    """A mirrored run across its clusters, faults shaded: acknowledged on the source against
    polled on the target, unseen, the mirror lag of every message, acks per second."""
    m = data.mirror
    spans = fault_spans(data)
    fig, (flow, top, mid, low) = plt.subplots(
        4, 1, figsize=(WIDTH_IN, 9.6), sharex=True,
        gridspec_kw={"height_ratios": [3, 2.2, 2.4, 1.4]})
    flow.step(m.source_acked.t, m.source_acked.values, where="post", color="#1f77b4", lw=1.4,
              label="acknowledged on the source")
    flow.step(m.target_seen.t, m.target_seen.values, where="post", color="#2ca02c", lw=1.4,
              label="polled on the target (distinct ids)")
    flow.step(m.target_polled.t, m.target_polled.values, where="post", color="#2ca02c",
              lw=0.9, ls="--", label="polled on the target (records, with duplicates)")
    flow.set_ylabel("messages")
    flow.set_title("Source cluster: acknowledged; target cluster: polled")
    flow.legend(loc="upper left", fontsize=8, frameon=False)
    _unseen_panel(top, data,
                  "Acknowledged on the source, not yet polled on the target (unseen)")
    if len(m.lag_s):
        mid.plot(*extremes(m.lag_at_s, m.lag_s), ls="", marker=".", ms=2, color="#ff7f0e")
        _quantile_lines(mid, m.lag_s, "{:.3f} s")
    mid.set_ylabel("mirror lag (s)")
    mid.set_title("Mirror lag: acknowledged on the source to first polled on the target, "
                  "by acknowledgement time")
    _rate_panel(low, data)
    _finish_axes((flow, top, mid, low), data, spans)
    fig.subplots_adjust(left=LEFT, right=RIGHT, top=0.96, bottom=0.06, hspace=0.38)
    return _svg(fig)
