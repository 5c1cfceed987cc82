"""Tansu (tansu.io, Rust, Apache-licensed): a Kafka-compatible broker this project did not
write, run on loopback with memory storage and driven only through the external backend.

The binary is built once per machine with ``cargo install`` into the kreplica cache
(``once.prepare``, a progress line; ``KREPLICA_TANSU_BIN`` names a binary built elsewhere).
``TansuBroker.start`` launches it detached through a small ``start.sh`` that is also the
cluster file's restore command, so a SIGKILL strike is undone the way an operator would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

from ... import once
from ...errors import ClusterError, EnvironmentProblem
from ...waits import wait_for
from .. import reaper
from ..admin.probe import answers
from ..kafka.distribution import cache_dir
from ..ports import claim_ports, release_ports

TANSU_VERSION = "0.6.0"
# the crate's default features hold no storage engine: memory:// (and s3://) come with
# dynostore; without it the broker exits at start with FeatureNotEnabled { "dynostore" }
FEATURES = "dynostore"
NODE_ID = 111  # tansu_broker::NODE_ID: what DescribeCluster and Metadata report
BIN_ENV = "KREPLICA_TANSU_BIN"
BUILD_TIMEOUT_S = 3 * 3600.0  # cargo builds ~400 crates: tens of minutes on a loaded machine


def binary_path() -> Path:
    explicit = os.environ.get(BIN_ENV)
    if explicit:
        return Path(explicit)
    return cache_dir() / "tansu" / f"{TANSU_VERSION}-{FEATURES}" / "bin" / "tansu"


def ensure_tansu() -> Path:
    """The Tansu binary, built once per machine with ``cargo install tansu`` (pinned)."""
    path = binary_path()
    if os.environ.get(BIN_ENV) and not path.is_file():
        raise EnvironmentProblem(f"{BIN_ENV}={path}: no such file (expected a tansu binary)")
    lock = path.parent.parent.parent / f"{TANSU_VERSION}-{FEATURES}.lock"
    once.prepare(f"building Tansu {TANSU_VERSION} with cargo install (once, for the tansu "
                 "cases; tens of minutes)", lock, path.is_file, lambda: _cargo_install(path),
                 timeout=BUILD_TIMEOUT_S)
    return path


def _cargo_install(target: Path) -> None:
    cargo = shutil.which("cargo")
    if cargo is None:
        raise EnvironmentProblem(
            "the tansu cases need Rust's cargo once, to build Tansu: install it (Debian: "
            "apt-get install cargo; or https://rustup.rs) and put 'cargo' on PATH, or set "
            f"{BIN_ENV} to a tansu binary")
    root = target.parent.parent
    root.mkdir(parents=True, exist_ok=True)
    log_path = root / "cargo-install.log"
    with open(log_path, "wb") as log:
        code = subprocess.call([cargo, "install", "--locked", "tansu", "--features", FEATURES,
                                "--version", TANSU_VERSION, "--root", str(root)], stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               timeout=BUILD_TIMEOUT_S)
    if code != 0 or not target.is_file():
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["(empty)"]
        raise EnvironmentProblem(f"cargo install tansu {TANSU_VERSION} failed (exit {code}, "
                                 f"expected 0): {tail[0]}; log: {log_path}")


class TansuBroker:
    """One Tansu broker on 127.0.0.1 with memory storage, in its own session."""

    def __init__(self, binary: Path, workdir: Path):
        self.binary = Path(binary)
        self.workdir = Path(workdir).resolve()
        self.port = claim_ports(1)[0]
        self.pid_file = self.workdir / "tansu.pid"
        self.log_file = self.workdir / "tansu.log"
        self.start_script = self.workdir / "start.sh"

    def write_start_script(self) -> None:
        url = f"tcp://127.0.0.1:{self.port}"
        # the reaper's marks: a session killed before stop() leaves no broker behind
        marks = " ".join(f"{k}='{v}'" for k, v in reaper.owner_env(str(self.workdir)).items())
        # setsid + redirections: the shell returns at once and nothing holds its pipes
        self.start_script.write_text(
            "#!/bin/sh\n"
            f"cd '{self.workdir}' || exit 1\n"
            f"{marks} setsid '{self.binary}' broker --listener-url {url} --advertised-listener-url "
            f"{url} --storage-engine memory://tansu/ >> '{self.log_file}' 2>&1 < /dev/null &\n"
            f"echo $! > '{self.pid_file}'\n")
        self.start_script.chmod(0o755)

    def start(self, timeout: float = 30.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.write_start_script()
        subprocess.run(["sh", str(self.start_script)], check=True, timeout=30)

        def up() -> str | None:
            return None if answers("127.0.0.1", self.port) else "no ApiVersions answer yet"
        try:
            wait_for(up, timeout, f"Tansu answering on 127.0.0.1:{self.port}")
        except ClusterError as exc:
            self.stop()
            raise ClusterError(f"Tansu did not start: {exc}; log: {self.log_file}") from None

    @property
    def pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            return int(self.pid_file.read_text().split()[0])
        return None

    def stop(self) -> None:
        """SIGKILL the broker (memory storage: nothing to flush), resuming it first."""
        release_ports([self.port])
        pid = self.pid
        if pid is None:
            return
        for sig in (signal.SIGCONT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def cluster_file(self, path: Path, kafka_version: str) -> Path:
        """The external backend's YAML for this broker: kill / pause and their restores."""
        path.write_text(
            f"kafka_version: '{kafka_version}'\n"
            "start_timeout: 60\ncommand_timeout: 30\n"
            f"nodes:\n  - {{id: {NODE_ID}, host: 127.0.0.1, port: {self.port}, "
            f"pid_command: 'cat {self.pid_file}', log_file: '{self.log_file}'}}\n"
            "faults:\n"
            f"  kill: {{strike: 'kill -KILL {{pid}}', restore: 'sh {self.start_script}'}}\n"
            "  pause: {strike: 'kill -STOP {pid}', restore: 'kill -CONT {pid}'}\n"
            "capabilities:\n  failures: [hard, soft]\n  controller: false\n"
            "  transactions: false\n")
        return path
