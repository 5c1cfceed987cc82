"""Measure a link while a fault holds: real Kafka requests through the real proxy route.

A link fault that silently does nothing is the worst bug a nemesis can have, so every link
fault is measured on the path it degraded: ApiVersions requests (the smallest request every
Kafka version answers, on any listener) sent to the proxied port and, as the baseline, to the
node's own port. Round trips give the added latency, pipelined requests the bytes per second
of their responses, many short connections the share that is reset, and a request that gets
no answer while the node's own port answers shows a black hole.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from ..cluster.admin.probe import FRAME, connect, read_frame


def round_trip(host: str, port: int, timeout: float = 5.0) -> float | None:
    """Seconds from sending one ApiVersions request to its whole response on a fresh
    connection; None when no answer came within ``timeout``. A reset raises ``OSError``."""
    with connect(host, port, timeout) as sock:
        started = time.monotonic()
        sock.sendall(FRAME)
        try:
            read_frame(sock)
        except TimeoutError:
            return None
        return time.monotonic() - started


def median_round_trip(host: str, port: int, samples: int = 5,
                      timeout: float = 5.0) -> float | None:
    """Median of ``samples`` round trips (None counted as ``timeout``); None if none
    answered."""
    times = [round_trip(host, port, timeout) for _ in range(samples)]
    answered = [t for t in times if t is not None]
    if not answered:
        return None
    return statistics.median([t if t is not None else timeout for t in times])


def throughput(host: str, port: int, requests: int = 300, timeout: float = 20.0) -> float:
    """Bytes per second of ``requests`` pipelined ApiVersions responses, from the first
    response byte to the last (so added latency does not count, a bandwidth cap does)."""
    with connect(host, port, timeout) as sock:
        sock.sendall(FRAME * requests)
        got = len(read_frame(sock)) + 4
        first = time.monotonic()
        for _ in range(requests - 1):
            got += len(read_frame(sock)) + 4
        took = time.monotonic() - first
    return got / max(took, 1e-6)


@dataclass(frozen=True)
class ResetCount:
    connections: int
    answered: int
    reset: int
    silent: int  # no answer and no reset within the timeout

    def describe(self) -> str:
        return (f"{self.reset} of {self.connections} connections reset, {self.answered} "
                f"answered, {self.silent} silent")


def count_resets(host: str, port: int, connections: int = 20, hold_s: float = 0.0,
                 timeout: float = 3.0) -> ResetCount:
    """Open ``connections`` one after another, each sending ApiVersions requests for
    ``hold_s`` seconds (at least one); count how many were reset or closed by the path."""
    answered = reset = silent = 0
    for _ in range(connections):
        try:
            with connect(host, port, timeout) as sock:
                deadline = time.monotonic() + hold_s
                while True:
                    sock.sendall(FRAME)
                    read_frame(sock)
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.05)
            answered += 1
        except TimeoutError:
            silent += 1
        except OSError:
            reset += 1
    return ResetCount(connections, answered, reset, silent)
