"""The distributed path for real (issue 15): a Spark standalone master and worker started from
the installed pyspark (``spark-class``, loopback only), ``kreplica check`` pointed at them with
``--spark-master spark://…``, and the verdict compared with local mode's on the same real run
directory (fixtures/histories/mirrored-hard, a recorded C.6 run). The worker's work directory
proves the job ran in its executors, not in the driver; every JVM of the cluster is gone after
the test."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from pytest_kreplica.cluster.launcher import Launcher
from pytest_kreplica.cluster.ports import claim_ports, release_ports
from pytest_kreplica.cluster.reaper import marked_processes, owner_env
from pytest_kreplica.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "fixtures" / "histories" / "mirrored-hard"
START_S = 90.0
CHECK_S = 300.0


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _env(tmp_path: Path) -> dict[str, str]:
    import pyspark

    env = dict(os.environ, SPARK_HOME=str(Path(pyspark.__file__).parent),
               SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="localhost",
               SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_NO_DAEMONIZE="1",
               PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(ROOT),
               KREPLICA_SPARK_CDS="0")
    env.pop("KREPLICA_SPARK_MASTER", None)
    return env


def _start(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen:
    """A daemon that dies with this process and carries the owner marker the session reaper
    knows (inherited by its executors and their Python workers)."""
    marked = {**env, **owner_env(str(log.parent))}
    with open(log, "wb") as sink:
        return Launcher.get().popen([str(_spark_class()), *args], env=marked, stdout=sink,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _stop(proc: subprocess.Popen) -> None:
    """The whole process group: the JVM, and on the worker its executors and Python workers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _logged(log: Path, text: str, what: str) -> None:
    wait_until(lambda: log.is_file() and text in log.read_text(errors="replace"), START_S,
               what, seen=lambda: f"{log}: ...{log.read_text(errors='replace')[-600:]}"
               if log.is_file() else f"{log} not written")


@pytest.fixture
def standalone(tmp_path):
    """``(master URL, worker work dir, [master, worker])`` of a one-worker cluster."""
    env = _env(tmp_path)
    master_port, master_ui, worker_port, worker_ui = ports = claim_ports(4)
    work = tmp_path / "worker"
    work.mkdir()
    url = f"spark://127.0.0.1:{master_port}"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(_start(env, tmp_path / "master.log", "org.apache.spark.deploy.master.Master",
                            "--host", "127.0.0.1", "--port", str(master_port),
                            "--webui-port", str(master_ui)))
        _logged(tmp_path / "master.log", "I have been elected leader",
                f"the standalone master on {url} to lead")
        procs.append(_start(env, tmp_path / "worker.log", "org.apache.spark.deploy.worker.Worker",
                            url, "--host", "127.0.0.1", "--port", str(worker_port),
                            "--webui-port", str(worker_ui), "--cores", "2",
                            "--memory", "1536m", "--work-dir", str(work)))
        _logged(tmp_path / "worker.log", "Successfully registered with master",
                f"the worker to register with {url}")
        yield url, work, procs
    finally:
        for proc in reversed(procs):
            _stop(proc)
        release_ports(ports)


def _check(env: dict[str, str], master: str) -> tuple[int, dict]:
    out = subprocess.run([sys.executable, "-m", "pytest_kreplica.cli", "check", str(RUN),
                          "--json", "--spark-master", master], env=env, capture_output=True,
                         text=True, timeout=CHECK_S, check=False)
    assert out.stdout.strip(), f"kreplica check on {master}: no JSON; stderr: {out.stderr[-2000:]}"
    return out.returncode, json.loads(out.stdout)


def test_a_standalone_cluster_gives_the_local_verdict_and_leaves_no_jvm(standalone, tmp_path):
    url, work, procs = standalone
    env = _env(tmp_path)
    code, remote = _check(env, url)
    executors = list(work.glob("app-*/*/stderr"))
    assert executors, f"no executor ran on the worker (nothing under {work})"
    local_code, local = _check(env, "local[2]")
    assert (code, remote["valid"], remote["counts"]) == (local_code, local["valid"],
                                                         local["counts"])
    recorded = json.loads((RUN / "verdict.json").read_text())["counts"]
    assert {k: remote["counts"][k] for k in recorded} == recorded
    assert remote["counts"]["duplicated"] == 36 and code == 0
    tree = [psutil.Process(proc.pid) for proc in procs]
    tree += [child for parent in list(tree) for child in parent.children(recursive=True)]
    marked = {p.pid for p in marked_processes(str(tmp_path))}
    assert marked >= {proc.pid for proc in procs}, f"unmarked daemons: {marked}"
    for proc in procs:
        _stop(proc)
    wait_until(lambda: not any(_alive(p) for p in tree)
               and not marked_processes(str(tmp_path)), 30.0,
               "every JVM of the standalone cluster to exit",
               seen=lambda: f"still running: {[p.pid for p in tree if _alive(p)]}, marked: "
                            f"{[p.pid for p in marked_processes(str(tmp_path))]}")


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
