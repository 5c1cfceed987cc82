"""``Case`` (one test case: every dimension's value as a typed attribute) and ``Matrix``.

``Case`` is generated from the dimension table (``dataclasses.make_dataclass``), so a new
dimension becomes an attribute without a second list to forget. Static type checkers and
readers cannot run that code, so the same class is spelled out below under ``TYPE_CHECKING``;
``tests/unit/test_case.py`` fails when the two disagree (names, order or types).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dimensions import DIMENSIONS

__all__ = ["CASE_FIELDS", "Case", "CaseMethods", "Matrix"]


class CaseMethods:
    """What a ``Case`` does besides holding values (its fields come from ``DIMENSIONS``)."""

    __slots__ = ()
    matrix: str
    case_id: str

    @property
    def params(self) -> tuple[tuple[str, Any], ...]:
        """Every dimension's ``(name, value)``, in table order."""
        return tuple((name, getattr(self, name)) for name in DIMENSIONS)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def __repr__(self) -> str:
        return f"Case({self.matrix!r}, {self.case_id!r})"


#: ``(name, annotation)`` of every ``Case`` field, in order: where the case comes from, every
#: dimension of the table, its markers, and the matrix file (run.json's ``source``; not
#: compared: the same case from a copied file is the same case).
CASE_FIELDS: tuple[tuple[str, str], ...] = (
    ("matrix", "str"), ("scenario", "str"), ("case_id", "str"),
    *((d.name, d.type) for d in DIMENSIONS.values()),
    ("markers", "tuple[str, ...]"), ("source", "str"),
)

if TYPE_CHECKING:
    @dataclass(frozen=True, kw_only=True, repr=False)
    class Case(CaseMethods):
        """One test case: a full set of dimension values plus where it came from."""

        matrix: str
        scenario: str
        case_id: str
        partitions: int
        replication_factor: int
        segment_bytes: int | None
        flush_messages: int | None
        topics: int
        compression: str
        acks: int
        producer_mode: str
        min_insync_replicas: int
        idempotence: bool
        brokers: int
        messages: int
        message_bytes: int
        workload: str
        isolation: str | None
        client: str
        kafka_version: str | None
        target_kafka_version: str | None
        replication_policy: str
        mirror_semantics: str
        target_brokers: int | None
        target_replication_factor: int | None
        compat: str
        backend: str
        tiered: str
        failure: str
        target: str
        failures: int
        duration: float | None
        downtime: float
        fault_timing: str
        unclean_leader_election: bool
        semantics: str
        seed: int
        max_unavailable_s: float | None
        markers: tuple[str, ...]
        source: str = dataclasses.field(default="", compare=False)
else:
    Case = dataclasses.make_dataclass(
        "Case", [*CASE_FIELDS[:-1], ("source", "str", dataclasses.field(default="",
                                                                         compare=False))],
        bases=(CaseMethods,), frozen=True, kw_only=True, repr=False,
        namespace={"__module__": __name__,  # make_dataclass(module=) needs Python 3.12
                   "__doc__": "One test case: a full set of dimension values plus where it "
                              "came from."})


@dataclass(frozen=True)
class Matrix:
    """One matrix file, validated and expanded."""

    name: str
    path: Path
    description: str
    scenario: str
    markers: tuple[str, ...]
    cases: tuple[Case, ...]
    subset_markers: tuple[str, ...] = ()  # markers of ``marks``: on some cases only
    # ``expected_findings``: case id -> why its red is a known property of the system
    expected_findings: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)
