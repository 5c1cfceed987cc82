"""report.html (one case) and index.html (every case of a run): plain, self-contained HTML
with inline SVG plots, readable offline and attachable to a CI run as a single file."""

from __future__ import annotations

import datetime as _dt
import html
import os
import tempfile
from pathlib import Path
from typing import Any

from ..faults.registry import STRIKE_EVENTS
from ..rundir import HISTORY_FILES, REPORT_HTML, VERDICT_JSON
from ..validation.checker.anomalies import ANOMALIES, LOOKUP_COUNTS, NAMES, report_class
from ..validation.replicas.verify import INVALIDATING as REPLICA_INVALIDATING
from .data import clusters_section, load
from .plots import series_svg, timeline_svg
from .verdict import read_verdict

REPORT_FILE = REPORT_HTML
INDEX_FILE = "index.html"

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:1180px;color:#222;padding:0 16px}
h1{font-size:1.5em;margin-bottom:4px}h2{font-size:1.15em;margin-top:28px;
border-bottom:1px solid #ddd;padding-bottom:4px}
.badge{display:inline-block;padding:3px 10px;border-radius:4px;color:#fff;font-weight:600}
.pass{background:#2e7d32}.accepted{background:#b26a00}.finding{background:#1565c0}.harness{background:#6a1b9a}.nowrap{white-space:nowrap}.fail{background:#c62828}.unknown{background:#757575}
table{border-collapse:collapse;font-size:0.9em;margin:6px 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#c62828;font-weight:600}.warn{color:#b26a00;font-weight:600}.muted{color:#777}.grid{display:flex;gap:28px;align-items:flex-start;
flex-wrap:wrap}code{background:#f4f4f4;padding:1px 4px;border-radius:3px}
svg{max-width:100%;height:auto}details summary{cursor:pointer;color:#1565c0}
"""

# the checker's anomalies, then the replica look-up's split of lost + unseen; a non-zero count
# is red where it breaks the case's semantics, amber where it is only reported (``anomalies``)
REPORTED = (*NAMES, *LOOKUP_COUNTS)


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _cell(value: Any) -> Any:
    """Positions (lists of {topic, partition, offset, ...}) as short text, not a dict dump."""
    if isinstance(value, list) and value and all(
            isinstance(v, dict) and "offset" in v for v in value):
        topics = {v.get("topic") for v in value}
        parts = []
        for v in value:
            where = f"p{v.get('partition')}@{v.get('offset')}"
            if len(topics) > 1:
                where = f"{v.get('topic')}/{where}"
            extra = ", ".join(f"{k} {v[k]}" for k in ("process", "poll", "status")
                              if v.get(k) is not None)
            parts.append(f"{where} ({extra})" if extra else where)
        return "; ".join(parts)
    return value


def _table(rows: list[dict[str, Any]], columns: list[str] | None = None,
           numeric: tuple[str, ...] = ()) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    columns = columns or list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(
            f'<td class="num">{_e(r.get(c))}</td>' if c in numeric or isinstance(
                r.get(c), int | float) else f"<td>{_e(_cell(r.get(c)))}</td>"
            for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _kv(pairs: dict[str, Any], highlight: tuple[str, ...] = (),
        warn: tuple[str, ...] = ()) -> str:
    def cls(k: str, v: Any) -> str:
        if not v or v is True:
            return ""
        return " bad" if k in highlight else (" warn" if k in warn else "")

    rows = "".join(f'<tr><th>{_e(k)}</th><td class="num{cls(k, v)}">{_e(v)}</td></tr>'
                   for k, v in pairs.items())
    return f"<table>{rows}</table>"


def _badge(passed: bool | None, label: str) -> str:
    cls = "unknown" if passed is None else ("pass" if passed else "fail")
    return f'<span class="badge {cls}">{_e(label)}</span>'


def _write_atomic(path: Path, text: str) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".html", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports are meant to be shared
    os.replace(tmp, path)
    return path


def render_report(run_dir: str | Path) -> str:
    run_dir = Path(run_dir)
    data = load(run_dir)
    verdict = read_verdict(run_dir) or {}
    run = data.run
    case = verdict.get("case") or run.get("case") or run_dir.name
    params = verdict.get("parameters") or run.get("parameters") or {}
    semantics = verdict.get("semantics") or run.get("semantics") or "at-least-once"
    passed = verdict.get("passed") if verdict else None
    label = ("PASSED" if passed else "FAILED") if passed is not None else "NOT CHECKED"
    valid = verdict.get("valid")

    counts = {**data.counts, **{k: v for k, v in verdict.get("counts", {}).items()}}
    faults = verdict.get("faults") or []
    seed = verdict.get("seed", params.get("seed"))
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(case)}"
             f"</title><style>{CSS}</style></head><body>",
             f"<h1>{_e(case)}</h1>",
             f"<p>{_badge(passed, label)} &nbsp; history "
             f"{_badge(valid, 'valid' if valid else 'invalid') if valid is not None else ''}"
             f" under <b>{_e(semantics)}</b> &nbsp; seed <code>{_e(seed)}</code>"
             f" &nbsp; <span class='muted'>{data.end_s:.1f} s of history</span></p>"]
    if seed is not None:
        parts.append(f"<p class='muted'>Replay: run the same case id again; its fault "
                     f"schedule comes from seed {_e(seed)} (matrix dimension "
                     f"<code>seed</code>). The nodes hit follow the cluster's roles at the "
                     f"moment of each fault.</p>")

    tradeoff = verdict.get("tradeoff")
    if tradeoff:
        cls = "warn" if tradeoff.get("accepted") else "bad"
        head = "Accepted trade-off" if tradeoff.get("accepted") else "Not a trade-off"
        parts.append(f"<p class='{cls}'>{head}: {_e(tradeoff.get('reason'))}.</p>")
        evidence = tradeoff.get("evidence") or []
        if evidence:
            parts.append("<h2>Loss evidence</h2><p class='muted'>The recorded faults that "
                         "explain each lost acknowledged record (docs: failures.md, "
                         "\"Loss and its evidence\").</p>")
            parts.append(_table([{
                "fault": f"#{e.get('fault')} {e.get('failure')} {e.get('target')}",
                "event": e.get("kind"), "partition": f"{e.get('topic')}-{e.get('partition')}",
                "leader": f"{e.get('leader_before')} -> {e.get('new_leader')}",
                "isr before": e.get("isr_before"), "records excused": e.get("excused"),
                "why": e.get("why")} for e in evidence]))
        for line in tradeoff.get("refused") or []:
            parts.append(f"<p class='bad'>Refused: {_e(line)}</p>")
    if passed is False and verdict.get("reason"):
        parts.append(f"<p class='bad'>Not passed: {_e(verdict['reason'])}</p>")
    checks = verdict.get("checks") or []
    if checks:
        parts.append("<h2>Scenario checks</h2>")
        parts.append(_table([{"check": c["name"], "result": "ok" if c["ok"] else "FAILED",
                              "detail": c.get("detail")} for c in checks]))

    parts.append("<h2>Counts</h2><div class='grid'>")
    parts.append(_kv({k: counts[k] for k in ("sent", "acked", "failed", "indeterminate",
                                              "polled", "never_consumed") if k in counts}))
    parts.append(_kv({ANOMALIES[k].label if k in ANOMALIES else k: counts[k]
                      for k in REPORTED if k in counts},
                     highlight=tuple(ANOMALIES[k].label for k in NAMES
                                     if report_class(k, semantics) == "bad"),
                     warn=tuple(ANOMALIES[k].label if k in ANOMALIES else k
                                for k in REPORTED)))
    replicas = verdict.get("replicas")
    if replicas:
        parts.append(_kv({"replica logs valid": replicas.get("valid"),
                          **{k: v for k, v in (replicas.get("counts") or {}).items()}},
                         highlight=REPLICA_INVALIDATING))
    parts.append("</div>")
    if data.mirrored:
        parts.append(_clusters_html(data, verdict))

    parts.append("<h2>Timeline</h2>")
    parts.append(timeline_svg(data))
    if faults:
        parts.append(_table(
            [{"#": f["index"], "failure": f["failure"], "target": f["target"],
              "node": f.get("node"),
              "partition": (f"{f['topic']}-{f['partition']}" if f.get("topic") is not None
                            else None),
              "leader before": f.get("leader_before"), "ISR before": f.get("isr_before"),
              "new leader": f.get("new_leader"), "election s": f.get("election_s"),
              "new leader was in ISR": f.get("elected_from_isr"),
              "down s": _round(f.get("fault_s")), "recovery s": _round(f.get("recovery_s")),
              "note": f.get("error") or f.get("election_note")} for f in faults]))
    parts.append("<h2>Source acknowledged, target polled, mirror lag</h2>" if data.mirrored
                 else "<h2>Unseen messages and consumer lag</h2>")
    parts.append(series_svg(data))

    parts.append("<h2>Offending ids</h2>")
    total = data.offending_total
    if total:
        parts.append(f"<p class='bad'>{total} acknowledged message(s) were never consumed "
                     f"({data.counts['never_consumed_lost']} lost: a consumer read past "
                     f"their offset; the rest unseen)"
                     f"{'; the first ' + str(len(data.offending)) + ' are listed' if total > len(data.offending) else ''}"  # noqa: E501
                     f".</p>")
        parts.append(_table(data.offending, ["id", "topic", "partition", "offset", "kind",
                                             "acked_at_s"]))
    else:
        parts.append("<p>Every acknowledged message was consumed.</p>")
    counts = verdict.get("counts") or {}
    if "txns_committed" in counts:  # history version 2 (docs/history.md)
        parts.append("<h2>Transactions</h2>")
        parts.append(_kv({"committed": counts["txns_committed"],
                          "aborted": counts.get("txns_aborted", 0),
                          "indeterminate": counts.get("txns_info", 0),
                          **{name: counts.get(name, 0) for name in
                             ("aborted_read", "precommitted_read", "lost_committed",
                              "torn_transaction", "copied_twice", "uncopied", "not_copied",
                              "read_cycle", "write_cycle", "mixed_cycle",
                              "ru_aborted_read", "ru_precommitted_read")}},
                        highlight=("aborted_read", "precommitted_read", "lost_committed",
                                   "torn_transaction", "copied_twice", "uncopied",
                                   "not_copied", "read_cycle")))
    examples = {k: v for k, v in (verdict.get("examples") or {}).items() if v}
    for anomaly, rows in examples.items():
        rows = rows if isinstance(rows, list) else [rows]
        parts.append(f"<h3>{_e(anomaly)} (checker examples)</h3>")
        parts.append(_table([r if isinstance(r, dict) else {"value": r} for r in rows]))

    phases = verdict.get("phases") or {}
    if phases:
        parts.append("<h2>Phases</h2>")
        parts.append(_kv({k: f"{v:.2f} s" if isinstance(v, int | float) else v
                          for k, v in phases.items()}))
    parts.append("<h2>Parameters</h2>")
    parts.append(_kv(params))
    plan = verdict.get("fault_plan")
    if plan:
        parts.append("<details><summary>Fault schedule from the seed</summary>")
        parts.append(_table(plan.get("schedule") or []))
        parts.append("</details>")
    parts.append("<h2>Events</h2><details><summary>"
                 f"{len(data.events)} events</summary>")
    parts.append(_table([{"t s": _round(data.seconds(e.get("time_ns"))),
                          **({"cluster": e.get("cluster") or (
                              "mirror-maker" if e.get("node") == "mirror-maker" else None)}
                             if data.mirrored else {}),
                          "kind": e.get("kind"), "node": e.get("node"),
                          "role": e.get("role"), "process": e.get("process"),
                          "detail": e.get("detail")} for e in data.events]))
    parts.append("</details>")
    files = [f for f in HISTORY_FILES if (run_dir / f).exists()]
    parts.append("<h2>Files</h2><p>" + " · ".join(
        f"<a href='{_e(f)}'>{_e(f)}</a>" for f in files) + "</p>")
    parts.append(f"<p class='muted'>generated {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M:%S} "
                 f"UTC by pytest-kreplica</p></body></html>")
    return "\n".join(parts)


def _clusters_html(data: Any, verdict: dict[str, Any]) -> str:
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
    return "<h2>Clusters</h2>" + _table(rows)


def _round(value: Any, ndigits: int = 2) -> Any:
    return round(value, ndigits) if isinstance(value, int | float) else value


def write_report(run_dir: str | Path) -> Path:
    """Render ``run_dir``'s report.html from its history and verdict.json."""
    run_dir = Path(run_dir)
    return _write_atomic(run_dir / REPORT_FILE, render_report(run_dir))


def index_columns(verdicts: list[dict[str, Any]]) -> list[str]:
    """The count columns of the index: sent, acked, the three anomalies every reader looks
    for, and every other anomaly the checker counted in any case of the page (a reordered
    send in an otherwise clean run shows here, not only in its verdict.json)."""
    fixed = ["sent", "acked", "lost", "unseen", "duplicated"]
    seen = {k for v in verdicts for k, n in (v.get("counts") or {}).items() if n}
    return fixed + [k for k in REPORTED if k in seen and k not in fixed]


def _count_class(name: str, value: Any, semantics: str | None) -> str:
    if not value or name in ("sent", "acked"):
        return ""
    return " " + report_class(name, semantics)


# a case's outcome in the index: an expected finding (matrix ``expected_findings``) and a
# harness error (verdict ``harness``: nothing judged) apart from a broker failure
INDEX_OUTCOMES = ("passed", "accepted", "failed", "expected finding", "finding not seen",
                  "harness error")
_INDEX_BADGES = {"passed": ("pass", "pass"), "accepted": ("accepted", "accepted"),
                 "failed": ("fail", "FAIL"), "expected finding": ("finding", "expected finding"),
                 "finding not seen": ("fail", "FAIL: finding not seen"),
                 "harness error": ("harness", "harness error")}


def index_outcome(v: dict[str, Any]) -> str:
    """One of ``INDEX_OUTCOMES`` for a case's verdict.json."""
    if v.get("harness"):
        return "harness error"
    passed = v.get("passed")
    if v.get("expected_finding"):
        return "finding not seen" if passed else "expected finding"
    if not passed:
        return "failed"
    accepted = v.get("valid") is False and (v.get("tradeoff") or {}).get("accepted")
    return "accepted" if accepted else "passed"


def _index_badge(v: dict[str, Any]) -> str:
    cls, label = _INDEX_BADGES[index_outcome(v)]
    title = v.get("expected_finding") or v.get("reason") or ""
    return f'<span class="badge {cls}" title="{_e(title)}">{_e(label)}</span>'


def write_index(root: str | Path) -> Path | None:
    """index.html in ``root`` linking every case directory below it that has a verdict."""
    root = Path(root)
    cases = sorted(p.parent for p in root.rglob(VERDICT_JSON))
    if not cases:
        return None
    verdicts = [read_verdict(c) or {} for c in cases]
    columns = index_columns(verdicts)
    rows = []
    for case_dir, v in zip(cases, verdicts, strict=True):
        counts = v.get("counts") or {}
        rel = case_dir.relative_to(root).as_posix()
        report = f"{rel}/{REPORT_FILE}" if (case_dir / REPORT_FILE).exists() else (
            f"{rel}/verdict.json")
        badge = _index_badge(v)
        rows.append(
            f"<tr><td><a href='{_e(report)}'>{_e(v.get('case') or rel)}</a></td>"
            f"<td>{badge}</td><td class='nowrap'>{_e(v.get('semantics'))}</td>"
            + "".join(f"<td class='num{_count_class(k, counts.get(k), v.get('semantics'))}'>"
                      f"{_e(counts.get(k))}</td>" for k in columns)
            + f"<td class='num'>{_e(_round(v.get('election_max_s')))}</td>"
            f"<td class='num'>{_e(_round(v.get('duration_s'), 1))}</td></tr>")
    outcomes = [index_outcome(v) for v in verdicts]
    tally = ", ".join(f"{outcomes.count(o)} {o}" for o in INDEX_OUTCOMES if o in outcomes)
    head = "".join(f"<th>{h}</th>" for h in (
        "case", "verdict", "semantics", *columns, "election s (max)", "duration s"))
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>kreplica results"
           f"</title><style>{CSS}</style></head><body><h1>kreplica results</h1>"
           f"<p>{len(cases)} case(s): {tally}.</p>"
           f"<table><tr>{head}</tr>{''.join(rows)}</table></body></html>")
    return _write_atomic(root / INDEX_FILE, doc)
