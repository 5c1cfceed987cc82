"""The client process as the nemesis' target (``producer`` / ``consumer``), for real: the
strikes act on a real pid (the kernel shows it gone or stopped), a restore is a new
incarnation, nothing is started once the workload is done with it; and on a real broker,
per client, a producer or consumer struck mid-run is recorded (the strike, the restart),
a restarted producer writes ids of its own, and the history the checker reads stays
valid."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil
import pytest

from pytest_kreplica.cluster.base import NodeState
from pytest_kreplica.errors import ClusterError
from pytest_kreplica.matrix import parse_matrix
from pytest_kreplica.plugin.failures import add_nemesis
from pytest_kreplica.waits import wait_until
from pytest_kreplica.workloads.incarnations import Restartable
from pytest_kreplica.workloads.lines import ClientProcess
from tests.case_cluster import started_cluster
from tests.killed import gone

TICKER = "import time\nwhile True:\n    print('{\"tick\": 1}', flush=True)\n    time.sleep(0.05)"


def _rows(run_dir: Path, table: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / f"{table}.jsonl").read_text().splitlines()]


@pytest.fixture
def ticker(tmp_path):
    handle = Restartable("producer", "test client", lambda k: ClientProcess(
        [sys.executable, "-c", TICKER], tmp_path / f"ticker-{k}.log", lambda _: None,
        f"ticker-{k}"))
    yield handle
    handle.close(5)


def test_strikes_act_on_the_real_process_and_a_restore_is_a_new_incarnation(ticker):
    first = ticker.start().pid
    wait_until(lambda: ticker.lines() > 0, 30, "the client printing",
               lambda: f"{ticker.lines()} lines")
    ticker.pause()  # returns once the kernel shows the process stopped
    assert psutil.Process(first).status() == psutil.STATUS_STOPPED
    assert ticker.state is NodeState.PAUSED
    ticker.resume()
    assert ticker.state is NodeState.RUNNING
    ticker.kill()
    assert gone(first) is None and ticker.state is NodeState.STOPPED and ticker.down()
    component = ticker.component()
    before = component.progress()
    ticker.start()
    assert ticker.incarnation == 1 and ticker.pid != first and not ticker.down()
    component.wait_progress(before, 30)  # the new incarnation prints: recovered
    second = ticker.pid
    ticker.terminate(10)
    assert gone(second) is None
    ticker.close(5)
    assert ticker.start().pid == second and not ticker.alive()  # closed: no new incarnation
    with pytest.raises(ClusterError, match="not running"):
        ticker.kill()  # a strike on no process did not act


CASE = {"dimensions": {"failure": ["hard"], "target": ["producer"], "acks": [-1],
                       "partitions": [1], "producer_mode": ["async"], "messages": [400],
                       "downtime": [3], "brokers": [1], "replication_factor": [1],
                       "min_insync_replicas": [1]}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    (case,) = parse_matrix(Path("client-targets.yaml"), {
        "dimensions": {**CASE["dimensions"], "client": ["java"]}}).cases
    with started_cluster(case, tmp_path_factory.mktemp("client-targets")) as c:
        yield c


@pytest.mark.parametrize(("client", "target", "failure"), [
    ("java", "producer", "hard"), ("librdkafka", "producer", "hard"),
    ("librdkafka", "consumer", "hard"), ("librdkafka", "producer", "clean"),
    ("java", "consumer", "soft")])
def test_a_client_process_struck_mid_run_is_recorded_and_the_history_stays_valid(
        cluster, tmp_path, client, target, failure):
    from pytest_kreplica.faults import FAILURES
    from pytest_kreplica.scenarios.runner import CaseHooks, run_case

    dims = {**CASE["dimensions"], "client": [client], "target": [target],
            "failure": [failure]}
    (case,) = parse_matrix(Path("client-targets.yaml"), {"dimensions": dims}).cases
    hooks = CaseHooks()
    add_nemesis(case, hooks)
    run_dir = tmp_path / case.case_id
    result = run_case(case, cluster, run_dir, hooks=hooks, replica_check=False)
    (fault,) = result.extra["faults"]
    assert fault["target"] == target and fault["node"] == target and not fault["error"], fault
    assert fault["state_after_strike"] == FAILURES[failure].struck_state  # read back: psutil
    events = _rows(run_dir, "events")
    strikes = [e for e in events if e["kind"] == FAILURES[failure].event]
    assert [(e["node"], e["role"]) for e in strikes] == [(target, target)]
    base = 0 if target == "producer" else 1
    starts = [e["process"] for e in events if e["kind"] == "start" and e["process"] is not None
              and e["process"] % 100 == base]
    restarted = failure != "soft"  # a pause resumes the same process
    assert starts == ([base, base + 100] if restarted else [base]), starts
    sends = _rows(run_dir, "sends")
    assert len({s["id"] for s in sends}) == len(sends)  # one row per id
    if target == "producer" and restarted:
        later = [s for s in sends if s["process"] == 100]
        assert later and all(s["id"].startswith("1.") for s in later)
        assert any(s["status"] == "ok" for s in later)  # the new incarnation was acknowledged
    if target == "consumer" and restarted:
        assert {p["process"] for p in _rows(run_dir, "polls")} >= {1, 101}
    result.assert_valid()
    assert result.verdict.valid, result.verdict.summary()
