"""The group-member process's plumbing: the child's rows as JSON lines, copied into the run's
writer by the parent, a line cut short by a kill dropped; incarnations numbered apart. The
member against a real cluster, SIGKILLed by the nemesis, runs in matrices/transactions.yaml
(``target: group-member``)."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

from pytest_kreplica.cluster.base import NodeState
from pytest_kreplica.workloads.lines import LineWriter
from pytest_kreplica.workloads.member_process import INCARNATION_STEP, MemberProcess


class _Writer:
    def __init__(self):
        self.polls, self.events = [], []

    def poll(self, *args, **kwargs):
        self.polls.append((args, kwargs))

    def event(self, *args, **kwargs):
        self.events.append((args, kwargs))


def _lines(capsys, calls):
    child = LineWriter()
    for kind, args, kwargs in calls:
        getattr(child, kind)(*args, **kwargs)
    return capsys.readouterr().out.encode()


def test_rows_cross_the_pipe_unchanged_and_a_cut_line_is_dropped(capsys):
    out = _lines(capsys, [
        ("event", ("rebalance",), {"process": 101, "assignment": [["t", 0], ["t", 2]],
                                   "generation": 3}),
        ("poll", (101, 1, "t", 0, 7, "P0-T000001-0", 12345, 0),
         {"isolation": "read_committed", "generation": 3}),
        ("event", ("client-crash",), {"process": 101, "detail": "boom"})])
    cut = json.dumps({"k": "poll", "a": [101, 2, "t", 0, 8, "x", 1, 0], "kw": {}})[:30]
    writer = _Writer()
    member = MemberProcess(["t"], "g", lambda: "localhost:1", writer, 1)
    member._copy_rows(SimpleNamespace(stdout=io.BytesIO(out + cut.encode())))
    assert writer.polls == [((101, 1, "t", 0, 7, "P0-T000001-0", 12345, 0),
                             {"isolation": "read_committed", "generation": 3})]
    assert [a[0] for a, _ in writer.events] == ["rebalance", "client-crash"]
    assert writer.events[0][1]["assignment"] == [["t", 0], ["t", 2]]
    assert member.seen == {"P0-T000001-0"} and member.polled == 1
    assert member.joins == 1 and member.errors == ["boom"]


def test_a_member_that_never_started_is_stopped_and_numbered_per_incarnation():
    member = MemberProcess(["t"], "g", lambda: "localhost:1", _Writer(), 2)
    assert member.state is NodeState.STOPPED and member.pid is None and not member.alive()
    member.stop()  # nothing to stop: no error
    assert member.process + INCARNATION_STEP == 2
