"""The machine's shared Spark Connect server, for real: two client processes share one server
(one supervisor, one driver JVM), it outlives a SIGKILLed client only while another client
holds it and stops itself after the idle timeout once none does; SIGKILLing its supervisor
takes its JVM down with it; the ``kreplica`` command joins a running server by default (which
checks a small history itself) and never starts one for that. Each test has its own cache, so
its own server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pytest_kreplica.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]
IDLE_S = 3
CLIENT = """
import sys, time
from pytest_kreplica.validation.engine.spark import get_spark
spark = get_spark("connect")
assert spark.range(10).count() == 10
print("ready", flush=True)
time.sleep(600)
"""


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ, KREPLICA_CACHE=str(tmp_path / "cache"), KREPLICA_SPARK_CDS="0",
             KREPLICA_SPARK_IDLE_S=str(IDLE_S), PYTHONPATH=str(ROOT))
    e.pop("KREPLICA_SPARK_MASTER", None)
    return e


def _client(env, tmp_path, name) -> tuple[subprocess.Popen, Path]:
    err = tmp_path / f"{name}.err"
    with open(err, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-c", CLIENT], env=env,
                                stdout=subprocess.PIPE, stderr=sink, text=True)
    line = proc.stdout.readline()  # bounded: the client's own start timeout ends it
    assert line.strip() == "ready", f"client {name}: expected 'ready', saw {line!r}; {err}"
    return proc, err


def _server(tmp_path) -> tuple[psutil.Process, list[psutil.Process]]:
    states = list((tmp_path / "cache" / "spark" / "connect").glob("*.json"))
    assert len(states) == 1, f"expected one server state file, saw {states}"
    supervisor = psutil.Process(json.loads(states[0].read_text())["pid"])
    jvms = [p for p in supervisor.children(recursive=True) if "java" in p.name()]
    assert jvms, f"supervisor {supervisor.pid} has no JVM child"
    return supervisor, jvms


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _gone(procs: list[psutil.Process], within: float, what: str) -> None:
    wait_until(lambda: not any(_alive(p) for p in procs), within, what,
               seen=lambda: f"still running: {[p.pid for p in procs if _alive(p)]}")


def test_clients_share_one_server_which_idles_out_after_the_last_is_killed(env, tmp_path):
    a, a_err = _client(env, tmp_path, "a")
    b, b_err = _client(env, tmp_path, "b")
    try:
        assert "starting the machine's Spark Connect server" in a_err.read_text()
        assert "starting" not in b_err.read_text(), "the second client started a server"
        supervisor, jvms = _server(tmp_path)
        assert not [p for p in psutil.process_iter(["cmdline"])
                    if "connect_server" in " ".join(p.info["cmdline"] or [])
                    and str(tmp_path) in " ".join(p.info["cmdline"] or [])
                    and p.pid != supervisor.pid], "more than one server for one cache"
        a.send_signal(signal.SIGKILL)
        a.wait(timeout=30)
        time.sleep(IDLE_S * 3)
        assert _alive(supervisor), "the server stopped while client b still used it"
        b.send_signal(signal.SIGKILL)
        b.wait(timeout=30)
        _gone([supervisor, *jvms], IDLE_S + 60, "the server to stop after its idle timeout")
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()


def test_a_killed_supervisor_takes_its_jvm_down(env, tmp_path):
    a, _ = _client(env, tmp_path, "a")
    try:
        supervisor, jvms = _server(tmp_path)
        supervisor.send_signal(signal.SIGKILL)
        _gone([supervisor, *jvms], 60, "the server's JVM to exit with its supervisor")
    finally:
        a.kill()


def _kreplica_check(env, history: Path, command: str = "check") -> tuple[dict, str]:
    """``kreplica check --json`` (or ``verify-logs``) as a user types it (no master given):
    verdict and stderr."""
    done = subprocess.run([sys.executable, "-m", "pytest_kreplica.cli", command, str(history),
                           "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), f"expected a verdict, exit {done.returncode}: " \
                                      f"{done.stderr[-2000:]}"
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def _write_cycle(run_dir: Path) -> Path:
    """A transactional history with a write cycle: its check runs the cycle search."""
    from tests.checker.conftest import History
    from tests.checker.test_txn_planted import Txn, write_cycle

    h = History(run_dir)
    write_cycle(Txn(h))
    return h.close()


def test_the_command_joins_a_running_server_and_otherwise_checks_in_process(env, tmp_path):
    """... and the server's driver runs a small history's check / verify-logs itself (its
    log names the run) with exactly the answer of the command's own Connect session
    (``KREPLICA_SPARK_SERVED=0``)."""
    history = ROOT / "fixtures" / "histories" / "lost"
    from tests.checker.conftest import History, lost_in_and_out_of_the_log

    run = lost_in_and_out_of_the_log(History(tmp_path / "replicas"))
    a, _ = _client(env, tmp_path, "a")
    answers = {}
    try:
        for command in ("check", "verify-logs"):
            answers[command], _ = _kreplica_check(env, run, command)
            own, _ = _kreplica_check(dict(env, KREPLICA_SPARK_SERVED="0"), run, command)
            assert answers[command] == own, f"{command}: served {answers[command]} != {own}"
        log = next((tmp_path / "cache" / "spark" / "connect").glob("*.log")).read_text()
        for op in ("check", "verify_logs"):
            assert f"served {op} of {run.resolve()} in" in log, log[-3000:]
        supervisor, jvms = _server(tmp_path)
        joined, err = _kreplica_check(env, history)
        assert "validating on the machine's running Spark Connect server" in err, err
        assert "starting" not in err, f"the command started a second server: {err}"
        # a transactional check through Connect: its one progress line and nothing else
        # (its cycle search once made the Connect client print a window warning)
        cycle, err = _kreplica_check(env, _write_cycle(tmp_path / "cycle"))
        assert cycle["counts"]["write_cycle"] == 1, cycle
        assert err.count("\n") == 1 and "Spark Connect server" in err, err
    finally:
        a.kill()
        a.wait(timeout=30)
    _gone([supervisor, *jvms], IDLE_S + 60, "the server to stop once its last client is gone")
    alone, err = _kreplica_check(env, history)
    assert "Spark Connect" not in err, f"expected an in-process check, saw: {err}"
    states = list((tmp_path / "cache" / "spark" / "connect").glob("*.json"))
    assert not states, f"the command started a server of its own: {states}"
    assert joined["counts"]["lost"] == 2 and not joined["passed"], joined
    counts = answers["check"]["counts"]
    assert (counts["lost"], counts["in_log"], counts["not_in_log"]) == (1, 1, 1), counts
    assert not answers["check"]["passed"] and answers["verify-logs"]["valid"], answers
    assert (joined["counts"], joined["passed"]) == (alone["counts"], alone["passed"])
