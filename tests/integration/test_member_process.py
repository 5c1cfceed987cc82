"""The group-member client process under real signals: the nemesis' kill / pause / resume /
start act on a real pid, the member's state is the kernel's (a pause that did not stop the
process is an error), a restart is a new incarnation, and no member outlives its session,
even a SIGKILLed one. No cluster is needed: a member whose brokers cannot be reached keeps
running (its rows crossing the pipe: tests/unit/test_member_process.py)."""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest

from pytest_kreplica.cluster.base import NodeState
from pytest_kreplica.errors import ClusterError
from pytest_kreplica.faults import Component, FaultPlan, Nemesis
from pytest_kreplica.faults.registry import GROUP_MEMBER
from pytest_kreplica.history import RunWriter
from pytest_kreplica.waits import wait_until
from pytest_kreplica.workloads import procstate
from pytest_kreplica.workloads.member_process import INCARNATION_STEP, MemberProcess
from tests.killed import child_session, gone

NOWHERE = "127.0.0.1:1"  # nothing listens: the member's client fails and is rebuilt


class _Writer:
    def __init__(self):
        self.events = []

    def poll(self, *args, **kwargs):
        raise AssertionError(f"no broker, yet a poll row: {args}")

    def event(self, *args, **kwargs):
        self.events.append((args[0], kwargs.get("process"), kwargs.get("detail")))


def test_signals_act_on_the_member_process_and_a_restart_is_a_new_incarnation():
    writer = _Writer()
    member = MemberProcess(["t"], "g", lambda: NOWHERE, writer, 1).start()
    try:
        first = member.pid
        wait_until(lambda: "pytest_kreplica" in " ".join(psutil.Process(first).cmdline()),
                   30, "the member process running its module",
                   lambda: f"pid {first}: {psutil.Process(first).cmdline()}")
        member.pause()  # returns once the kernel shows the process stopped
        assert psutil.Process(first).status() == psutil.STATUS_STOPPED
        assert member.state is NodeState.PAUSED
        member.resume()
        assert psutil.Process(first).status() != psutil.STATUS_STOPPED
        assert member.state is NodeState.RUNNING
        member.kill()
        assert member.state is NodeState.STOPPED and gone(first) is None
        member.start()
        assert member.pid != first and member.process == 1 + INCARNATION_STEP
        starts = [p for k, p, _ in writer.events if k == "start"]
        assert starts == [1, 1 + INCARNATION_STEP]
        member.terminate(timeout=20)
        assert member.state is NodeState.STOPPED
    finally:
        member.kill()


@pytest.fixture
def member():
    started = MemberProcess(["t"], "g", lambda: NOWHERE, _Writer(), 1).start()
    yield started
    started.kill()


def test_the_member_state_is_the_kernels_not_the_senders(member):
    """A SIGSTOP or SIGCONT from anyone shows in ``state`` (the nemesis reads it back)."""
    os.kill(member.pid, signal.SIGSTOP)
    wait_until(lambda: member.state is NodeState.PAUSED, 10, "the member paused",
               lambda: f"state {member.state.value}, status {member.status()}")
    os.kill(member.pid, signal.SIGCONT)
    wait_until(lambda: member.state is NodeState.RUNNING, 10, "the member running",
               lambda: f"state {member.state.value}, status {member.status()}")
    member.kill()
    assert member.state is NodeState.STOPPED and member.status() == "gone"


def test_a_sigstop_that_did_not_arrive_is_a_cluster_error_within_its_bound(member,
                                                                           monkeypatch):
    """The planted fault: the SIGSTOP is never sent (every other step is the product's)."""
    monkeypatch.setattr(procstate, "SIGNAL_TIMEOUT_S", 1.0)
    sent = []
    monkeypatch.setattr(member, "_signal", sent.append)
    with pytest.raises(ClusterError, match=r"SIGSTOP did not act on group member 1 \(pid "
                       r"\d+\): expected its process paused within 1 s; last seen: state "
                       r"running \(process status \w+\)"):
        member.pause()
    assert sent == [signal.SIGSTOP] and member.state is NodeState.RUNNING
    monkeypatch.undo()
    os.kill(member.pid, signal.SIGSTOP)  # stopped behind its back: resume must SIGCONT it
    wait_until(lambda: member.state is NodeState.PAUSED, 10, "the member paused",
               lambda: f"state {member.state.value}")
    member.resume()
    assert member.state is NodeState.RUNNING


def test_a_soft_fault_whose_sigstop_did_not_arrive_is_a_harness_error_on_the_timeline(
        member, monkeypatch, tmp_path):
    """The nemesis' ``soft`` on target group-member, on the real member process: the
    kernel's state read back, the fault's error and its ``fault-did-not-act`` event."""
    monkeypatch.setattr(procstate, "SIGNAL_TIMEOUT_S", 1.0)
    monkeypatch.setattr(member, "_signal", lambda sig: None)  # planted: nothing is sent
    writer = RunWriter(tmp_path / "run")
    comp = Component(GROUP_MEMBER, "consumer group member", member, lambda: 0,
                     lambda baseline, timeout: None)
    plan = FaultPlan(seed=1, failure="soft", target=GROUP_MEMBER, downtime_s=0.0,
                     delay_s=(0.0, 0.01))
    nemesis = Nemesis(None, writer, plan, [("t", 0)], components={GROUP_MEMBER: comp})
    with pytest.raises(ClusterError, match="SIGSTOP did not act on group member 1"):
        nemesis.run()
    (record,) = nemesis.records
    assert "expected its process paused within 1 s; last seen: state running" in record.error
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text()
              .splitlines()]
    kinds = [e["kind"] for e in events if e["node"] == GROUP_MEMBER]
    assert kinds == ["pause", "fault-did-not-act", "resume", "recovered"], kinds
    assert "SIGSTOP did not act" in events[kinds.index("fault-did-not-act")]["detail"]


def test_pausing_a_dead_member_is_a_cluster_error(member):
    member.kill()
    with pytest.raises(ClusterError, match="cannot pause group member 1: its process is not "
                                           "running"):
        member.pause()


def test_no_member_process_outlives_a_killed_session():
    script = (
        "import sys, time\n"
        "from pytest_kreplica.workloads.member_process import MemberProcess\n"
        "class W:\n"
        "    def poll(self, *a, **k): pass\n"
        "    def event(self, *a, **k): pass\n"
        f"m = MemberProcess(['t'], 'g', lambda: {NOWHERE!r}, W(), 1).start()\n"
        "print(m.pid, flush=True)\n"
        "time.sleep(120)\n")
    with child_session(script) as (pid, sigkill):
        assert gone(pid) is not None, "the member process did not start"
        sigkill(30, "the group member process")
