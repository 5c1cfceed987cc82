"""The class-data archive's half-written dumps: a killed process's dump is removed, a live
one's is kept (pure file logic; no JVM)."""

import os
import subprocess
import sys

from pytest_kreplica.validation.engine.driver_archive import prune_dead_dumps


def test_dead_owners_dump_is_removed_live_owners_kept(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that no longer exists
    name = "spark-4.3.0-java17-abc.jsa"
    dead = tmp_path / f".{name}.{child.pid}.tmp"
    live = tmp_path / f".{name}.{os.getpid()}.tmp"
    archive = tmp_path / name
    for path in (dead, live, archive):
        path.write_bytes(b"x")
    prune_dead_dumps(tmp_path)
    assert not dead.exists()
    assert live.exists() and archive.exists()
