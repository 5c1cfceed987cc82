"""The launcher's wrapper: the command runs only while the parent that asked for it lives,
with the parent-death signal set by setpriv (what a SIGKILLed session relies on:
tests/integration/test_member_process.py, test_reaper.py)."""

from __future__ import annotations

import subprocess
import time

import pytest

from pytest_kreplica.cluster.launcher import Launcher, bound_to_parent
from pytest_kreplica.errors import ClusterError


def test_the_command_runs_under_its_parent_and_not_under_another():
    ok = subprocess.run(bound_to_parent(["sh", "-c", "exit 7"]), timeout=30)
    assert ok.returncode == 7  # the command itself ran, its exit code came back
    orphan = subprocess.run(bound_to_parent(["sh", "-c", "exit 7"], parent_pid=1), timeout=30)
    assert orphan.returncode == 1  # "its parent" is gone: the command never starts


def test_a_launched_child_carries_the_parent_death_signal_in_its_own_group():
    probe = Launcher.get().popen(
        ["python3", "-c", "import ctypes, os; s = ctypes.c_int(); "
         "ctypes.CDLL(None).prctl(2, ctypes.byref(s), 0, 0, 0); "
         "print(s.value, os.getpgid(0) == os.getpid())"],
        stdout=subprocess.PIPE, text=True)
    out, _ = probe.communicate(timeout=30)
    assert out.split() == ["9", "True"], f"PR_GET_PDEATHSIG, own group of a child: {out!r}"


def test_run_returns_the_exit_code_and_output_and_kills_what_runs_too_long():
    launcher = Launcher.get()
    done = launcher.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=10, what="sh")
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    merged = launcher.run(["sh", "-c", "echo out; echo err >&2"], timeout=10, what="sh",
                          merge_output=True)
    assert merged.returncode == 0 and merged.stdout == "out\nerr\n"
    started = time.monotonic()
    with pytest.raises(ClusterError, match="sleep 30 did not finish within 1 s"):
        launcher.run(["sleep", "30"], timeout=1, what="sleep 30")
    assert time.monotonic() - started < 10
