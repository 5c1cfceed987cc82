"""The HTML pieces every page of the report is made of: the style sheet, escaping, tables,
key-value tables and badges."""

from __future__ import annotations

import html
from typing import Any

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

def escape(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def cell(value: Any) -> Any:
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


def table(rows: list[dict[str, Any]], columns: list[str] | None = None,
           numeric: tuple[str, ...] = ()) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    columns = columns or list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(
            f'<td class="num">{escape(r.get(c))}</td>' if c in numeric or isinstance(
                r.get(c), int | float) else f"<td>{escape(cell(r.get(c)))}</td>"
            for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def kv(pairs: dict[str, Any], highlight: tuple[str, ...] = (),
        warn: tuple[str, ...] = ()) -> str:
    def cls(k: str, v: Any) -> str:
        if not v or v is True:
            return ""
        return " bad" if k in highlight else (" warn" if k in warn else "")

    rows = "".join(f'<tr><th>{escape(k)}</th><td class="num{cls(k, v)}">{escape(v)}</td></tr>'
                   for k, v in pairs.items())
    return f"<table>{rows}</table>"


def badge(passed: bool | None, label: str) -> str:
    cls = "unknown" if passed is None else ("pass" if passed else "fail")
    return f'<span class="badge {cls}">{escape(label)}</span>'


def rounded(value: Any, ndigits: int = 2) -> Any:
    return round(value, ndigits) if isinstance(value, int | float) else value
