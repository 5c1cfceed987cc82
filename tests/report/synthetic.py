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


if __name__ == "__main__":  # python -m tests.report.synthetic DIR: a page to look at
    import sys

    make_run(Path(sys.argv[1]))
    print(json.dumps({"written": sys.argv[1]}))
