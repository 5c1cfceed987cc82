"""The prepare-once mechanism: re-entry raises, waits are reported with the holder's pid, a
dead holder is taken over, failures leave a marker, and two processes prepare once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pytest_kreplica import once
from pytest_kreplica.errors import EnvironmentProblem

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def lines():
    seen: list[str] = []
    previous = once.set_say(seen.append)
    yield seen
    once.set_say(previous)


def _holder(lock: Path, ready: Path, hold_s: float, *, die: bool = False) -> subprocess.Popen:
    """Another process that takes ``lock`` through ``once.held`` and holds it."""
    code = textwrap.dedent(f"""
        import os, signal, time
        from pathlib import Path
        from pytest_kreplica import once
        with once.held(Path({str(lock)!r}), "a test holder"):
            Path({str(ready)!r}).write_text("held")
            time.sleep({hold_s})
            if {die}:
                os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert proc.poll() is None, "the holder process exited before taking the lock"
        assert time.monotonic() < deadline, "the holder did not take the lock within 30 s"
        time.sleep(0.05)
    return proc


def test_nested_take_raises_instead_of_waiting(tmp_path, lines):
    lock = tmp_path / "x.lock"
    started = time.monotonic()
    with once.held(lock, "outer"), pytest.raises(once.Reentered, match="already holds"), \
            once.held(lock, "inner"):
        pass
    assert time.monotonic() - started < 1.0
    with once.held(lock, "again"):  # released properly after the failed nesting
        pass


def test_nested_prepare_of_the_same_thing_raises(tmp_path, lines):
    lock = tmp_path / "x.lock"

    def build():
        once.prepare("inner", lock, lambda: False, lambda: None)

    with pytest.raises(once.Reentered):
        once.prepare("outer", lock, lambda: False, build)


def test_other_threads_wait_rather_than_raise(tmp_path, lines):
    lock = tmp_path / "x.lock"
    order: list[str] = []

    def other():
        with once.held(lock, "thread"):
            order.append("thread")

    with once.held(lock, "main"):
        t = threading.Thread(target=other)
        t.start()
        time.sleep(0.3)
        order.append("main")
    t.join(10)
    assert order == ["main", "thread"]


def test_a_wait_names_the_holder_within_seconds_and_repeats(tmp_path, lines, monkeypatch):
    monkeypatch.setattr(once, "NOTICE_EVERY_S", 1.0)
    lock = tmp_path / "x.lock"
    holder = _holder(lock, tmp_path / "ready", 4.0)
    try:
        started = time.monotonic()
        with once.held(lock, "the waiter"):
            waited = time.monotonic() - started
    finally:
        holder.wait(30)
    assert waited >= 2.0, waited
    waits = [line for line in lines if "waiting for the waiter" in line]
    assert len(waits) >= 2, lines
    assert f"held by pid {holder.pid} (a test holder)" in waits[0]


def test_a_wait_is_bounded_and_says_who_holds(tmp_path, lines):
    lock = tmp_path / "x.lock"
    holder = _holder(lock, tmp_path / "ready", 30.0)
    try:
        with pytest.raises(EnvironmentProblem, match=f"held by pid {holder.pid}"), \
                once.held(lock, "the waiter", timeout=3.0):
            pass
    finally:
        holder.kill()
        holder.wait(10)


def test_a_dead_holder_is_taken_over(tmp_path, lines):
    lock = tmp_path / "x.lock"
    holder = _holder(lock, tmp_path / "ready", 0.5, die=True)
    holder.wait(30)
    assert holder.returncode == -signal.SIGKILL
    started = time.monotonic()
    with once.held(lock, "the next taker"):
        assert time.monotonic() - started < 2.0
    assert any(f"taking over x.lock from pid {holder.pid}" in line for line in lines), lines


def test_a_failed_optional_step_leaves_a_marker_and_is_skipped(tmp_path, lines):
    marker = tmp_path / "thing.failed"
    calls = []

    def build():
        calls.append(1)
        raise RuntimeError("no luck")

    assert once.prepare("making a thing", tmp_path / "t.lock", lambda: False, build,
                        failed_marker=marker) is False
    assert "RuntimeError: no luck" in marker.read_text()
    assert once.prepare("making a thing", tmp_path / "t.lock", lambda: False, build,
                        failed_marker=marker) is False
    assert len(calls) == 1
    old = time.time() - 7200
    os.utime(marker, (old, old))
    once.prepare("making a thing", tmp_path / "t.lock", lambda: False, build,
                 failed_marker=marker, retry_after_s=3600)
    assert len(calls) == 2
    assert any("failed after" in line and "no luck" in line for line in lines)


def test_a_failed_required_step_raises(tmp_path, lines):
    with pytest.raises(RuntimeError, match="no luck"):
        once.prepare("a must", tmp_path / "t.lock", lambda: False,
                     lambda: (_ for _ in ()).throw(RuntimeError("no luck")))
    assert lines[-1].startswith("kreplica: a must failed after")


def test_progress_line_per_step_with_duration(tmp_path, lines):
    done = tmp_path / "done"
    assert once.prepare("making it", tmp_path / "t.lock", done.exists,
                        lambda: done.write_text("x"), detail=lambda: "3 jars")
    assert lines[0] == "kreplica: making it…"
    assert lines[1].startswith("kreplica: making it… ") and lines[1].endswith(" s (3 jars)")
    assert once.prepare("making it", tmp_path / "t.lock", done.exists, lambda: 1 / 0)
    assert len(lines) == 2  # nothing printed when there is nothing to do


def test_two_processes_prepare_once(tmp_path):
    code = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from pytest_kreplica import once
        out = Path({str(tmp_path)!r})
        def build():
            (out / f"built-by-{{os.getpid()}}").write_text("x")
            time.sleep(2)
            (out / "thing").write_text(str(os.getpid()))
        ok = once.prepare("the thing", out / "t.lock", (out / "thing").exists, build)
        print((out / "thing").read_text() if ok else "failed")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert len(list(tmp_path.glob("built-by-*"))) == 1
    assert outs[0][0] == outs[1][0]
    waiter_err = "".join(err for _out, err in outs)
    assert "kreplica: the thing…" in waiter_err
