"""A made-up run directory for unit tests of the report (pure presentation logic): a leader
killed mid-produce, a few acknowledged ids lost, one never-polled tail (unseen)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_kreplica.history import RunWriter, write_run_json

S = 1_000_000_000
T0 = 10_000 * S
LOST = [f"p0-{i:06d}" for i in range(1500, 1510, 2)]  # partition 0, consumer read past them
UNSEEN = ["p1-003999"]  # the last id of partition 1, never polled


def make_run(run_dir: Path, messages: int = 4000) -> dict:
    """Write sends/polls/events/run.json; return what was planted."""
    offsets = {0: 0, 1: 0}
    with RunWriter(run_dir) as w:
        w.event("assign", process=1, detail="t-0,t-1", time_ns=T0)
        for i in range(messages):
            p = i % 2
            mid = f"p{p}-{i:06d}"
            t = T0 + int(i * 5e6)  # 200 msg/s -> 20 s
            w.send(process=0, topic="t", partition=p, id=mid, offset=offsets[p],
                   status="ok", invoke_ns=t, complete_ns=t + 2_000_000, error=None)
            if mid not in LOST and mid not in UNSEEN:
                delay = 3 * S if 5 * S < t - T0 < 9 * S else 50_000_000
                w.poll(process=1, poll=i, topic="t", partition=p, offset=offsets[p], id=mid,
                       time_ns=t + delay, index=0)
            offsets[p] += 1
        w.send(process=0, topic="t", partition=0, id="p0-x", offset=None, status="info",
               invoke_ns=T0 + 6 * S, complete_ns=T0 + 36 * S // 5, error="KafkaTimeoutError")
        w.event("kill", node="1", role="leader", detail="fault #1", time_ns=T0 + 5 * S)
        w.event("elect", node="2", role="leader", detail="t-0: leader 1 -> 2 after 3.0 s",
                time_ns=T0 + 8 * S)
        w.event("start", node="1", role="leader", detail="restore", time_ns=T0 + 10 * S)
        w.event("recovered", node="1", role="leader", detail="isr full", time_ns=T0 + 13 * S)
        w.event("drain-start", time_ns=T0 + 20 * S)
        w.event("drain-end", time_ns=T0 + 23 * S)
    write_run_json(run_dir, {"case": "p2-rf3-acks1-hard-leader", "semantics": "at-most-once",
                             "parameters": {"partitions": 2, "acks": 1, "failure": "hard",
                                            "target": "leader", "seed": 7},
                             "cluster": {"nodes": {"1": {}, "2": {}, "3": {}}}})
    return {"lost": LOST, "unseen": UNSEEN}


MIRROR_DUPLICATES = 20  # ids mirrored again after the hard failure, at new target offsets


def make_mirrored_run(run_dir: Path, messages: int = 1000) -> dict:
    """A mirrored run (HISTORY.md "Mirrored runs"): 100 msg/s to 2 source partitions;
    MirrorMaker 2 SIGKILLed at 3 s, restarted at 8 s, mirroring again at 12 s (what was
    acknowledged meanwhile arrives then), the last ``MIRROR_DUPLICATES`` ids it had written
    before the kill mirrored a second time; a leader election on the target at 5 s."""
    src_offsets, tgt_offsets = {0: 0, 1: 0}, {0: 0, 1: 0}
    poll_no = 0
    with RunWriter(run_dir) as w:
        w.event("start", process=0, detail="producer", time_ns=T0, cluster="source")
        w.event("assign", process=1, detail="source.t-0,source.t-1", time_ns=T0,
                cluster="target")
        w.event("start", node="mirror-maker", role="mirror-maker", detail="MirrorMaker 2",
                time_ns=T0)
        before_kill = []
        for i in range(messages):
            p = i % 2
            mid = f"m{i:05d}"
            t = T0 + int(i * 1e7)  # 100 msg/s -> 10 s
            w.send(process=0, topic="t", partition=p, id=mid, offset=src_offsets[p],
                   status="ok", invoke_ns=t, complete_ns=t + 1_000_000, error=None,
                   cluster="source")
            src_offsets[p] += 1
            if t - T0 < 3 * S:
                arrive = t + 100_000_000
                before_kill.append((p, mid))
            else:
                arrive = max(T0 + 12 * S, t + 100_000_000)
            poll_no += 1
            w.poll(process=1, poll=poll_no, topic="source.t", partition=p,
                   offset=tgt_offsets[p], id=mid, time_ns=arrive, index=0, cluster="target")
            tgt_offsets[p] += 1
            if i == 300:  # the restarted task re-mirrors what it had not committed
                for q, dup in before_kill[-MIRROR_DUPLICATES:]:
                    poll_no += 1
                    w.poll(process=1, poll=poll_no, topic="source.t", partition=q,
                           offset=tgt_offsets[q], id=dup, time_ns=T0 + 12 * S, index=0,
                           cluster="target")
                    tgt_offsets[q] += 1
        w.event("kill", node="mirror-maker", role="mirror-maker", detail="fault #1: hard",
                time_ns=T0 + 3 * S)
        w.event("elect", node="1", role="leader", detail="source.t-0: leader 2 -> 1",
                time_ns=T0 + 5 * S, cluster="target")
        w.event("start", node="mirror-maker", role="mirror-maker", detail="fault #1: restore",
                time_ns=T0 + 8 * S)
        w.event("recovered", node="mirror-maker", role="mirror-maker",
                detail="fault #1: working again", time_ns=T0 + 12 * S)
        w.event("drain-start", process=1, time_ns=T0 + 13 * S, cluster="target")
        w.event("drain-end", process=1, time_ns=T0 + 14 * S, cluster="target")
    nodes = {"1": {}, "2": {}, "3": {}}
    write_run_json(run_dir, {
        "case": "mirror-maker-failure-hard", "semantics": "at-least-once",
        "mirror": {"topics": {"t": "source.t"}, "policy": "default", "exactly_once": False,
                   "kafka_version": "4.3.1"},
        "cluster": {"source": {"kafka_version": "3.9.2", "nodes": nodes},
                    "target": {"kafka_version": "4.3.1", "nodes": nodes}}})
    return {"duplicates": MIRROR_DUPLICATES}


if __name__ == "__main__":  # python -m tests.report.synthetic DIR: a page to look at
    import sys

    (make_mirrored_run if "--mirrored" in sys.argv else make_run)(Path(sys.argv[1]))
    print(json.dumps({"written": sys.argv[1]}))
