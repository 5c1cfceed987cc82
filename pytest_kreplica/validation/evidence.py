"""Which faults of a run can explain a lost acknowledged record, from what the nemesis saw.

Loss is never excused by a case's configuration, only by an event recorded while the case
ran (docs/failures.md "Loss and its evidence"):

- an **election from outside the ISR** (unclean leader election): the fault record's
  ``elected_from_isr`` is false; it explains loss of records of that partition sent before
  the new leader was seen, under any acks;
- with **acks 1 or 0**, a **leader change**: the struck node led the record's partition
  just before the strike (the watched partition's ``leader_before``, or ``led_before`` for
  the case's other partitions) and leadership moved (a new leader was seen, or the fault
  kills or cuts off the process); it explains loss of records of that partition sent while
  that leader could still acknowledge them alone (a killed leader: before the strike; a
  terminated one: before the new leader was seen; a cut-off or paused one: until every
  replica was back in sync after the heal / resume);
- a **power loss of every replica** (a failure with ``segments_cut``: ``power_loss_all``, or
  ``power_loss`` at replication factor 1): the strike's measurement names the partition's
  segment files as cut on at least ``replication_factor`` nodes (bytes they had not fsynced
  were dropped on every copy); it explains loss of records of that partition sent
  before the last node was cut, under any acks. With ``flush.messages: 1`` no segment loses
  bytes, so nothing is excused there.

Fault records are the nemesis's ``FaultRecord.to_dict()`` rows (verdict.json ``faults``).
"""

from __future__ import annotations

from typing import Any

from ..faults.failure import GONE_AT_RECOVERY, GONE_AT_STRIKE
from ..faults.registry import FAILURES

UNCLEAN = "election from outside the ISR"
POWER = "power loss of every replica"
LEADER_CHANGE = "leader change with acks {acks}"


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


def excusing_events(faults: list[dict[str, Any]] | None, params: dict[str, Any] | None
                    ) -> list[dict[str, Any]]:
    """Every (fault, partition) that can explain loss, with its time window and the facts
    it rests on (shown in verdict.json and report.html)."""
    params = params or {}
    acks = params.get("acks", -1)
    out: list[dict[str, Any]] = []
    for f in faults or []:
        if f.get("node") is None or f.get("strike_ns") is None or f.get("topic") is None:
            continue  # a component fault, or a fault that never struck
        until = _leader_gone_ns(f)
        failure = FAILURES.get(str(f.get("failure")))
        moves = failure is not None and failure.moves_leadership  # a pause may keep it
        if until is None:
            continue
        base = {"fault": f.get("index"), "failure": f.get("failure"),
                "target": f.get("target"), "node": f.get("node"),
                "leader_before": f.get("leader_before"), "isr_before": f.get("isr_before"),
                "new_leader": f.get("new_leader"), "until_ns": until}
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
        if acks not in (0, 1):
            continue
        led: list[tuple[str, int]] = []
        if led_watched and (f.get("new_leader") is not None or moves):
            led.append(watched)
        if moves:
            for name in f.get("led_before") or []:
                topic, _, part = str(name).rpartition("-")
                if part.isdigit() and (topic, int(part)) != watched:
                    led.append((topic, int(part)))
        for topic, partition in led:
            if (topic, partition) != watched:  # only the victim's leadership is known there
                base = {**base, "leader_before": f["node"], "isr_before": None,
                        "new_leader": None}
            out.append({**base, "kind": LEADER_CHANGE.format(acks=acks), "topic": topic,
                        "partition": partition,
                        "why": f"{f.get('failure')} failure of node {f['node']}, leader of "
                               f"{topic}-{partition}, with acks={acks}: records it had "
                               f"acknowledged alone may not have reached a follower"
                               + (f"; new leader {f['new_leader']}"
                                  if f.get("new_leader") is not None
                                  and (topic, partition) == watched else "")})
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


def find_excuse(events: list[dict[str, Any]], topic: str, partition: int,
                invoke_ns: int | None) -> dict[str, Any] | None:
    """The first event that explains the loss of a record of ``topic-partition`` sent at
    ``invoke_ns``, or None."""
    for e in events:
        if (e["topic"], e["partition"]) != (topic, partition):
            continue
        if invoke_ns is not None and invoke_ns <= e["until_ns"]:
            return e
    return None
