"""Availability of a case, from its history: how long clients made no progress, and what
the acknowledgements looked like before, during and after each fault window.

Progress is an acknowledgement (a send with status ``ok``, at its ``complete_ns``) or a
record a poll returned (``time_ns``); the first send's invocation starts the clock. A
*stretch* is the time between two consecutive progress points: nothing was acknowledged
and no poll progressed in it. A fault's window runs from its strike to every replica back
in sync (``recovered_ns``; else the restore, else the strike).

Each fault is judged on the longest stretch that overlaps its window, against what its
failure type declares it may cost (``Failure.availability``, an :class:`Allowance`): the
allowance of a victim that led a partition of the case or of one that did not, plus the
fault's downtime where the allowance says so, plus the cluster's follower lag bound (an
acks=all leader waits that long for a dead follower to leave the ISR), plus the whole window
when the case cannot write without the victim. Faults in effect together (a composed
failure, whose windows overlap) share their stretches: a fault's bound adds what every
fault whose window overlaps its own may cost, since either may have stopped progress for
its part of the stretch. A matrix's ``max_unavailable_s`` replaces all
of that with one bound, which also judges every stretch outside fault windows; a case
without faults and without that key records its figures and is not judged.

The tables are read by ``checker.arrow`` (what the checker accepts, refused in the same one
line); the computation is a sort and a difference over the progress times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..faults.failure import Allowance
from ..faults.registry import COMPONENT_TARGETS, FAILURES
from ..history import EVENTS, POLLS, SENDS
from .checker.arrow import read_arrow, time_origin_ns

DEFAULT_LAG_BOUND_MS = 30_000  # Kafka's replica.lag.time.max.ms, when the record names none
KEY = "availability"  # verdict.json's key


def _progress(run_dir: Path) -> dict[str, Any]:
    """Progress times (ns, sorted), acknowledgement times and their latencies, and the
    history's first time (the report's timeline origin)."""
    import numpy as np
    import pyarrow.compute as pc

    sends = read_arrow(run_dir, SENDS, True)
    polls = read_arrow(run_dir, POLLS)
    events = read_arrow(run_dir, EVENTS)
    ok = sends.filter(pc.equal(sends["status"], "ok"))
    ack_ns = ok["complete_ns"].to_numpy().astype(np.int64)
    latency = ack_ns - ok["invoke_ns"].to_numpy().astype(np.int64)
    order = np.argsort(ack_ns, kind="stable")
    ack_ns, latency = ack_ns[order], latency[order]
    poll_ns = polls["time_ns"].to_numpy().astype(np.int64)
    invoked = sends["invoke_ns"].to_numpy().astype(np.int64)
    t0 = time_origin_ns(sends, polls, events)
    first = [int(invoked.min())] if len(invoked) else []
    points = np.unique(np.concatenate([ack_ns, poll_ns, np.array(first, dtype=np.int64)]))
    return {"t0": t0, "points": points, "ack_ns": ack_ns, "latency_ns": latency}


def _window(fault: dict[str, Any]) -> tuple[int, int] | None:
    start = fault.get("strike_ns")
    if start is None:
        return None
    end = fault.get("recovered_ns") or fault.get("restore_ns") or start
    return int(start), int(max(end, start))


def _longest(points, lo: int | None, hi: int | None, clip: bool) -> tuple[float, int | None]:
    """The longest stretch between consecutive ``points`` that overlaps ``[lo, hi]`` (None:
    unbounded), in seconds, and its start; ``clip`` counts only its part inside."""
    import numpy as np

    if len(points) < 2:
        return 0.0, None
    a, b = points[:-1], points[1:]
    mask = np.ones(len(a), dtype=bool)
    if lo is not None:
        mask &= b > lo
    if hi is not None:
        mask &= a < hi
    if not mask.any():
        return 0.0, None
    a, b = a[mask], b[mask]
    if clip:
        a = np.maximum(a, lo) if lo is not None else a
        b = np.minimum(b, hi) if hi is not None else b
    i = int(np.argmax(b - a))
    return float(b[i] - a[i]) / 1e9, int(a[i])


def _segment(data: dict[str, Any], phase: str, fault: int | None, lo: int | None,
             hi: int | None) -> dict[str, Any]:
    """One stretch of the timeline: its acknowledgements, their rate and latency, and its
    longest stretch without progress (the part inside it)."""
    import numpy as np

    acks, latency = data["ack_ns"], data["latency_ns"]
    points, t0 = data["points"], data["t0"]
    lo_ns = lo if lo is not None else (int(points[0]) if len(points) else t0)
    hi_ns = hi if hi is not None else (int(points[-1]) if len(points) else t0)
    inside = (acks >= lo_ns) & (acks <= hi_ns)
    lat_ms = latency[inside] / 1e6
    length_s = max(hi_ns - lo_ns, 0) / 1e9
    gap, since = _longest(points, lo_ns, hi_ns, clip=True)
    out: dict[str, Any] = {
        "phase": phase, "fault": fault, "from_s": round((lo_ns - t0) / 1e9, 3),
        "to_s": round((hi_ns - t0) / 1e9, 3), "acks": int(inside.sum()),
        "ack_rate": round(int(inside.sum()) / length_s, 3) if length_s > 0 else None,
        "unavailable_s": round(gap, 3),
        "stretch_from_s": None if since is None else round((since - t0) / 1e9, 3)}
    has = len(lat_ms) > 0
    for name, q in (("p50", 50), ("p99", 99)):
        out[f"latency_{name}_ms"] = round(float(np.percentile(lat_ms, q)), 3) if has else None
    out["latency_max_ms"] = round(float(lat_ms.max()), 3) if has else None
    return out


def segments(data: dict[str, Any], windows: list[tuple[int, int, int]]) -> list[dict[str, Any]]:
    """Before the first fault, during each, after each (until the next strike)."""
    if not windows:
        return [_segment(data, "whole", None, None, None)]
    out = [_segment(data, "before", None, None, windows[0][1])]
    for k, (index, start, end) in enumerate(windows):
        out.append(_segment(data, "during", index, start, end))
        nxt = windows[k + 1][1] if k + 1 < len(windows) else None
        if nxt is None or nxt > end:  # a fault overlapping this one: no "after" between
            out.append(_segment(data, "after", index, end, nxt))
    return out


def cannot_write_without_one(params: dict[str, Any]) -> bool:
    """Replication factor 1, or acks=all with min ISR above the replicas one loss leaves."""
    rf = params.get("replication_factor") or 3
    return rf <= 1 or (params.get("acks") == -1
                       and (params.get("min_insync_replicas") or 1) > rf - 1)


def allowed_s(fault: dict[str, Any], params: dict[str, Any]) -> float:
    """What ``fault`` may cost (see the module docstring)."""
    failure = FAILURES.get(str(fault.get("failure")))
    # a failure this version does not know: the most generous default
    allowance = failure.availability if failure is not None else Allowance()
    led = (fault.get("target") == "leader" or fault.get("led_before") is None
           or bool(fault.get("led_before")) or fault.get("node") == fault.get("leader_before"))
    bound = allowance.allowed_s(led, fault.get("fault_s"))
    lag_ms = fault.get("lag_bound_ms")
    bound += (lag_ms if isinstance(lag_ms, int) and lag_ms >= 0 else DEFAULT_LAG_BOUND_MS) / 1e3
    window = _window(fault)
    if window and cannot_write_without_one(params):
        bound += (window[1] - window[0]) / 1e9
    return round(bound, 3)


def overlapping(fault: dict[str, Any], faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The other faults whose windows overlap ``fault``'s (a composed failure's parts)."""
    own = _window(fault)
    if own is None:
        return []
    return [f for f in faults if f is not fault and (w := _window(f)) is not None
            and w[0] < own[1] and own[0] < w[1]]


def allowed_together_s(fault: dict[str, Any], faults: list[dict[str, Any]],
                       params: dict[str, Any]) -> float:
    """``allowed_s`` of ``fault`` plus that of each fault in effect with it."""
    return round(allowed_s(fault, params)
                 + sum(allowed_s(f, params) for f in overlapping(fault, faults)), 3)


def describe(fault: dict[str, Any]) -> str:
    """"fault #1: hard failure of follower node 2"."""
    target, node = fault.get("target"), fault.get("node")
    victim = str(node) if target in COMPONENT_TARGETS else f"{target} node {node}"
    return f"fault #{fault.get('index')}: {fault.get('failure')} failure of {victim}"


def _stretch(gap: float, since: int | None, t0: int) -> str:
    start = "" if since is None else f" from {(since - t0) / 1e9:.1f} s"
    return f"no acknowledgement for {gap:.1f} s{start}"


def measure(run_dir: str | Path, faults: list[dict[str, Any]] | None,
            params: dict[str, Any] | None) -> dict[str, Any]:
    """verdict.json's ``availability``: the longest stretch, the segments, each fault's
    judged stretch and bound, and ``failures`` (one reason per bound exceeded)."""
    params = params or {}
    data = _progress(Path(run_dir))
    t0, points = data["t0"], data["points"]
    override = params.get("max_unavailable_s")
    windows = sorted((int(f.get("index") or i + 1), *w) for i, f in enumerate(faults or [])
                     if (w := _window(f)) is not None)
    gap, since = _longest(points, None, None, clip=False)
    judged, failures = [], []
    for f in faults or []:
        w = _window(f)
        if w is None:
            continue
        f_gap, f_since = _longest(points, w[0], w[1], clip=False)
        bound = (float(override) if override is not None
                 else allowed_together_s(f, faults or [], params))
        over = f_gap > bound
        judged.append({"fault": f.get("index"), "failure": f.get("failure"),
                       "unavailable_s": round(f_gap, 3),
                       "from_s": None if f_since is None else round((f_since - t0) / 1e9, 3),
                       "allowed_s": bound, "passed": not over})
        if over:
            failures.append(f"{_stretch(f_gap, f_since, t0)}, during {describe(f)}; "
                            f"allowed {bound:g} s")
    if override is not None and gap > float(override) and not failures:
        failures.append(f"{_stretch(gap, since, t0)}; allowed {float(override):g} s "
                        f"(max_unavailable_s)")
    return {"unavailable_s": round(gap, 3),
            "stretch_from_s": None if since is None else round((since - t0) / 1e9, 3),
            "judged": bool(judged) or override is not None, "bound_s": override,
            "faults": judged, "segments": segments(data, windows), "failures": failures}
