"""Issue 19 (a): a cluster started out of band (``kreplica cluster up --detach``) is driven
*only* through the external backend and a cluster file: a hard leader kill (``kill -KILL
{pid}``, restart by re-running the node's own command line) and a pause (``kill -STOP`` /
``kill -CONT``). The faults must act (the killed JVM is gone, its restart has a new pid, the
events say so) and both verdicts must be valid."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

pytestmark = [pytest.mark.external, pytest.mark.ci]

KREPLICA = [sys.executable, "-m", "pytest_kreplica.cli"]
MATRIX = """\
description: external backend proof - a hard leader kill and a leader pause
scenario: replication
dimensions:
  failure: [hard, soft]
  target: [leader]
  acks: [-1]
  partitions: [1]
  replication_factor: [3]
  min_insync_replicas: [2]
  failures: [1]
  downtime: [5]
  messages: [500]
"""


def cluster_file(workdir: Path) -> tuple[Path, dict[int, int]]:
    """The cluster file a user would write for the detached cluster: its nodes from
    ``cluster.json``, a restart script per node (its JVM's own command line and directory),
    and the pid looked up afresh at each strike (a restart changes it)."""
    state = json.loads((workdir / "cluster.json").read_text())
    nodes, pids = [], {}
    for node_id, node in sorted(state["nodes"].items()):
        proc = psutil.Process(node["pid"])
        pids[int(node_id)] = node["pid"]
        script = workdir / f"restart-{node_id}.sh"
        script.write_text(f"cd {shlex.quote(proc.cwd())}\n"
                          f"setsid nohup {shlex.join(proc.cmdline())} "
                          f">> {shlex.quote(node['log_file'])} 2>&1 < /dev/null &\n")
        host, port = node["address"].rsplit(":", 1)
        # [.] keeps the pattern from matching the shell that runs pgrep
        mark = f"kreplica.workdir={workdir} -Dkreplica[.]node={node_id}( |$)"
        nodes.append({"id": int(node_id), "host": host, "port": int(port),
                      "pid_command": f"pgrep -f -- {shlex.quote(mark)}",
                      "log_dir": node["log_dir"], "log_file": node["log_file"]})
    config = {
        "kafka_version": state["kafka_version"],
        "nodes": nodes,
        "faults": {
            "kill": {"strike": "kill -KILL {pid}",
                     "restore": f"sh {shlex.quote(str(workdir))}/restart-{{node}}.sh"},
            "pause": {"strike": "kill -STOP {pid}", "restore": "kill -CONT {pid}"},
        },
        "capabilities": {"failures": ["hard", "soft"], "controller": True},
    }
    path = workdir / "external.yaml"
    path.write_text(json.dumps(config, indent=2))  # JSON is YAML
    return path, pids


def test_hard_leader_kill_and_pause_through_the_external_backend(pytester, tmp_path):
    workdir = tmp_path / "cluster"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    up = subprocess.run([*KREPLICA, "cluster", "up", "--detach", "--brokers", "3",
                         "--dir", str(workdir)], capture_output=True, text=True, timeout=300,
                        env=env)
    assert up.returncode == 0, f"kreplica cluster up failed: {up.stdout}{up.stderr}"
    try:
        path, pids = cluster_file(workdir)
        (pytester.path / "external.yaml").write_text(MATRIX)
        pytester.makepyfile(test_external_cases=textwrap.dedent("""\
            import pytest

            @pytest.mark.kreplica_scenario("replication")
            def test_replication(kreplica_case, kreplica_run):
                kreplica_run(kreplica_case).assert_valid()
        """))
        out = tmp_path / "runs"
        result = pytester.runpytest_subprocess(
            f"--kreplica-cluster={path}", "--kreplica-matrix",
            str(pytester.path / "external.yaml"), f"--kreplica-output={out}", "-p", "no:xdist",
            "-p", "no:cacheprovider", timeout=900)
        text = result.stdout.str()
        assert result.ret == 0, f"expected both cases to pass; output:\n{text[-4000:]}"
        result.assert_outcomes(passed=2)
        verdicts = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/verdict.json")}
        assert len(verdicts) == 2, f"expected 2 run directories, saw {sorted(verdicts)}"
        kinds = {}
        for case, verdict in verdicts.items():
            assert verdict["valid"] and verdict["passed"], f"{case}: {verdict['checks']}"
            run = json.loads((out / case / "run.json").read_text())
            assert "external" in json.dumps(run), f"{case} did not run on backend external"
            events = [json.loads(line) for line in
                      (out / case / "events.jsonl").read_text().splitlines()]
            kinds[case] = {e["kind"] for e in events}
        hard = next(c for c in kinds if "hard" in c)
        soft = next(c for c in kinds if "soft" in c)
        assert {"kill", "start"} <= kinds[hard], f"{hard} events: {kinds[hard]}"
        assert {"pause", "resume"} <= kinds[soft], f"{soft} events: {kinds[soft]}"
        # the kill acted: one original JVM is gone and was replaced by a new process
        gone = [n for n, pid in pids.items() if not psutil.pid_exists(pid)]
        assert len(gone) == 1, f"expected exactly the killed leader's JVM gone, saw {gone}"
        log = next(out.glob("clusters/*/*/faults.log")).read_text()
        assert "faults.kill.strike" in log and "faults.pause.strike" in log, log
        assert "exit 0" in log
    finally:
        down = subprocess.run([*KREPLICA, "cluster", "down", "--dir", str(workdir)],
                              capture_output=True, text=True, timeout=120, env=env)
        assert down.returncode == 0, f"kreplica cluster down failed: {down.stdout}{down.stderr}"
