"""The machine's shared Spark Connect server (``python -m`` this module; ``connect.py`` starts it).

One supervisor process (this module) holds one Spark driver JVM, tuned as ``spark.py`` tunes
the in-process one (UI off, ParallelGC, quiet log, class-data archive), with Spark Connect's
plugin listening on loopback only and a random token. It writes its address to the state file
once the server answers and stops itself, under the same machine-wide lock that clients take to
find it, ``idle`` seconds after its last client process ended (``connect.py``'s leases: a
client may hold its session between checks) and its last execution finished.

Never left behind: the driver JVM is pyspark's gateway JVM, which exits when its parent's
stdin pipe closes, so it dies with this process even under SIGKILL; this process exits when
idle, so a SIGKILLed client leaves at most ``idle`` seconds of server behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

from .. import once
from . import served
from .engine import spark as engine

POLL_S = 0.5
SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService$"


def _service(spark):
    jvm = spark.sparkContext._jvm
    return jvm.java.lang.Class.forName(SERVICE).getField("MODULE$").get(None)


def _idle_for(spark, service) -> float:
    """Seconds since the last execution ended; 0 while one runs."""
    executions = service.listActiveExecutions()
    if executions.isRight():
        return 0.0
    last = executions.left().get()
    now = spark.sparkContext._jvm.java.lang.System.nanoTime()
    return max(0.0, (now - last) / 1e9)


def live_leases(leases: Path) -> list[Path]:
    """Lease files of live clients (``<pid>-<start time>``); dead clients' leases removed."""
    import psutil

    found = []
    for lease in leases.glob("*-*"):
        pid, _, started = lease.name.partition("-")
        try:
            alive = abs(psutil.Process(int(pid)).create_time() - float(started)) < 1.0
        except (psutil.Error, ValueError):
            alive = False
        if alive:
            found.append(lease)
        else:
            with contextlib.suppress(OSError):
                lease.unlink()
    return found


def _unused_for(leases: Path, spark, service, desk: served.Desk) -> float:
    """0 while a client process lives (it may hold a session between checks: it must not
    find the server gone), else seconds since the last execution, served check or lease
    touch."""
    live = live_leases(leases)
    if live:
        return 0.0
    touched = max((p.stat().st_mtime for p in leases.glob("*")), default=0.0)
    return min(_idle_for(spark, service), desk.idle_for(), time.time() - touched)


def serve(state: Path, leases: Path, lock: Path, master: str, idle: float) -> None:
    token = os.environ.pop("KREPLICA_SPARK_CONNECT_TOKEN")
    conf = {
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": "0",
        "spark.connect.authenticate.token": token,
        "spark.default.parallelism": str(engine.local_cores(master)),
    }
    spark = engine.get_spark(master, extra_conf=conf)
    service = _service(spark)
    desk = served.open_desk(master, token)
    doc = {"pid": os.getpid(), "started": _started(), "port": service.localPort(),
           "served_port": desk.port, "token": token, "master": master, "idle_s": idle}
    tmp = state.with_name(state.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc))
    os.chmod(tmp, 0o600)  # the token lets anyone run code in this server
    os.replace(tmp, state)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append("SIGTERM"))
    try:
        while not stopping:
            time.sleep(POLL_S)
            if _unused_for(leases, spark, service, desk) < idle:
                continue
            with once.held(lock, "stopping the idle Spark Connect server", blocking=False) as got:
                if got and _unused_for(leases, spark, service, desk) >= idle:
                    state.unlink(missing_ok=True)  # under the lock: no client finds it now
                    break
    finally:
        desk.shutdown()
        with contextlib.suppress(OSError):
            if json.loads(state.read_text()).get("pid") == os.getpid():
                state.unlink()
        engine.stop_spark()


def _started() -> float:
    import psutil

    return psutil.Process().create_time()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="connect_server")
    p.add_argument("state", type=Path)
    p.add_argument("--leases", type=Path, required=True)
    p.add_argument("--lock", type=Path, required=True)
    p.add_argument("--master", required=True)
    p.add_argument("--idle", type=float, required=True)
    args = p.parse_args(argv)
    serve(args.state, args.leases, args.lock, args.master, args.idle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
