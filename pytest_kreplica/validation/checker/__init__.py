"""The history checker: every anomaly of shared/HISTORY.md, computed on Spark.

    from . import check
    verdict = check(run_dir, semantics="exactly-once")
    assert verdict.valid, verdict.summary()

``baseline`` holds a plain single-process Python implementation of the same rules, used by the
benchmark and as a cross-check in tests.
"""

from .anomalies import ANOMALIES, INVALIDATING, Anomaly
from .core import check
from .verdict import TOTALS, Verdict

__all__ = ["ANOMALIES", "INVALIDATING", "TOTALS", "Anomaly", "Verdict", "check"]
