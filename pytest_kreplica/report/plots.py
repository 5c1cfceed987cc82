"""Plots for report.html, drawn with matplotlib and returned as inline SVG text so the page
is one self-contained file. Every plot shares the time axis (seconds since the run began)
and shades the faults, so a rise in unseen messages lines up with the fault that caused it."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from .data import RunData  # noqa: E402

FAULT_COLOURS = {"kill": "#d62728", "terminate": "#ff7f0e", "pause": "#9467bd",
                 "partition": "#8c564b"}
RESTORE_KINDS = {"start", "resume", "heal"}
WIDTH_IN = 10.5
LEFT, RIGHT = 0.09, 0.98  # shared margins: the plots' time axes line up on the page


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg")  # no tight bbox: every plot keeps the same x extent
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype: inline in HTML


def fault_spans(data: RunData) -> list[dict[str, Any]]:
    """(node, kind, strike s, restore s, recovered s) per fault, paired from the events."""
    spans: list[dict[str, Any]] = []
    open_by_node: dict[str, dict[str, Any]] = {}
    for e in data.events:
        kind, node, t = e.get("kind"), e.get("node"), data.seconds(e.get("time_ns"))
        if kind in FAULT_COLOURS and node is not None:
            span = {"node": node, "kind": kind, "role": e.get("role"), "start": t,
                    "restore": None, "recovered": None}
            spans.append(span)
            open_by_node[node] = span
        elif kind in RESTORE_KINDS and node in open_by_node:
            open_by_node[node]["restore"] = t
        elif kind == "recovered" and node in open_by_node:
            open_by_node.pop(node)["recovered"] = t
    for span in spans:
        if span["restore"] is None:
            span["restore"] = data.end_s
    return spans


def _shade(ax: Any, spans: list[dict[str, Any]]) -> None:
    for s in spans:
        ax.axvspan(s["start"], s["restore"], color=FAULT_COLOURS[s["kind"]], alpha=0.12, lw=0)


def timeline_svg(data: RunData) -> str:
    """One row per node: bars while it was down or paused, a lighter tail until every
    replica was back in sync, diamonds where a new leader was seen; drain marked."""
    spans = fault_spans(data)
    nodes = sorted({s["node"] for s in spans}
                   | {e["node"] for e in data.events if e.get("kind") == "elect"
                      and e.get("node")}
                   | {str(n) for n in (data.run.get("cluster", {}) or {}).get("nodes", {})},
                   key=lambda n: (len(n), n))
    height = 0.55 * max(len(nodes), 1) + 1.9
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height))
    fig.subplots_adjust(left=LEFT, right=RIGHT, top=1 - 0.45 / height, bottom=1.15 / height)
    row = {n: i for i, n in enumerate(nodes)}
    for s in spans:
        y = row[s["node"]]
        ax.barh(y, s["restore"] - s["start"], left=s["start"], height=0.5,
                color=FAULT_COLOURS[s["kind"]])
        if s["recovered"] is not None:
            ax.barh(y, s["recovered"] - s["restore"], left=s["restore"], height=0.5,
                    color=FAULT_COLOURS[s["kind"]], alpha=0.3)
        ax.annotate(f"{s['kind']} ({s['role']})", (s["start"], y + 0.32), fontsize=8)
    for e in data.events:
        t = data.seconds(e.get("time_ns"))
        if e.get("kind") == "elect" and e.get("node") in row:
            controller = e.get("role") == "controller"
            ax.plot(t, row[e["node"]] + (0.18 if controller else 0), zorder=3, ms=7,
                    marker="s" if controller else "D",
                    color="#17becf" if controller else "#2ca02c")
    drain = [data.seconds(e.get("time_ns")) for e in data.events
             if e.get("kind") in ("drain-start", "drain-end")]
    if drain:
        ax.axvspan(min(drain), max(max(drain), min(drain) + data.end_s / 400),
                   color="#7f7f7f", alpha=0.25, lw=0)
        ax.annotate("drain", (min(drain), 1.0), xycoords=("data", "axes fraction"),
                    fontsize=8, color="#555", ha="right", va="bottom")
    ax.set_yticks(range(len(nodes)), [f"node {n}" for n in nodes])
    ax.set_ylim(-0.6, max(len(nodes), 1) - 0.2)
    ax.set_xlim(0, data.end_s)
    ax.set_xlabel("seconds since the run began")
    ax.grid(axis="x", alpha=0.3)
    legend = [Patch(color=c, label=k) for k, c in FAULT_COLOURS.items()
              if any(s["kind"] == k for s in spans)]
    legend.append(Patch(color="#bbbbbb", label="restored, catching up"))
    legend.append(plt.Line2D([], [], marker="D", color="#2ca02c", ls="", label="new leader"))
    if any(e.get("kind") == "elect" and e.get("role") == "controller" for e in data.events):
        legend.append(plt.Line2D([], [], marker="s", color="#17becf", ls="",
                                 label="new controller"))
    fig.legend(handles=legend, loc="lower center", ncol=6, fontsize=8, frameon=False)
    ax.set_title("Faults and leader changes", pad=14)
    return _svg(fig)


def series_svg(data: RunData) -> str:
    """Unseen (acknowledged, not yet consumed) and consumer lag, stacked, faults shaded."""
    spans = fault_spans(data)
    fig, (top, mid, low) = plt.subplots(3, 1, figsize=(WIDTH_IN, 7.2), sharex=True,
                                        gridspec_kw={"height_ratios": [3, 2, 1.4]})
    top.step(data.unseen.t, data.unseen.values, where="post", color="#1f77b4", lw=1.4)
    top.fill_between(data.unseen.t, data.unseen.values, step="post", alpha=0.15)
    top.set_ylabel("unseen messages")
    top.set_title("Acknowledged but not yet consumed (unseen)")
    final = int(data.unseen.values[-1]) if len(data.unseen.values) else 0
    if final:
        top.text(0.99, 0.95, f"{final} never consumed", transform=top.transAxes,
                 ha="right", va="top", color="#d62728", fontsize=10, fontweight="bold")
    mid.step(data.lag.t, data.lag.values, where="post", color="#ff7f0e", lw=1.4)
    mid.set_ylabel("consumer lag\n(offsets)")
    mid.set_title("Consumer lag: highest acknowledged minus highest polled offset")
    low.bar(data.acked_rate.t, data.acked_rate.values, width=1.0, align="edge",
            color="#2ca02c", alpha=0.7)
    low.set_ylabel("acks / s")
    low.set_xlabel("seconds since the run began")
    for ax in (top, mid, low):
        _shade(ax, spans)
        ax.grid(alpha=0.3)
        ax.set_xlim(0, data.end_s)
        ax.set_ylim(bottom=0)
    fig.subplots_adjust(left=LEFT, right=RIGHT, top=0.95, bottom=0.08, hspace=0.35)
    return _svg(fig)
