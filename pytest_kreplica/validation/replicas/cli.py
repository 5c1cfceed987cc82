"""``kreplica verify-logs RUN_DIR [--json]``: exit 0 valid, 1 invalid, 2 unreadable.
Unreadable input raises ``HistoryError``; ``kreplica``'s main turns it into one line."""

from __future__ import annotations

import json

from .verify import verify_logs


def run_verify_logs(args) -> int:
    verdict = verify_logs(args.run_dir, spark_master=getattr(args, "spark_master", None))
    if getattr(args, "json", False):
        print(json.dumps(verdict.to_dict(), sort_keys=True))
    else:
        print(verdict.summary())
    return 0 if verdict.valid else 1
