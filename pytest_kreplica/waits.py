"""Bounded waits and log excerpts: the one way this suite waits for a state and says what it saw.

Every wait is bounded, names what it waits for, and on time-out raises ``ClusterError`` with
the expectation, the last observation and a hint (where the logs are). A check returns
``None`` once the state is reached, or a short text of what it sees instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from .errors import ClusterError, NodeError

POLL_S = 0.25


def wait_for(check: Callable[[], str | None], timeout: float, what: str, hint: str = "",
             poll: float = POLL_S) -> None:
    """Poll ``check`` until it returns None; after ``timeout`` s raise ``ClusterError``
    naming ``what`` was expected, the last thing seen and ``hint``. A client error while the
    cluster moves counts as an observation; a ``NodeError`` (a node died) ends the wait."""
    seen: list[str] = ["nothing observed yet"]

    def attempt() -> str | None:
        try:
            result = check()
        except NodeError:
            raise
        except Exception as exc:  # noqa: BLE001 - an observation, reported on time-out
            result = f"{type(exc).__name__}: {exc}"
        if result is not None:
            seen[0] = result
        return result

    try:
        Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(poll),
                 retry=retry_if_result(lambda r: r is not None))(attempt)
    except RetryError:
        tail = f"; {hint}" if hint else ""
        raise ClusterError(f"expected {what} within {timeout:.0f} s; last seen: {seen[0]}"
                           f"{tail}") from None


def wait_until(predicate: Callable[[], bool], timeout: float, what: str,
               seen: Callable[[], str], hint: str = "", poll: float = POLL_S) -> None:
    """``wait_for`` for a yes/no ``predicate``; ``seen`` describes the state when it is no."""
    wait_for(lambda: None if predicate() else seen(), timeout, what, hint, poll)


def tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a (possibly large) log, for an error message."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            return "\n".join(fh.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


def last_error_line(path: Path) -> str:
    """The last ERROR or exception line of a log (else its last line), for one-line errors."""
    try:
        lines = path.read_bytes()[-32_000:].decode(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    for line in reversed(lines):
        if " ERROR " in line or "Exception" in line:
            return line.strip()[:300]
    return lines[-1].strip()[:300] if lines else "(empty log)"
