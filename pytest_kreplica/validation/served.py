"""A one-off command's small check, run by the machine's Spark Connect server's own driver.

``kreplica check`` / ``verify-logs`` of a small history against a warm server spent most of
its time outside the server: about 1.2-1.7 s importing the Connect client (which requires
pandas) and opening its session, then a gRPC round trip per query of a plan built client-side.
The server's supervisor (``connect_server.py``) is a classic Spark driver in a warm Python
process with every module already imported, so it runs such a check itself, in its own
session, and answers the command over a loopback socket that only holders of the server's
token (its 0600 state file) may use. The command then needs none of pyspark.

Protocol: one JSON line each way. Request ``{"token", "op", "run_dir", "semantics"}``; answer
``{"ok": result}`` or ``{"error": {"kind", "message"}}``, where ``kind`` names a
``KreplicaError`` class (raised again in the command, so its exit status and one line stay
what they would have been) or ``crash`` (a bug; the traceback is in the server's log).
Checks run one at a time (one lock): only small inputs come here, so a queue is short.

Env ``KREPLICA_SPARK_SERVED=0``: the command runs its own Connect session instead.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import socket
import socketserver
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import errors, once
from ..errors import CheckError, InputError, KreplicaError
from .engine.connect import paths, release, server_state
from .engine.spark import AUTO, CONNECT, resolve_master, small_input
from .outcome import recheck
from .replicas.verify import verify_logs

ENV_SERVED = "KREPLICA_SPARK_SERVED"
ANSWER_TIMEOUT_S = 600.0  # a small check queued behind a few others on a loaded machine
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 30.0
MAX_REQUEST = 1 << 16

Op = Callable[[str, dict[str, Any]], dict[str, Any]]


def _recheck(master: str, req: dict[str, Any]) -> dict[str, Any]:
    verdict, outcome = recheck(req["run_dir"], semantics=req.get("semantics"),
                               spark_master=master)
    return {"verdict": verdict.to_dict(), "outcome": outcome}


def _verify_logs(master: str, req: dict[str, Any]) -> dict[str, Any]:
    return verify_logs(req["run_dir"], spark_master=master).to_dict()


OPS: dict[str, Op] = {"check": _recheck, "verify_logs": _verify_logs}


# -- the server's side ----------------------------------------------------------------------
class Desk(socketserver.ThreadingTCPServer):
    """Loopback only. Its checks count as the server's use (``idle_for``): the server is not
    idle while one runs, even when the command that asked was killed."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, master: str, token: str, ops: dict[str, Op] | None = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.master, self.token, self.ops = master, token, ops if ops is not None else OPS
        self.lock = threading.Lock()  # held while a check runs
        self.last_end = time.monotonic()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def idle_for(self) -> float:
        """Seconds since its last check ended; 0 while one runs."""
        return 0.0 if self.lock.locked() else time.monotonic() - self.last_end


class _Handler(socketserver.StreamRequestHandler):
    server: Desk
    timeout = REQUEST_TIMEOUT_S  # a caller that connects and sends nothing is let go

    def handle(self) -> None:
        try:
            req = json.loads(self.rfile.readline(MAX_REQUEST))
        except (ValueError, OSError):  # not JSON, or nothing sent in time
            return
        if not isinstance(req, dict) or not hmac.compare_digest(
                str(req.get("token", "")).encode(), self.server.token.encode()):
            return  # no answer to a caller without the token
        answer = self._run(req)
        with contextlib.suppress(OSError):  # the command may have been killed meanwhile
            self.wfile.write(json.dumps(answer, default=str).encode() + b"\n")

    def _run(self, req: dict[str, Any]) -> dict[str, Any]:
        op = self.server.ops.get(req.get("op"))
        if op is None or not isinstance(req.get("run_dir"), str):
            return {"error": {"kind": "crash", "message": f"unknown request {req.get('op')!r}"}}
        with self.server.lock:
            began = time.monotonic()
            what = f"kreplica: served {req['op']} of {req['run_dir']}"  # a line in its log
            try:
                result = {"ok": op(self.server.master, req)}
                once.say(f"{what} in {time.monotonic() - began:.2f} s")
                return result
            except KreplicaError as exc:
                once.say(f"{what}: {type(exc).__name__}: {exc}")
                return {"error": {"kind": type(exc).__name__, "message": str(exc)}}
            except Exception as exc:
                once.say(f"{what} crashed:")
                traceback.print_exc()  # to the server's log
                first = (str(exc).splitlines() or [""])[0][:300]
                return {"error": {"kind": "crash", "message": f"{type(exc).__name__}: {first}"}}
            finally:
                self.server.last_end = time.monotonic()


def open_desk(master: str, token: str) -> Desk:
    """Start answering on a loopback port (a daemon thread); ``shutdown()`` ends it."""
    desk = Desk(master, token)
    threading.Thread(target=desk.serve_forever, name="kreplica-served-checks",
                     daemon=True).start()
    return desk


# -- the command's side ---------------------------------------------------------------------
def enabled() -> bool:
    raw = os.environ.get(ENV_SERVED, "1")
    if raw not in ("0", "1"):
        raise InputError(f"env {ENV_SERVED}={raw!r}: allowed: 0, 1")
    return raw == "1"


def ask(op: str, run_dir: str, *, master: str | None, input_bytes: int | None,
        semantics: str | None = None) -> dict[str, Any] | None:
    """The server's answer to ``op`` for a small input when ``master`` is the machine's
    server (``connect``, or ``auto`` with one running); None when the command must run the
    check itself (a large or unknown input, another master, no server, served checks off)."""
    url = resolve_master(master)
    if url not in (CONNECT, AUTO) or input_bytes is None or not small_input(input_bytes) \
            or not enabled():
        return None
    doc = server_state(start=url == CONNECT)
    if doc is None or "served_port" not in doc:
        return None
    server_paths = paths()
    try:
        return exchange(doc, {"token": doc["token"], "op": op,
                               "run_dir": str(Path(run_dir).resolve()),
                               "semantics": semantics}, server_paths["log"])
    finally:
        release(server_paths)


def exchange(doc: dict[str, Any], req: dict[str, Any], log: Path) -> dict[str, Any] | None:
    where = f"127.0.0.1:{doc['served_port']}"
    try:
        conn = socket.create_connection(("127.0.0.1", int(doc["served_port"])),
                                        timeout=CONNECT_TIMEOUT_S)
    except OSError:  # the server stopped since its state was read: the command checks
        return None
    try:
        with conn:
            conn.settimeout(ANSWER_TIMEOUT_S)
            conn.sendall(json.dumps(req).encode() + b"\n")
            with conn.makefile("rb") as answers:
                line = answers.readline()
    except TimeoutError:
        raise CheckError(f"the Spark Connect server's check service ({where}) did not answer "
                         f"within {ANSWER_TIMEOUT_S:.0f} s (expected the verdict of "
                         f"{req['run_dir']}; log: {log})") from None
    except OSError as exc:
        raise CheckError(f"the Spark Connect server's check service ({where}) could not be "
                         f"asked: {exc.strerror or exc} (log: {log})") from None
    try:
        answer = json.loads(line)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not ("ok" in answer or "error" in answer):
        raise CheckError(f"the Spark Connect server's check service ({where}) ended without "
                         f"an answer for {req['run_dir']} (log: {log})")
    if "error" in answer:
        raise _error(answer["error"], log)
    return answer["ok"]


def _error(error: dict[str, Any], log: Path) -> KreplicaError:
    kind = getattr(errors, str(error.get("kind")), None)
    if isinstance(kind, type) and issubclass(kind, KreplicaError):
        return kind(error.get("message", ""))
    return CheckError(f"the Spark Connect server could not run the check: "
                      f"{error.get('message', '')} (a bug; its traceback is in {log})")
