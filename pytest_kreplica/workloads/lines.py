"""A Kafka client in a process of its own, speaking JSON lines on its stdout.

Clients run as real processes (Kafka's Verifiable* JVMs, the librdkafka child, a consumer
group member), so a fault can hit a client the way it hits a broker: SIGKILL, SIGTERM or
SIGSTOP of a real process. The parent reads the child's stdout line by line in a pump
thread and hands each parsed line to a callback; a line cut short by a kill never parses
and is dropped. ``LineWriter`` is the child's side for children written in Python: each
history row as one line ``{"k": kind, "a": args, "kw": kwargs}`` that the parent writes.

Children are started by the launcher (a new session, the parent-death signal), so none
outlives a killed pytest process; ``terminate`` is SIGTERM to the process group, then
SIGKILL, each wait bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cluster.launcher import Launcher
from ..errors import ClusterError

__all__ = ["ClientProcess", "LineWriter", "client_log_dir", "json_line", "supervise"]

STOP_TIMEOUT_S = 15.0


def client_log_dir(writer: Any, client: str) -> Path:
    """Where a client process keeps its config and log: ``clients/`` of the case's run
    directory (a writer without one cannot host a client process)."""
    run_dir = getattr(writer, "run_dir", None)
    if run_dir is None:
        raise ClusterError(f"the {client} client needs a run directory for its config and "
                           "logs")
    return Path(run_dir) / "clients"


def json_line(raw: bytes) -> dict[str, Any] | None:
    """A line of a child's stdout as an object, or None (a log line, a torn line)."""
    line = raw.decode(errors="replace").strip()
    if not line.startswith("{"):
        return None
    try:
        found = json.loads(line)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


class LineWriter:
    """The child's writer: ``send`` / ``poll`` / ``event`` (``RunWriter``'s signatures) and
    any other kind through ``emit``, each as one flushed JSON line on stdout."""

    def __init__(self, out: Any = None) -> None:
        self._out = out
        self._lock = threading.Lock()

    def send(self, *args: Any, **kwargs: Any) -> None:
        self.emit("send", *args, **kwargs)

    def poll(self, *args: Any, **kwargs: Any) -> None:
        self.emit("poll", *args, **kwargs)

    def event(self, *args: Any, **kwargs: Any) -> None:
        self.emit("event", *args, **kwargs)

    def emit(self, kind: str, *args: Any, **kwargs: Any) -> None:
        line = json.dumps({"k": kind, "a": list(args), "kw": kwargs}) + "\n"
        out = self._out or sys.stdout
        with self._lock:
            out.write(line)
            out.flush()


class ClientProcess:
    """One child client: ``start``, its lines to ``on_line``, ``terminate`` / ``kill`` /
    ``pause`` / ``resume``, ``alive``, ``pid``, and when it last said something."""

    def __init__(self, cmd: list[str], log_file: Path,
                 on_line: Callable[[dict[str, Any]], None], name: str):
        self.cmd, self.log_file, self.on_line, self.name = cmd, Path(log_file), on_line, name
        self.proc: subprocess.Popen | None = None
        self.lines = 0
        self.last_line_at = time.monotonic()
        self._pump: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> ClientProcess:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        err = open(self.log_file, "ab")  # noqa: SIM115 - closed once the child has it
        try:
            self.proc = Launcher.get().popen(self.cmd, stdout=subprocess.PIPE, stderr=err,
                                              stdin=subprocess.DEVNULL)
        finally:
            err.close()
        self.last_line_at = time.monotonic()
        self._pump = threading.Thread(target=self._read, daemon=True,
                                      name=f"kreplica-{self.name}")
        self._pump.start()
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            found = json_line(raw)
            if found is None:
                continue
            self.lines += 1
            self.last_line_at = time.monotonic()
            self.on_line(found)
        self.proc.stdout.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: float) -> int | None:
        """The exit code once the child exited and its last line was handed on; None when
        ``timeout`` passed first."""
        if self.proc is None:
            return None
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        if self._pump is not None:
            self._pump.join(timeout)
        return code

    def signal(self, sig: int) -> None:
        """``sig`` to the child's process group (a JVM's launcher script and the JVM)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)

    def terminate(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM (after SIGCONT: a paused child cannot act on it), SIGKILL when it has
        not exited within ``timeout``; the exit code (None: killed)."""
        if not self.alive():
            return self.wait(timeout)
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        code = self.wait(timeout)
        if code is None:
            self.kill()
        return code

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait(STOP_TIMEOUT_S)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)


def supervise(client: ClientProcess, sent: Callable[[], int], messages: int,
              stop: threading.Event | None, keep_going: Callable[[], bool] | None,
              idle_s: float, close_s: float) -> bool:
    """Until a producer child exits: SIGTERM once it should stop (``stop``, or
    ``keep_going`` false once ``sent()`` reached ``messages``), then True; False when it
    exited by itself (or was struck); a child silent for ``idle_s`` is stuck
    (``ClusterError``; ``idle_s`` is far above any fault's pause of the child)."""
    while client.wait(0.2) is None:
        done = keep_going is not None and sent() >= messages and not keep_going()
        if done or (stop is not None and stop.is_set()):
            client.terminate(close_s)
            return True
        if time.monotonic() - client.last_line_at > idle_s:
            raise ClusterError(f"{client.name} printed nothing for {idle_s:.0f} s after "
                               f"{sent()} sends; log {client.log_file}")
    return False
