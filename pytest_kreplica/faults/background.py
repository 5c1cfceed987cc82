"""The nemesis in a background thread, its failure handed back to whoever joins it."""

from __future__ import annotations

import threading
from typing import Any

from .nemesis import Nemesis


def run_in_thread(nemesis: Nemesis, stop: threading.Event | None = None
                  ) -> tuple[threading.Thread, dict[str, Any]]:
    """Start ``nemesis.run`` in a daemon thread; the returned dict receives ``error`` (the
    exception) when it fails, so the caller can re-raise it after joining."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            nemesis.run(stop)
        except BaseException as exc:  # handed to the joining thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="kreplica-nemesis", daemon=True)
    thread.start()
    return thread, outcome
