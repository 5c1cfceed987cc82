"""Find or start the machine's shared Spark Connect server (master ``connect``).

Validation is stateless and batchable, so one long-lived Spark application per machine serves
every xdist worker, every ``kreplica check`` / ``verify-logs`` and later pytest runs, instead of
one driver JVM per process. Clients take a machine-wide lock (``once.held``), read the state
file the server wrote (port and token), check that its supervisor is the process that wrote it
and that the port answers, start one (a progress line, a bounded wait) if not, and touch their
lease (``leases/<pid>-<start time>``) before they let the lock go. The server
(``connect_server.py``) stops itself under the same lock after ``idle`` seconds unused.

One server per key: Python, the package's location and its validation sources, pyspark, the
server's master and driver memory. The server's Python workers import this package (the
mapInArrow tasks) from the location of the client that started it, so a changed checkout
gets a server of its own (the old one idles out).

Env: ``KREPLICA_SPARK_IDLE_S`` (default 60) the idle timeout; ``KREPLICA_SPARK_CONNECT_MASTER``
(default ``local[2]``) the server's own master.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from ... import once
from ...cache import cache_dir
from ...errors import CheckError, InputError
from .sparkenv import driver_memory

ENV_IDLE = "KREPLICA_SPARK_IDLE_S"
ENV_SERVER_MASTER = "KREPLICA_SPARK_CONNECT_MASTER"
DEFAULT_IDLE_S = 60.0
DEFAULT_SERVER_MASTER = "local[2]"
START_TIMEOUT_S = 300.0  # a first start on a loaded 2-core machine with no class-data archive
LOCK_TIMEOUT_S = START_TIMEOUT_S + 60.0

_package = Path(__file__).resolve().parents[1]


def idle_seconds() -> float:
    raw = os.environ.get(ENV_IDLE, "")
    if not raw:
        return DEFAULT_IDLE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise InputError(f"env {ENV_IDLE}={raw!r}: expected a positive number of seconds")
    return value


def server_master() -> str:
    return os.environ.get(ENV_SERVER_MASTER) or DEFAULT_SERVER_MASTER


@functools.cache
def server_key() -> str:
    """Computed once per process: a checkout edited mid-run keeps its server."""
    import pyspark

    digest = hashlib.sha256()
    for part in (sys.executable, str(_package), pyspark.__version__, server_master(),
                 driver_memory()):
        digest.update(part.encode() + b"\0")
    for source in sorted((_package / "validation").rglob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def paths(key: str | None = None) -> dict[str, Path]:
    base = cache_dir() / "spark" / "connect"
    key = key or server_key()
    return {"state": base / f"{key}.json", "lock": base / f"{key}.lock",
            "leases": base / f"{key}.leases", "log": base / f"{key}.log"}


def read_state(state: Path) -> dict | None:
    try:
        return json.loads(state.read_text())
    except (OSError, ValueError):
        return None


def _supervisor_alive(doc: dict) -> bool:
    import psutil

    try:
        return abs(psutil.Process(int(doc["pid"])).create_time() - float(doc["started"])) < 1.0
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0):
            return True
    except OSError:
        return False


def live_server(p: dict[str, Path]) -> dict | None:
    """The state of a running server of this key, or None (a stale state file removed)."""
    doc = read_state(p["state"])
    if doc is None:
        return None
    if _supervisor_alive(doc) and _answers(int(doc["port"])):
        return doc
    if _supervisor_alive(doc):  # alive but not answering: wedged; its JVM dies with it
        with contextlib.suppress(OSError):
            os.kill(int(doc["pid"]), 9)
    p["state"].unlink(missing_ok=True)
    return None


def url_of(doc: dict) -> str:
    return f"sc://localhost:{doc['port']}/;token={doc['token']}"


def lease(p: dict[str, Path]) -> Path:
    """Mark this process as a user of the server (touched on every use)."""
    import psutil

    p["leases"].mkdir(parents=True, exist_ok=True)
    path = p["leases"] / f"{os.getpid()}-{psutil.Process().create_time():.3f}"
    path.touch()
    return path


def release(p: dict[str, Path]) -> None:
    import psutil

    with contextlib.suppress(OSError, psutil.Error):
        (p["leases"] / f"{os.getpid()}-{psutil.Process().create_time():.3f}").unlink()


def ensure_server() -> str:
    """The ``sc://`` URL of this machine's server, starting it if none runs."""
    return url_of(server_state(start=True))


def running_server() -> str | None:
    """Master ``auto``: the ``sc://`` URL of this machine's server if one runs (never started
    for it), with a line saying which engine runs the check (a check's speed differs by 3-4x
    between the two); else None. With no state file no lock is taken and nothing written."""
    doc = server_state(start=False)
    return None if doc is None else url_of(doc)


def server_state(start: bool) -> dict | None:
    """This process's lease on the machine's server and the server's state (its ports and
    token), the server started first if none runs and ``start``; else None. Joining one that
    runs without being asked to start it says so in a line."""
    p = paths()
    if start:
        return _leased(p, start=True)
    doc = _leased(p, start=False) if p["state"].exists() else None
    if doc is not None:
        once.say(f"kreplica: validating on the machine's running Spark Connect server "
                 f"(127.0.0.1:{doc['port']}, log {p['log']})")
    return doc


def _leased(p: dict[str, Path], start: bool) -> dict | None:
    """Under the machine-wide lock: the live server's state, started first if none runs and
    ``start``, and this process's lease on it (None: none runs and none was started)."""
    with once.held(p["lock"], "the shared Spark Connect server", timeout=LOCK_TIMEOUT_S):
        doc = live_server(p)
        if doc is None and start:
            doc = _start(p)
        if doc is not None:
            lease(p)
    return doc


def _start(p: dict[str, Path]) -> dict:
    idle = idle_seconds()
    master = server_master()
    p["log"].parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        x for x in (str(_package.parent), env.get("PYTHONPATH", "")) if x)
    env["PYSPARK_PYTHON"] = sys.executable
    env["KREPLICA_SPARK_CONNECT_TOKEN"] = secrets.token_hex(16)
    for client_only in ("KREPLICA_SPARK_MASTER", "SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE",
                        "SPARK_API_MODE"):  # the server is a classic driver
        env.pop(client_only, None)
    cmd = [sys.executable, "-m", "pytest_kreplica.validation.connect_server", str(p["state"]),
           "--leases", str(p["leases"]), "--lock", str(p["lock"]), "--master", master,
           "--idle", str(idle)]
    what = (f"starting the machine's Spark Connect server ({master}, it stops after "
            f"{idle:.0f} s unused)")
    once.say(f"kreplica: {what}…")
    began = time.monotonic()
    with open(p["log"], "ab") as sink:  # the child keeps its own descriptor
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=env,
                                start_new_session=True)  # a Ctrl-C of this run is not its end

    def ready() -> dict | None:
        if proc.poll() is not None:
            raise CheckError(f"the Spark Connect server exited with {proc.returncode} while "
                             f"starting (expected it to write {p['state']}; log: {p['log']})")
        doc = read_state(p["state"])
        return doc if doc and doc.get("pid") == proc.pid else None

    try:
        doc = Retrying(stop=stop_after_delay(START_TIMEOUT_S), wait=wait_fixed(0.2),
                       retry=retry_if_result(lambda d: d is None))(ready)
    except RetryError:
        proc.kill()
        raise CheckError(f"the Spark Connect server did not answer within {START_TIMEOUT_S:.0f} s "
                         f"(expected its address in {p['state']}; log: {p['log']})") from None
    once.say(f"kreplica: {what}… {time.monotonic() - began:.0f} s")
    return doc
