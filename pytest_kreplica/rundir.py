"""Every file name of a case's run directory (shared/HISTORY.md), declared once: the writer,
the checker, the verifier, the outcome and the report all read these."""

from __future__ import annotations

SENDS, POLLS, EVENTS = "sends", "polls", "events"  # history tables: <name>.jsonl / .parquet
TXNS = "txns"  # history version 2: one row per transaction (docs/history.md)
RUN_JSON = "run.json"  # the case's parameters, semantics, cluster description
REPLICAS_JSON = "replicas.json"  # the replica-log snapshot's layout (validation.replicas)
VERDICT_JSON = "verdict.json"  # the case's outcome: checker verdict, checks, trade-off
REPORT_HTML = "report.html"
HISTORY_FILES = (RUN_JSON, VERDICT_JSON, f"{SENDS}.jsonl", f"{POLLS}.jsonl", f"{EVENTS}.jsonl",
                 f"{SENDS}.parquet", f"{POLLS}.parquet", REPLICAS_JSON)
