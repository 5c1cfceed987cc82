"""The MirrorMaker 2 checks both backends share (tests/integration, tests/docker): after a
strike nothing is mirrored while it is down and everything sent meanwhile arrives after the
restore; the nemesis records one fault on it with the expected events."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pytest_kreplica.cluster.mirrormaker import START_TIMEOUT_S
from pytest_kreplica.faults import FaultPlan, Nemesis
from pytest_kreplica.scenarios.mirror import mirror_component, probe
from pytest_kreplica.scenarios.runner import ClusterWriter

DOWN_WINDOW_S = 4.0  # how long we watch the target not move while MirrorMaker is down


@contextmanager
def mirroring(mm: Any, source: Any, topic: str, writer: Any) -> Iterator[tuple[Any, Any]]:
    """MirrorMaker 2 started and ready (a probe record reached the target); closed after."""
    try:
        mm.start()
        probe([topic], source.bootstrap_servers, ClusterWriter(writer, "source"))
        mm.wait_ready()
        yield mm, writer
    finally:
        mm.close()
        writer.close()


def send(bootstrap: str, topic: str, n: int, tag: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i in range(n):
            producer.send(topic, f"{tag}-{i}".encode(), partition=i % 2).get(timeout=60)
    finally:
        producer.close(timeout=10)


def assert_down_then_mirrors_again(mm: Any, bootstrap: str, topic: str, failure: str,
                                   pid: int | None) -> None:
    """MirrorMaker has just been struck: the target must not move while 20 records are sent
    to the source, and all 20 must arrive once it is resumed / restarted."""
    time.sleep(1.0)  # requests MirrorMaker sent before the strike may still land
    before = mm.target_total()
    send(bootstrap, topic, 20, f"{failure}-down")
    deadline = time.monotonic() + DOWN_WINDOW_S
    while time.monotonic() < deadline:
        assert mm.target_total() == before, f"mirrored while {failure}-failed"
        time.sleep(0.5)
    (mm.resume if failure == "soft" else mm.start)()
    assert (mm.pid == pid) == (failure == "soft")
    mm.wait_mirroring(before + 19)  # all 20 records of the downtime arrive
    assert mm.target_total() >= before + 20


def run_one_fault(source: Any, mm: Any, writer: Any, topic: str, failure: str,
                  batch: int = 10, pause_s: float = 0.0) -> tuple[Any, list[str]]:
    """One nemesis fault on MirrorMaker 2 while records keep flowing (the nemesis judges
    recovery by new records arriving); returns its record and MirrorMaker's event kinds."""
    plan = FaultPlan(seed=7, failure=failure, target="mirror-maker", failures=1,
                     downtime_s=2.0, delay_s=(0.1, 0.2))
    stop = threading.Event()

    def keep_sending() -> None:
        for i in range(100):
            if stop.is_set():
                return
            send(source.bootstrap_servers, topic, batch, f"n{i}")
            time.sleep(pause_s)

    sender = threading.Thread(target=keep_sending)
    sender.start()
    try:
        nemesis = Nemesis(source, writer, plan, [(topic, 0), (topic, 1)],
                          components={"mirror-maker": mirror_component(mm)},
                          recovery_timeout=START_TIMEOUT_S)
        records = nemesis.run()
    finally:
        stop.set()
        sender.join(120)
    assert len(records) == 1 and records[0].error is None, records
    events = [json.loads(line) for line in
              (writer.run_dir / "events.jsonl").read_text().splitlines()]
    return records[0], [e["kind"] for e in events if e["role"] == "mirror-maker"]
