"""The planted acks=1 loss that the trade-off tests share (tests/unit/test_tradeoffs.py and
tests/checker/test_verdicts.py): node 1 acknowledged m0..m3 at offsets 0..3 and was killed at
``STRIKE_NS`` (the cluster's follower lag bound: ``LAG_BOUND_MS``); node 2, which never had
m3, led after and wrote m4, m5 at 3, 4; a consumer read 0, 1, 2, then m4 and m5. Each test
adds its own replica snapshot and metadata."""

from __future__ import annotations

from pytest_kreplica.history import RunWriter

STRIKE_NS = 50
LAG_BOUND_MS = 5000  # the follower lag bound the planted cluster ran with


def leader_kill(elected_from_isr=True):
    """The nemesis's fault record of that kill (verdict.json ``faults``)."""
    return [{"index": 1, "failure": "hard", "target": "leader", "topic": "t", "partition": 0,
             "node": 1, "leader_before": 1, "isr_before": [1, 2, 3], "led_before": ["t-0"],
             "strike_ns": STRIKE_NS, "restore_ns": 500, "new_leader": 2, "election_s": 1e-7,
             "elected_from_isr": elected_from_isr, "before_ns": STRIKE_NS - 10,
             "lag_bound_ms": LAG_BOUND_MS}]


def write_lost_m3(run):
    """The history of that run (sends and polls) in ``run``."""
    with RunWriter(run) as w:
        for i in range(4):
            w.send(0, "t", 0, f"m{i}", i, "ok", 10 + i, 11 + i)
        w.send(0, "t", 0, "m4", 3, "ok", 100, 101)
        w.send(0, "t", 0, "m5", 4, "ok", 102, 103)
        for i, (offset, mid) in enumerate([(0, "m0"), (1, "m1"), (2, "m2"), (3, "m4"),
                                           (4, "m5")]):
            w.poll(1, i, "t", 0, offset, mid, 200 + i)
    return run
