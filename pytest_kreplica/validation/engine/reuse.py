"""Column expressions built once per Spark session, not once per check.

A rule's expressions (``F.col``, ``F.when``, windows, aggregates) are the same for every
history, but in a classic session each function is one or more py4j round trips to the
driver JVM: a warm check of a small history made about 3000 of them, 900 once the
expressions were kept. While the other xdist worker produces on the same two cores, each
round trip waits for a thread to be scheduled on both sides: the checker phase of a warm
smoke case took 4-5 s there against 0.5-0.7 s for the same history alone (docs/checker.md).

A Column is an unresolved expression tree that never changes once built, so one built for
one check serves every later check of the session. ``per_session`` keeps what a builder
returned until the session stops (``spark._stop_locked`` calls ``forget``): a classic Column
lives in one JVM, and a later session may be another JVM. Builders take hashable arguments
and no DataFrame; nondeterministic expressions (``monotonically_increasing_id``) are never
kept, since each plan must own its instance.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_built: dict[tuple[Any, ...], Any] = {}


def per_session(build: Callable[..., T]) -> Callable[..., T]:
    """``build(*args)`` once per Spark session and arguments; the same objects after that
    (callers never change them). Two threads asking at once may both build; one result is
    kept, and both are valid."""
    @functools.wraps(build)
    def kept(*args: Any) -> T:
        key = (build.__module__, build.__qualname__, *args)
        try:
            return _built[key]
        except KeyError:
            value = _built[key] = build(*args)
            return value
    return kept


def forget() -> None:
    """Drop every kept expression (the session they were built in stopped)."""
    _built.clear()
