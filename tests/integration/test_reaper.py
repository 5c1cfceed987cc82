"""The reaper's last line of defence for a broker that is not a JVM: Tansu runs detached
(its own session, restarted by a fault's restore command), so a killed pytest cannot take
it along; its start script marks it with the owner's token in its environment, and the next
session's reap kills it. A stand-in binary takes Tansu's place (the marks and the reap are
under test, not Tansu)."""

from __future__ import annotations

import textwrap

import psutil

from pytest_kreplica.cluster import reaper
from pytest_kreplica.waits import wait_for
from tests.killed import child_session, gone


def test_a_detached_broker_of_a_killed_session_is_reaped(tmp_path):
    binary = tmp_path / "fake-tansu"
    binary.write_text("#!/bin/sh\nexec sleep 600\n")
    binary.chmod(0o755)
    script = textwrap.dedent(f"""
        import subprocess, time
        from pathlib import Path
        from pytest_kreplica.cluster.external.tansu import TansuBroker
        b = TansuBroker(Path({str(binary)!r}), Path({str(tmp_path / "work")!r}))
        b.workdir.mkdir(parents=True)
        b.write_start_script()
        subprocess.run(["sh", str(b.start_script)], check=True, timeout=30)
        time.sleep(0.5)
        print(b.pid, flush=True)
        time.sleep(600)
    """)
    with child_session(script) as (broker, _):
        assert reaper.OWNER_ENV in psutil.Process(broker).environ()
    # the session is dead (SIGKILLed and waited for); its detached broker still runs
    try:
        assert gone(broker) is not None, "expected the detached broker to outlive its session"
        assert broker in reaper.reap_orphans()
        wait_for(lambda: gone(broker), 10, f"the reaped broker (pid {broker}) gone")
    finally:
        if gone(broker) is not None:
            psutil.Process(broker).kill()
