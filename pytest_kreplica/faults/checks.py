"""Checks of what the nemesis recorded, beyond the history verdict (C.2): every fault
recovered, a failed leader was replaced in time by a replica from the ISR."""

from __future__ import annotations

from typing import Any

from .plan import NO_OTHER_REPLICA, FaultRecord
from .registry import FAILURES

# An election slower than this fails the C.2 check: the tuned cluster settings
# (KAFKA-NOTES "Faults") fail a leader over in about 3 s, the defaults in about 9 s.
ELECTION_BOUND_S = 20.0


def scenario_checks(records: list[FaultRecord], *, unclean_leader_election: bool = False,
                    election_bound_s: float = ELECTION_BOUND_S) -> list[dict[str, Any]]:
    """Checks beyond the history verdict, one per fault and property: every fault struck
    and recovered; where the victim led the watched partition (C.2) a new leader appeared
    within ``election_bound_s`` and it was in the ISR before the fault (not required with
    unclean leader election, which exists to allow the opposite; then it is reported)."""
    checks: list[dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str) -> None:
        checks.append({"name": name, "ok": bool(ok), "detail": detail})

    for r in records:
        tag = f"fault #{r.index} ({r.failure} {r.target}, node {r.node})"
        if r.error:
            detail = r.error
        elif r.recovery_s is not None:
            detail = (f"{'working again' if r.topic is None else 'in sync'} "
                      f"{r.recovery_s:.2f} s after the restore")
        else:
            detail = "no recovery recorded"
        add(f"{tag} recovered", r.error is None and r.recovered_ns is not None, detail)
        if r.node is None or r.node != r.leader_before:
            continue
        if r.election_s is None:
            # a failure that moves leadership, with another replica, must elect a new leader
            must = (FAILURES[r.failure].moves_leadership
                    and r.election_note != NO_OTHER_REPLICA)
            add(f"{tag} new leader elected", not must,
                r.election_note or "no new leader was seen")
            continue
        add(*_election_check(tag, r, election_bound_s))
        add(f"{tag} new leader was in the ISR",
            bool(r.elected_from_isr) or unclean_leader_election,
            f"new leader {r.new_leader}, ISR before the fault {r.isr_before}"
            + ("" if r.elected_from_isr else " (allowed: unclean leader election)"))
    return checks


def _election_check(tag: str, r: FaultRecord, bound_s: float) -> tuple[str, bool, str]:
    """The election bound, from the strike; for a controlled stop that outlasted its
    deadline and ended in SIGKILL, from the kill: the hard failure it became (the broker's
    election is judged, not the harness's deadline)."""
    assert r.election_s is not None
    seen = f"leader {r.leader_before} -> {r.new_leader} after {r.election_s:.2f} s"
    killed_after = r.killed_after_s
    if killed_after is None:
        return f"{tag} new leader within {bound_s:g} s", r.election_s <= bound_s, seen
    after_kill = max(r.election_s - killed_after, 0.0)
    return (f"{tag} new leader within {bound_s:g} s of the SIGKILL",
            after_kill <= bound_s,
            f"{seen}; the controlled shutdown was killed {killed_after:.1f} s after the "
            f"SIGTERM, so the fault was a hard one: {after_kill:.2f} s after the kill")
