"""A composed fault: two faults overlapping in time. The first part runs as any fault; the
second, in a thread of its own, strikes its own victim (a node the first does not hold)
``after_s`` into the first's strike, and the first holds until the second has been in
effect for ``MIN_OVERLAP_S`` (or has finished), so the two strike-to-restore windows
overlap by at least that much. The overlap is measured from the records
(``overlap_s`` on both) and a composition whose parts did not overlap is a harness error
on the second's record: the case would have tested two faults in sequence."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from .plan import FaultRecord, FaultSpec
from .registry import FAILURES

if TYPE_CHECKING:
    from .nemesis import Nemesis

# how long the first part holds past its downtime for the second to strike, and how long
# the second waits for the first to strike (a leader read, a metadata read on a loaded
# machine): beyond these the composition did not act
HOLD_BOUND_S = 60.0
FIRST_STRIKE_S = 60.0
MIN_OVERLAP_S = 1.0  # the least time both parts are in effect together
JOIN_S = 600.0  # the second part's whole run (its restore and recovery are bounded too)


def _record(nem: Nemesis, index: int) -> FaultRecord | None:
    return next((r for r in nem.records if r.index == index), None)


def _second(nem: Nemesis, first: FaultSpec, second: FaultSpec, out: list[FaultRecord]
            ) -> None:
    """Waits for the first part's strike, then its offset, then runs the second part."""
    deadline = time.monotonic() + FIRST_STRIKE_S
    while time.monotonic() < deadline:
        rec = _record(nem, first.index)
        if rec is not None and (rec.strike_ns is not None or rec.error):
            break
        time.sleep(0.05)
    rec = _record(nem, first.index)
    if rec is None or rec.strike_ns is None:
        late = FaultRecord(second.index, second.failure, second.target, None, None,
                           overlaps=first.index,
                           error=f"fault #{first.index} did not strike within "
                                 f"{FIRST_STRIKE_S:g} s: nothing to overlap")
        nem.records.append(late)
        out.append(late)
        return
    wait = second.after_s or 0.0
    remaining = wait - (time.monotonic_ns() - rec.strike_ns) / 1e9
    if remaining > 0:
        time.sleep(remaining)
    out.append(nem.run_fault(second))


def second_held(nem: Nemesis, second: FaultSpec, out: list[FaultRecord]) -> bool:
    """Whether the first part may be restored: the second has been in effect for
    ``MIN_OVERLAP_S``, failed, or finished."""
    if out:
        return True
    rec = _record(nem, second.index)
    if rec is None:
        return False
    if rec.error is not None:
        return True
    # a controlled shutdown is in effect from its SIGTERM on (it hands leadership over at
    # once), while its strike returns only once the broker exited: a minute at the plan's
    # shape, past the first part's hold bound
    in_effect = rec.struck_ns is not None or (
        rec.failure in FAILURES and FAILURES[rec.failure].hands_over_while_striking)
    return in_effect and rec.strike_ns is not None and \
        time.monotonic_ns() - rec.strike_ns >= MIN_OVERLAP_S * 1e9


def measure_overlap(a: FaultRecord, b: FaultRecord) -> float | None:
    """Seconds both were in effect (from the later strike to the earlier restore); None
    when either never struck or never restored."""
    if None in (a.strike_ns, b.strike_ns, a.restore_ns, b.restore_ns):
        return None
    return round((min(a.restore_ns, b.restore_ns) - max(a.strike_ns, b.strike_ns)) / 1e9, 3)


def run_overlapping(nem: Nemesis, first: FaultSpec, second: FaultSpec
                    ) -> list[FaultRecord]:
    """Run a composition's two parts overlapping; their records, in plan order."""
    out: list[FaultRecord] = []
    nem.hold_until[first.index] = lambda: second_held(nem, second, out)
    thread = threading.Thread(target=_second, args=(nem, first, second, out), daemon=True,
                              name=f"kreplica-fault-{second.index}")
    thread.start()
    try:
        a = nem.run_fault(first)
    finally:
        thread.join(JOIN_S)
        nem.hold_until.pop(first.index, None)
    if thread.is_alive() or not out:
        b = _record(nem, second.index) or FaultRecord(
            second.index, second.failure, second.target, None, None)
        b.error = b.error or f"fault #{second.index} did not finish within {JOIN_S:g} s"
    else:
        b = out[0]
    a.overlaps, b.overlaps = second.index, first.index
    a.overlap_s = b.overlap_s = measure_overlap(a, b)
    if b.error is None and (b.overlap_s is None or b.overlap_s <= 0):
        b.error = (f"fault #{second.index} did not overlap fault #{first.index} (overlap "
                   f"{b.overlap_s} s): a composition struck in sequence tested nothing "
                   "composed")
    nem.progress(f"faults #{first.index} + #{second.index}: in effect together for "
                 f"{b.overlap_s} s")
    return [a, b]
