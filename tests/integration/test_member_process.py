"""The group-member client process under real signals: the nemesis' kill / pause / resume /
start act on a real pid, a restart is a new incarnation, and no member outlives its session,
even a SIGKILLed one. No cluster is needed: a member whose brokers cannot be reached keeps
running (its rows crossing the pipe: tests/unit/test_member_process.py)."""

from __future__ import annotations

import psutil

from pytest_kreplica.cluster.base import NodeState
from pytest_kreplica.scenarios.member_process import INCARNATION_STEP, MemberProcess
from pytest_kreplica.waits import wait_until
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
        member.pause()
        assert member.state is NodeState.PAUSED
        # a signal is delivered when the target next runs: on a loaded machine the status
        # can still read "running" right after kill() returned
        wait_until(lambda: psutil.Process(first).status() == psutil.STATUS_STOPPED, 10,
                   "the paused member process stopped",
                   lambda: f"pid {first}: {psutil.Process(first).status()}")
        member.resume()
        wait_until(lambda: psutil.Process(first).status() != psutil.STATUS_STOPPED, 10,
                   "the resumed member process running",
                   lambda: f"pid {first}: {psutil.Process(first).status()}")
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


def test_no_member_process_outlives_a_killed_session():
    script = (
        "import sys, time\n"
        "from pytest_kreplica.scenarios.member_process import MemberProcess\n"
        "class W:\n"
        "    def poll(self, *a, **k): pass\n"
        "    def event(self, *a, **k): pass\n"
        f"m = MemberProcess(['t'], 'g', lambda: {NOWHERE!r}, W(), 1).start()\n"
        "print(m.pid, flush=True)\n"
        "time.sleep(120)\n")
    with child_session(script) as (pid, sigkill):
        assert gone(pid) is not None, "the member process did not start"
        sigkill(30, "the group member process")
