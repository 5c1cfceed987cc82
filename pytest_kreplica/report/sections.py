"""The sections of one case's report.html, top to bottom, each from the case's history
(``data.load``) and its verdict.json: ``html.render_report`` lists them in order."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from ..faults.registry import STRIKE_EVENTS
from ..rundir import HISTORY_FILES
from ..validation.checker.anomalies import ANOMALIES, LOOKUP_COUNTS, NAMES, report_class
from ..validation.replicas.verify import INVALIDATING as REPLICA_INVALIDATING
from .data import clusters_section
from .markup import CSS, badge, escape, kv, rounded, table
from .plots import series_svg, timeline_svg

# the checker's anomalies, then the replica look-up's split of lost + unseen; a non-zero count
# is red where it breaks the case's semantics, amber where it is only reported (``anomalies``)
REPORTED = (*NAMES, *LOOKUP_COUNTS)
TXN_COUNTS = ("aborted_read", "precommitted_read", "lost_committed", "torn_transaction",
              "copied_twice", "uncopied", "not_copied", "read_cycle", "write_cycle",
              "mixed_cycle", "ru_aborted_read", "ru_precommitted_read")
TXN_HIGHLIGHT = ("aborted_read", "precommitted_read", "lost_committed", "torn_transaction",
                 "copied_twice", "uncopied", "not_copied", "read_cycle")


def semantics_of(data: Any, verdict: dict[str, Any]) -> str:
    return verdict.get("semantics") or data.run.get("semantics") or "at-least-once"


def parameters_of(data: Any, verdict: dict[str, Any]) -> dict[str, Any]:
    return verdict.get("parameters") or data.run.get("parameters") or {}


def client_text(client: Any) -> str:
    """`` client <b>java 4.3.1</b>``: run.json's ``client`` (absent in older runs)."""
    if not isinstance(client, dict) or not client.get("name"):
        return ""
    return (f" &nbsp; client <b>{escape(client['name'])}</b> "
            f"<code>{escape(client.get('version') or '')}</code>")


def head(data: Any, verdict: dict[str, Any], run_dir: Path) -> list[str]:
    """Title, outcome badges, semantics, seed and how to replay it."""
    case = verdict.get("case") or data.run.get("case") or run_dir.name
    params = parameters_of(data, verdict)
    passed = verdict.get("passed") if verdict else None
    label = ("PASSED" if passed else "FAILED") if passed is not None else "NOT CHECKED"
    valid = verdict.get("valid")
    seed = verdict.get("seed", params.get("seed"))
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(case)}"
             f"</title><style>{CSS}</style></head><body>",
             f"<h1>{escape(case)}</h1>",
             f"<p>{badge(passed, label)} &nbsp; history "
             f"{badge(valid, 'valid' if valid else 'invalid') if valid is not None else ''}"
             f" under <b>{escape(semantics_of(data, verdict))}</b> &nbsp; seed "
             f"<code>{escape(seed)}</code>"
             f"{client_text(data.run.get('client'))}"
             f" &nbsp; <span class='muted'>{data.end_s:.1f} s of history</span></p>"]
    if seed is not None:
        parts.append(f"<p class='muted'>Replay: run the same case id again; its fault "
                     f"schedule comes from seed {escape(seed)} (matrix dimension "
                     f"<code>seed</code>). The nodes hit follow the cluster's roles at the "
                     f"moment of each fault.</p>")
    return parts


def tradeoff(verdict: dict[str, Any]) -> list[str]:
    """The loss trade-off's decision, its evidence and refusals; why the case did not pass."""
    parts = []
    found = verdict.get("tradeoff")
    if found:
        cls = "warn" if found.get("accepted") else "bad"
        title = "Accepted trade-off" if found.get("accepted") else "Not a trade-off"
        parts.append(f"<p class='{cls}'>{title}: {escape(found.get('reason'))}.</p>")
        evidence = found.get("evidence") or []
        if evidence:
            parts.append("<h2>Loss evidence</h2><p class='muted'>The recorded faults that "
                         "explain each lost acknowledged record (docs: failures.md, "
                         "\"Loss and its evidence\").</p>")
            parts.append(table([{
                "fault": f"#{e.get('fault')} {e.get('failure')} {e.get('target')}",
                "event": e.get("kind"), "partition": f"{e.get('topic')}-{e.get('partition')}",
                "leader": f"{e.get('leader_before')} -> {e.get('new_leader')}",
                "isr before": e.get("isr_before"), "records excused": e.get("excused"),
                "why": e.get("why")} for e in evidence]))
        for line in found.get("refused") or []:
            parts.append(f"<p class='bad'>Refused: {escape(line)}</p>")
    passed = verdict.get("passed") if verdict else None
    if passed is False and verdict.get("reason"):
        parts.append(f"<p class='bad'>Not passed: {escape(verdict['reason'])}</p>")
    return parts


def checks(verdict: dict[str, Any]) -> list[str]:
    found = verdict.get("checks") or []
    if not found:
        return []
    return ["<h2>Scenario checks</h2>",
            table([{"check": c["name"], "result": "ok" if c["ok"] else "FAILED",
                    "detail": c.get("detail")} for c in found])]


def availability(verdict: dict[str, Any]) -> list[str]:
    """verdict.json's ``availability``: each fault's longest stretch without progress
    against its bound, and the acknowledgements before, during and after each window."""
    found = verdict.get("availability")
    if not found:
        return []
    judged = "judged" if found.get("judged") else "not judged (no fault, no max_unavailable_s)"
    parts = ["<h2>Availability</h2>",
             f"<p class='muted'>Longest stretch with neither an acknowledgement nor a poll "
             f"progressing: {escape(found.get('unavailable_s'))} s from "
             f"{escape(found.get('stretch_from_s'))} s; {judged} (docs: failures.md, "
             f"\"Availability\").</p>"]
    parts.extend(f"<p class='bad'>{escape(r)}</p>" for r in found.get("failures") or [])
    if found.get("faults"):
        parts.append(table([{"fault": f"#{f.get('fault')} {f.get('failure')}",
                             "longest stretch (s)": f.get("unavailable_s"),
                             "from (s)": f.get("from_s"), "allowed (s)": f.get("allowed_s"),
                             "result": "ok" if f.get("passed") else "OVER"}
                            for f in found["faults"]]))
    parts.append(table([{"phase": s.get("phase") + (f" #{s['fault']}" if s.get("fault")
                                                    else ""),
                         "from (s)": s.get("from_s"), "to (s)": s.get("to_s"),
                         "acks": s.get("acks"), "acks/s": s.get("ack_rate"),
                         "latency p50 (ms)": s.get("latency_p50_ms"),
                         "p99 (ms)": s.get("latency_p99_ms"), "max (ms)": s.get("latency_max_ms"),
                         "longest stretch (s)": s.get("unavailable_s")}
                        for s in found.get("segments") or []]))
    return parts


def counts(data: Any, verdict: dict[str, Any]) -> list[str]:
    """What was sent and read, every anomaly counted, the replica logs' verdict; then the
    clusters of a mirrored case."""
    semantics = semantics_of(data, verdict)
    counted = {**data.counts, **{k: v for k, v in verdict.get("counts", {}).items()}}
    parts = ["<h2>Counts</h2><div class='grid'>"]
    parts.append(kv({k: counted[k] for k in ("sent", "acked", "failed", "indeterminate",
                                             "polled", "never_consumed") if k in counted}))
    parts.append(kv({ANOMALIES[k].label if k in ANOMALIES else k: counted[k]
                     for k in REPORTED if k in counted},
                    highlight=tuple(ANOMALIES[k].label for k in NAMES
                                    if report_class(k, semantics) == "bad"),
                    warn=tuple(ANOMALIES[k].label if k in ANOMALIES else k
                               for k in REPORTED)))
    replicas = verdict.get("replicas")
    if replicas:
        parts.append(kv({"replica logs valid": replicas.get("valid"),
                         **{k: v for k, v in (replicas.get("counts") or {}).items()}},
                        highlight=REPLICA_INVALIDATING))
    parts.append("</div>")
    if data.mirrored:
        parts.append(clusters(data, verdict))
    return parts


def timeline(data: Any, verdict: dict[str, Any]) -> list[str]:
    """The timeline plot, the faults struck, and the unseen / lag (or mirror) plot."""
    parts = ["<h2>Timeline</h2>", timeline_svg(data)]
    faults = verdict.get("faults") or []
    if faults:
        parts.append(table(
            [{"#": f["index"], "failure": f["failure"], "target": f["target"],
              "node": f.get("node"),
              "partition": (f"{f['topic']}-{f['partition']}" if f.get("topic") is not None
                            else None),
              "leader before": f.get("leader_before"), "ISR before": f.get("isr_before"),
              "new leader": f.get("new_leader"), "election s": f.get("election_s"),
              "new leader was in ISR": f.get("elected_from_isr"),
              "down s": rounded(f.get("fault_s")), "recovery s": rounded(f.get("recovery_s")),
              "overlaps": (f"#{f['overlaps']} for {f.get('overlap_s')} s"
                           if f.get("overlaps") is not None else None),
              "note": f.get("error") or f.get("election_note")} for f in faults]))
    parts.append("<h2>Source acknowledged, target polled, mirror lag</h2>" if data.mirrored
                 else "<h2>Unseen messages and consumer lag</h2>")
    parts.append(series_svg(data))
    return parts


def offending(data: Any) -> list[str]:
    """The acknowledged ids never consumed (the first of them when there are many)."""
    parts = ["<h2>Offending ids</h2>"]
    total = data.offending_total
    if not total:
        return [*parts, "<p>Every acknowledged message was consumed.</p>"]
    listed = len(data.offending)
    parts.append(f"<p class='bad'>{total} acknowledged message(s) were never consumed "
                 f"({data.counts['never_consumed_lost']} lost: a consumer read past "
                 f"their offset; the rest unseen)"
                 f"{'; the first ' + str(listed) + ' are listed' if total > listed else ''}"
                 f".</p>")
    parts.append(table(data.offending, ["id", "topic", "partition", "offset", "kind",
                                        "acked_at_s"]))
    return parts


def transactions(verdict: dict[str, Any]) -> list[str]:
    """A transactional history's counts (history version 2, docs/history.md), then the
    checker's examples of each anomaly."""
    parts = []
    counted = verdict.get("counts") or {}
    if "txns_committed" in counted:
        parts.append("<h2>Transactions</h2>")
        parts.append(kv({"committed": counted["txns_committed"],
                         "aborted": counted.get("txns_aborted", 0),
                         "indeterminate": counted.get("txns_info", 0),
                         **{name: counted.get(name, 0) for name in TXN_COUNTS}},
                        highlight=TXN_HIGHLIGHT))
    examples = {k: v for k, v in (verdict.get("examples") or {}).items() if v}
    for anomaly, rows in examples.items():
        rows = rows if isinstance(rows, list) else [rows]
        parts.append(f"<h3>{escape(anomaly)} (checker examples)</h3>")
        parts.append(table([r if isinstance(r, dict) else {"value": r} for r in rows]))
    return parts


def setup(data: Any, verdict: dict[str, Any]) -> list[str]:
    """Phase times, the case's parameters and the fault schedule drawn from its seed."""
    parts = []
    phases = verdict.get("phases") or {}
    if phases:
        parts.append("<h2>Phases</h2>")
        parts.append(kv({k: f"{v:.2f} s" if isinstance(v, int | float) else v
                         for k, v in phases.items()}))
    parts.append("<h2>Parameters</h2>")
    parts.append(kv(parameters_of(data, verdict)))
    plan = verdict.get("fault_plan")
    if plan:
        parts.append("<details><summary>Fault schedule from the seed</summary>")
        parts.append(table(plan.get("schedule") or []))
        parts.append("</details>")
    return parts


def events(data: Any) -> list[str]:
    return ["<h2>Events</h2><details><summary>"
            f"{len(data.events)} events</summary>",
            table([{"t s": rounded(data.seconds(e.get("time_ns"))),
                    **({"cluster": e.get("cluster") or (
                        "mirror-maker" if e.get("node") == "mirror-maker" else None)}
                       if data.mirrored else {}),
                    "kind": e.get("kind"), "node": e.get("node"),
                    "role": e.get("role"), "process": e.get("process"),
                    "detail": e.get("detail")} for e in data.events]),
            "</details>"]


def files(run_dir: Path) -> list[str]:
    """Links to the history files beside the report, and when it was made."""
    found = [f for f in HISTORY_FILES if (run_dir / f).exists()]
    return ["<h2>Files</h2><p>" + " · ".join(
                f"<a href='{escape(f)}'>{escape(f)}</a>" for f in found) + "</p>",
            f"<p class='muted'>generated {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M:%S} "
            f"UTC by pytest-kreplica</p></body></html>"]


def clusters(data: Any, verdict: dict[str, Any]) -> str:
    """One row per cluster and one for MirrorMaker 2 between them: version, nodes, what
    went in and came out, faults, mirror lag."""
    section = verdict.get("clusters")
    if not section or "source" not in section:  # absent, or its computation failed
        section = clusters_section(data)
    src, tgt, mm = section["source"], section["target"], section["mirror_maker"]
    lag = mm.get("lag") or {}
    faults = [e for e in mm["events"] if e["kind"] in STRIKE_EVENTS]

    def nodes(side: dict[str, Any]) -> str:
        return ", ".join(side.get("nodes") or []) or "?"

    rows = [
        {"cluster": "source", "Kafka": src.get("kafka_version") or "default",
         "nodes": nodes(src), "topics": ", ".join(src["topics"]),
         "what": f"{src['acked']} acknowledged", "node events":
             sum(1 for e in src["events"] if e.get("node") is not None)},
        {"cluster": "MirrorMaker 2", "Kafka": mm.get("kafka_version") or "default",
         "nodes": "mirror-maker",
         "topics": f"policy {mm.get('policy')}"
                   + (", exactly-once" if mm.get("exactly_once") else ""),
         "what": f"lag p50 {lag.get('lag_p50_s')} s, p99 {lag.get('lag_p99_s')} s, "
                 f"max {lag.get('lag_max_s')} s",
         "node events": f"{len(faults)} fault(s): "
                        + (", ".join(f"{e['kind']} at {e['t_s']:.1f} s" for e in faults)
                           or "none")},
        {"cluster": "target", "Kafka": tgt.get("kafka_version") or "default",
         "nodes": nodes(tgt), "topics": ", ".join(tgt["topics"]),
         "what": f"{tgt['distinct_acked_polled']} acknowledged ids polled "
                 f"({tgt['polled_rows']} records, {tgt['duplicated']} id(s) duplicated)",
         "node events": sum(1 for e in tgt["events"] if e.get("node") is not None)},
    ]
    return "<h2>Clusters</h2>" + table(rows)
