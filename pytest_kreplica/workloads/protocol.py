"""The one contract between the runner and a workload.

Every workload module (``WORKLOADS``, ``CLIENTS``, ``CLIENT_WORKLOADS``) exposes ``WORKLOAD``,
a ``Workload`` with every member present: what a workload does not have is stated by the
member's default (no history beyond version 1, no options, no producer process), so the
runner and the nemesis call members and never probe a module for optional attributes.
``Produce``, ``Reader`` and ``ProducerHandle`` are the shapes of its parts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..faults import Component
    from ..history import RunWriter
    from ..matrix import Case
    from .sends import ProduceStats

__all__ = ["ProducerHandle", "Produce", "Reader", "ReaderFactory", "Workload"]


class ProducerHandle(Protocol):
    """A producer in a process of its own that the nemesis may kill or pause."""

    role: str

    def component(self) -> Component: ...


class Produce(Protocol):
    """Send the case's records, writing every send's outcome into ``writer``; returns the
    counts. ``keep_going`` (a duration-bounded case) says when to stop, ``max_rate`` caps
    the rate while faults run, ``producer`` is the workload's ``producer_handle()``."""

    def __call__(self, case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
                 stats: ProduceStats | None = None, stop: threading.Event | None = None,
                 *, keep_going: Callable[[], bool] | None = None,
                 max_rate: float | None = None, **producer: ProducerHandle
                 ) -> ProduceStats: ...


class Reader(Protocol):
    """What reads during and after production: started before it, drained after it;
    ``seen`` (the ids read so far) and ``polled`` (records read) are its progress."""

    @property
    def seen(self) -> set[str]: ...

    @property
    def polled(self) -> int: ...

    def start(self) -> Reader: ...

    def drain(self, acked_ids: set[str], timeout: float,
              readable_ends: Callable[[], dict[tuple[str, int], int]] | None = None
              ) -> set[str]: ...

    def stop(self, timeout: float = 30.0) -> None: ...

    def components(self) -> dict[str, Component]:
        """The reader's client processes the nemesis may fail (``consumer`` target)."""
        ...


class ReaderFactory(Protocol):
    def __call__(self, topics: Sequence[str], partitions: int, bootstrap: Callable[[], str],
                 writer: RunWriter, **options: Any) -> Reader: ...


def _no_options(case: Case) -> dict[str, Any]:
    return {}


def _no_meta(topics: Sequence[str]) -> dict[str, Any]:
    return {}


def _no_keys(topics: Sequence[str]) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class Workload:
    """A workload on one client, as the runner drives it.

    ``client`` and ``client_version(case)``: run.json's ``client`` section.
    ``consumer(topics, partitions, bootstrap, writer, [isolation_level=], **options)``
    builds the reader, ``consumer_options(case)`` being what it takes beside those.
    ``history_version``: the run directory's (docs/history.md; 2 for transactional
    histories). ``run_meta(topics)``: what run.json tells the checker (a pipeline's topics).
    ``producer_handle``: builds the producer process the nemesis may fail, passed to
    ``produce`` as ``producer=`` (None: the producer runs in the test's process).
    ``coordinator_keys(topics)``: the group and transactional ids a coordinator target aims
    at (empty: the workload has no coordinator of its own)."""

    client: str
    client_version: Callable[[Case], str]
    produce: Produce
    consumer: ReaderFactory
    history_version: int = 1
    consumer_options: Callable[[Case], dict[str, Any]] = field(default=_no_options)
    run_meta: Callable[[Sequence[str]], dict[str, Any]] = field(default=_no_meta)
    producer_handle: Callable[[], ProducerHandle] | None = None
    coordinator_keys: Callable[[Sequence[str]], dict[str, str]] = field(default=_no_keys)
