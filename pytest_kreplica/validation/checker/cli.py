"""``kreplica check RUN_DIR [--semantics S] [--json] [--spark-master URL]``.

Prints the checker's verdict (HISTORY.md) and the case verdict (``outcome``): ``passed``
and its reason, the same answer the test reached. Exit 0 passed, 1 not passed; a run that
cannot be read or checked raises a KreplicaError, which the ``kreplica`` command prints as
one line with exit status 2.
"""

from __future__ import annotations

import json
import sys

from ..engine.spark import one_off_jit, stop_spark
from ..outcome import recheck
from ..replicas.cli import replica_bytes
from ..served import ask
from .core import history_bytes
from .verdict import Verdict


def run_check(args) -> int:
    size = history_bytes(args.run_dir)
    master = getattr(args, "spark_master", None)
    # the replica logs are verified too when there is a snapshot: they count for the size
    served = ask("check", args.run_dir, master=master, semantics=args.semantics,
                 input_bytes=None if size is None else size + (replica_bytes(args.run_dir) or 0))
    if served is not None:  # the machine's server checked it (served.py)
        verdict, outcome = Verdict.from_dict(served["verdict"]), served["outcome"]
    else:
        one_off_jit(size)
        try:
            verdict, outcome = recheck(args.run_dir, semantics=args.semantics,
                                       spark_master=master)
        finally:
            stop_spark()
    if args.json:
        doc = verdict.to_dict()
        doc.update(passed=outcome["passed"], reason=outcome["reason"])
        if outcome["tradeoff"] is not None:
            doc["tradeoff"] = outcome["tradeoff"]
        if outcome["problems"]:
            doc["problems"] = outcome["problems"]
        if outcome.get("availability") is not None:  # a server of an older version has none
            doc["availability"] = outcome["availability"]
        print(json.dumps(doc, sort_keys=False, default=str))
    else:
        print(verdict.summary(args.run_dir))
        print(f"{'PASSED' if outcome['passed'] else 'NOT PASSED'}: {outcome['reason']}")
    sys.stdout.flush()
    return 0 if outcome["passed"] else 1
