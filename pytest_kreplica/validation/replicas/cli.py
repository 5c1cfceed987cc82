"""``kreplica verify-logs RUN_DIR [--json]``: exit 0 valid, 1 invalid, 2 unreadable.
Unreadable input raises ``HistoryError``; ``kreplica``'s main turns it into one line."""

from __future__ import annotations

import json
import os

from ...errors import HistoryError
from ..engine.spark import one_off_jit
from ..served import ask
from .layout import load_layout
from .verify import LogVerdict, verify_logs


def replica_bytes(run_dir: str) -> int | None:
    """The bytes of the segment files a run directory's snapshot lists (what sizes its
    verify), or None when they cannot be read (``verify_logs`` then says why, in one line)."""
    try:
        return sum(os.path.getsize(f.path) for f in load_layout(run_dir).segment_files())
    except (HistoryError, OSError):
        return None


def run_verify_logs(args) -> int:
    size = replica_bytes(args.run_dir)
    master = getattr(args, "spark_master", None)
    served = ask("verify_logs", args.run_dir, master=master, input_bytes=size)
    if served is not None:  # the machine's server verified them (served.py)
        verdict = LogVerdict(**served)
    else:
        one_off_jit(size)
        verdict = verify_logs(args.run_dir, spark_master=master)
    if getattr(args, "json", False):
        print(json.dumps(verdict.to_dict(), sort_keys=True))
    else:
        print(verdict.summary())
    return 0 if verdict.valid else 1
