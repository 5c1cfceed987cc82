"""Cutting a soak short: SIGINT (Ctrl-C) or SIGTERM while a duration-bounded case produces
ends its workload and its nemesis early instead of the whole run, so the case still drains,
checks and reports what it wrote (its verdict.json says ``interrupted``); the plugin then
stops the session (pytest's exit status 2, interrupted). The first signal restores the
previous handlers, so a second one interrupts at once, checks and all.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class CutShort:
    """Which signal cut the case short, and when (``time.monotonic``), or None."""

    signal: str | None = None
    at: float | None = None

    def describe(self, started: float) -> dict[str, object] | None:
        if self.signal is None or self.at is None:
            return None
        return {"signal": self.signal, "after_s": round(self.at - started, 3)}


@contextlib.contextmanager
def cut_short(stop: threading.Event, enabled: bool = True) -> Iterator[CutShort]:
    """While the block runs, the first SIGINT / SIGTERM sets ``stop`` and is recorded
    instead of raising. Only in the main thread (where Python delivers signals) and only
    when ``enabled`` (a case bounded by a count of messages or faults ends by itself)."""
    state = CutShort()
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield state
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}

    def restore() -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)

    def handler(number: int, _frame: object) -> None:
        state.signal, state.at = signal.Signals(number).name, time.monotonic()
        stop.set()
        restore()
        print(f"kreplica: {state.signal}: ending the workload and the faults, then checking "
              "what was written (again to stop at once)", file=sys.stderr, flush=True)

    for number in SIGNALS:
        signal.signal(number, handler)
    try:
        yield state
    finally:
        restore()
