"""Which faults of a run can explain a lost acknowledged record, from what the nemesis saw.

Loss is never excused by a case's configuration, only by an event recorded while the case
ran (docs/failures.md "Loss and its evidence"). Each event has a window: a record is
excused when it was sent before the window's end (``until_ns``: the struck leader could
still acknowledge it alone) and, where the event has a start (``from_ns``), acknowledged
after that start (before it, a follower the clean election could pick already held it).

- an **election from outside the ISR** (unclean leader election): the fault record's
  ``elected_from_isr`` is false; it explains loss of records of that partition sent before
  the new leader was seen, under any acks. No start: the new leader had left the ISR at
  a time nothing records, and may have stopped fetching at any time before;
- with **acks 1 or 0**, a **leader change**: the struck node led the record's partition
  just before the strike and leadership moved away from it. On the watched partition: a
  new leader was seen (or the fault kills or cuts off the process), as the nemesis
  measured it. On every other partition of the case: ``partitions_before`` names the
  struck node its leader and ``leaders_after`` (read once the cluster recovered) another
  node - for every failure type, a pause included, so a pause that moved no leadership
  excuses nothing. The window ends while that leader could still acknowledge records alone
  (a killed leader: the strike; a terminated one: the new leader seen; a cut-off or paused
  one: every replica back in sync after the heal / resume). It **starts** at
  ``before_ns - 1.5 * lag_bound_ms - CLOCK_MARGIN_S``: ``before_ns`` is when the nemesis
  began reading the ISR it judged the fault against, ``lag_bound_ms`` the cluster's
  ``replica.lag.time.max.ms`` (run.json ``cluster.follower_lag_bound_ms``). A follower in
  that ISR had caught up with the leader's log end within ``lag_bound_ms`` of the leader's
  last ISR check, and the leader checks every ``lag_bound_ms / 2``: whatever the leader had
  acknowledged before the start, every replica a clean election could choose held. A
  record acknowledged before it is not excused by a leader change; a fault record without
  a lag bound gives no window, so no leader change excuses anything;
- a **power loss of every replica** (a failure with ``segments_cut``: ``power_loss_all``, or
  ``power_loss`` at replication factor 1): the strike's measurement names the partition's
  segment files as cut on at least ``replication_factor`` nodes (bytes they had not fsynced
  were dropped on every copy); it explains loss of records of that partition sent
  before the last node was cut, under any acks. No start: Kafka's default flush settings
  leave bytes unsynced since the segment's last fsync, whose time nothing records. With
  ``flush.messages: 1`` no segment loses bytes, so nothing is excused there.

A fault of a process beside the brokers (target ``producer``, ``consumer``, ``group-member``,
``mirror-maker``) excuses nothing: a killed producer's sends in flight are ``info``, but
what the broker acknowledged before the kill it must keep.

Fault records are the nemesis's ``FaultRecord.to_dict()`` rows (verdict.json ``faults``).
"""

from __future__ import annotations

from typing import Any

from ..faults.failure import GONE_AT_RECOVERY, GONE_AT_STRIKE
from ..faults.registry import COMPONENT_TARGETS, FAILURES

UNCLEAN = "election from outside the ISR"
POWER = "power loss of every replica"
LEADER_CHANGE = "leader change with acks {acks}"
LAG_CHECKS = 1.5  # the lag bound, plus the leader's ISR check interval (half of it)
NO_LAG_BOUND = ("the fault record names no follower lag bound (lag_bound_ms): the window "
                "has no start, so it excuses nothing")
CLOCK_MARGIN_S = 2.0  # an ISR shrink reaching the metadata read; the two clocks' reads


def _leader_gone_ns(fault: dict[str, Any]) -> int | None:
    """Until when the struck leader could still acknowledge records on its own. A killed
    one: until its kill returned (``struck_ns``; measured on a loaded machine: a SIGKILLed
    leader acknowledged records sent 1.5 ms after the kill began, answering 16 ms after
    it). A terminated one (controlled shutdown): until the new leader was seen.
    A cut-off or paused one keeps running: it acknowledges alone while cut off, and after
    the heal / resume until it learns it was replaced - at the latest when every replica is
    back in sync (``recovered_ns``; measured: a cut leader acknowledged 162 records in the
    1.7 s between heal and recovery)."""
    failure = FAILURES.get(str(fault.get("failure")))
    gone = failure.leader_gone if failure is not None else None
    if gone == GONE_AT_RECOVERY:
        return fault.get("recovered_ns") or fault.get("restore_ns")
    if gone == GONE_AT_STRIKE:  # SIGKILL: nothing is acknowledged once the process is gone
        return fault.get("struck_ns") or fault.get("strike_ns")
    if fault.get("strike_ns") is not None and fault.get("election_s") is not None:
        return fault["strike_ns"] + int(fault["election_s"] * 1e9)
    return fault.get("restore_ns") or fault.get("strike_ns")


def window_start_ns(fault: dict[str, Any]) -> int | None:
    """The earliest acknowledgement a leader change of ``fault`` can explain (see the
    module docstring), or None when the record names no follower lag bound."""
    lag_ms, since = fault.get("lag_bound_ms"), fault.get("before_ns") or fault.get("strike_ns")
    if not isinstance(lag_ms, int) or isinstance(lag_ms, bool) or lag_ms < 0 or since is None:
        return None
    return int(since - LAG_CHECKS * lag_ms * 1_000_000 - CLOCK_MARGIN_S * 1e9)


def _moved_away(fault: dict[str, Any], name: str) -> int | None | bool:
    """Whether the partition ``name`` (not the watched one), led by the struck node before,
    is led by another node after the recovery: that leader, or False."""
    before = (fault.get("partitions_before") or {}).get(name) or {}
    after = (fault.get("leaders_after") or {}).get(name)
    if before.get("leader") != fault["node"] or after is None or after == fault["node"]:
        return False
    return after


def _leader_changes(f: dict[str, Any], base: dict[str, Any], moves: bool, acks: int
                    ) -> list[dict[str, Any]]:
    """The acks 1/0 leader-change events of one fault, on every partition it moved."""
    start = window_start_ns(f)
    watched = f"{f['topic']}-{f.get('partition')}"
    out = []
    if f["node"] == f.get("leader_before"):
        new = f.get("new_leader")
        if new is None:
            new = _moved_away(f, watched) or None
        if new is not None or moves:
            out.append({**base, "topic": f["topic"], "partition": f.get("partition"),
                        "new_leader": new, "new": new})
    for name in sorted(f.get("partitions_before") or {}):
        topic, _, part = name.rpartition("-")
        new = _moved_away(f, name)
        if name != watched and part.isdigit() and new is not False:
            out.append({**base, "topic": topic, "partition": int(part), "new": new,
                        "leader_before": f["node"], "new_leader": new,
                        "isr_before": f["partitions_before"][name].get("isr")})
    for e in out:
        name = f"{e['topic']}-{e['partition']}"
        new = e.pop("new")
        e["kind"] = LEADER_CHANGE.format(acks=acks)
        if start is None:
            e.update(unbounded=NO_LAG_BOUND, why=f"{f.get('failure')} failure of node "
                     f"{f['node']}, leader of {name}: {NO_LAG_BOUND}")
            continue
        ahead_s = (f["strike_ns"] - start) / 1e9
        e.update(from_ns=start,
                 why=f"{f.get('failure')} failure of node {f['node']}, leader of {name}, "
                     f"with acks={acks}: records it acknowledged alone, from {ahead_s:.1f} s "
                     f"before the strike ({LAG_CHECKS:g} x the follower lag bound "
                     f"{f['lag_bound_ms']} ms and {CLOCK_MARGIN_S:g} s before the ISR was "
                     f"read), may not have reached a follower"
                     + (f"; new leader {new}" if new is not None else ""))
    return out


def excusing_events(faults: list[dict[str, Any]] | None, params: dict[str, Any] | None
                    ) -> list[dict[str, Any]]:
    """Every (fault, partition) that can explain loss, with its time window
    (``from_ns``, None: no start; ``until_ns``) and the facts it rests on (shown in
    verdict.json and report.html)."""
    params = params or {}
    acks = params.get("acks", -1)
    out: list[dict[str, Any]] = []
    for f in faults or []:
        if f.get("target") in COMPONENT_TARGETS:  # a client or MirrorMaker 2: no broker
            continue  # lost anything it had acknowledged: it excuses no loss
        if f.get("node") is None or f.get("strike_ns") is None or f.get("topic") is None:
            continue  # a fault that never struck
        until = _leader_gone_ns(f)
        failure = FAILURES.get(str(f.get("failure")))
        moves = failure is not None and failure.moves_leadership  # a pause may keep it
        if until is None:
            continue
        base = {"fault": f.get("index"), "failure": f.get("failure"),
                "target": f.get("target"), "node": f.get("node"),
                "leader_before": f.get("leader_before"), "isr_before": f.get("isr_before"),
                "new_leader": f.get("new_leader"), "strike_ns": f["strike_ns"],
                "from_ns": None, "until_ns": until}
        watched = (f["topic"], f.get("partition"))
        led_watched = f["node"] == f.get("leader_before")
        if led_watched and f.get("new_leader") is not None and f.get("elected_from_isr") is False:
            out.append({**base, "kind": UNCLEAN, "topic": watched[0], "partition": watched[1],
                        "why": f"node {f['new_leader']} was elected leader of "
                               f"{watched[0]}-{watched[1]} from outside the ISR "
                               f"{f.get('isr_before')} after node {f['node']} failed"})
        if failure is not None and failure.segments_cut is not None:
            out.extend(_power_events(failure.segments_cut(f.get("measured")), base,
                                     int(params.get("replication_factor") or 3)))
        if acks in (0, 1):
            out.extend(_leader_changes(f, base, moves, acks))
    return out


def _power_events(cut: dict[str, set[int]], base: dict[str, Any], replicas: int
                  ) -> list[dict[str, Any]]:
    """A partition whose segments lost un-fsynced bytes on ``replicas`` nodes or more."""
    out = []
    for name, nodes in sorted(cut.items()):
        topic, _, part = name.rpartition("-")
        if part.isdigit() and len(nodes) >= replicas:
            out.append({**base, "kind": POWER, "topic": topic, "partition": int(part),
                        "why": f"power loss: {name}'s segments lost bytes they had not "
                               f"fsynced on nodes {sorted(nodes)}, every replica"})
    return out


def in_window(event: dict[str, Any], invoke_ns: int | None, acked_ns: int | None) -> bool:
    """Whether a record sent at ``invoke_ns`` and acknowledged at ``acked_ns`` (None:
    unknown, then no later than known: ``invoke_ns``) lies in ``event``'s window."""
    if invoke_ns is None or invoke_ns > event["until_ns"] or event.get("unbounded"):
        return False
    start = event.get("from_ns")
    return start is None or max(invoke_ns, acked_ns or invoke_ns) >= start


def find_excuse(events: list[dict[str, Any]], topic: str, partition: int,
                invoke_ns: int | None, acked_ns: int | None = None) -> dict[str, Any] | None:
    """The first event that explains the loss of a record of ``topic-partition`` sent at
    ``invoke_ns`` and acknowledged at ``acked_ns``, or None."""
    for e in events:
        if (e["topic"], e["partition"]) == (topic, partition) and \
                in_window(e, invoke_ns, acked_ns):
            return e
    return None


def _at(ns: int | None, strike_ns: int) -> str:
    if ns is None:
        return "at an unknown time"
    delta = (ns - strike_ns) / 1e9
    return f"{abs(delta):.3f} s {'before' if delta < 0 else 'after'} the strike"


def why_unexcused(events: list[dict[str, Any]], topic: str, partition: int,
                  invoke_ns: int | None, acked_ns: int | None = None) -> str:
    """Why no event excuses that record: the events of its partition and their windows,
    against the record's send and acknowledgement (times from each fault's strike)."""
    out = []
    for e in events:
        if (e["topic"], e["partition"]) != (topic, partition):
            continue
        head = f"fault #{e['fault']} ({e['kind']})"
        if e.get("unbounded"):
            out.append(f"{head}: {e['unbounded']}")
            continue
        strike = e["strike_ns"]
        out.append(f"{head} explains records sent by {_at(e['until_ns'], strike)}"
                   + (f" and acknowledged from {_at(e['from_ns'], strike)}"
                      if e.get("from_ns") is not None else "")
                   + f"; this one was sent {_at(invoke_ns, strike)} and acknowledged "
                     f"{_at(acked_ns, strike)}")
    return "; ".join(out)
