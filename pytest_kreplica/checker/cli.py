"""``kreplica check RUN_DIR [--semantics S] [--json] [--spark-master URL]``.

Exit 0 valid, 1 invalid; an unreadable run raises HistoryError, which the ``kreplica``
command prints as one line with exit status 2.
"""

from __future__ import annotations

import json
import sys


def run_check(args) -> int:
    from ..spark import stop_spark
    from .core import check

    try:
        verdict = check(args.run_dir, semantics=args.semantics,
                        spark_master=getattr(args, "spark_master", None))
    finally:
        stop_spark()
    if args.json:
        print(json.dumps(verdict.to_dict(), sort_keys=False))
    else:
        print(verdict.summary(args.run_dir))
    sys.stdout.flush()
    return 0 if verdict.valid else 1
