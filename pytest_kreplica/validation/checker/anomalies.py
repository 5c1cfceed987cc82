"""Every anomaly the history checker counts, defined once (shared/HISTORY.md, "What the
checker reports"): the checker's rules and baseline, the verdict's validity, the loss
trade-off and the report all read this table.

To add an anomaly: its rule (a per-id flag in ``rules._per_id_columns`` / ``ID_FLAGS``, or a
per-row flag summed in ``PAIR_COUNTS``, and its example query), one ``Anomaly`` line here, and the
same rule in ``baseline.check_baseline`` (``note(name, ...)``); a planted history in
tests/checker/test_planted.py proves both count it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...history import SEMANTICS

ALO, EO, AMO = "at-least-once", "exactly-once", "at-most-once"


@dataclass(frozen=True)
class Anomaly:
    """One anomaly: what it means, the semantics it breaks (a non-zero count makes a run
    under them invalid; none = reported only), how the report shows it, and whether the loss
    trade-off may excuse it with evidence (``validation.tradeoffs``)."""

    name: str
    counted_per: str  # "id", "offset" or "pair" (consecutive rows of one process)
    meaning: str
    breaks: tuple[str, ...]
    label: str  # the report's row / column heading
    excusable: bool = False

    @property
    def invalidating(self) -> bool:
        return bool(self.breaks)

    def report_class(self, semantics: str | None) -> str:
        """CSS class of a non-zero count: ``bad`` (red) where it breaks the case's
        semantics (at-least-once when unknown), ``warn`` (amber) where it is only reported."""
        return "bad" if (semantics if semantics in SEMANTICS else ALO) in self.breaks \
            else "warn"


_EVERY = (ALO, EO, AMO)

ANOMALY_TABLE: tuple[Anomaly, ...] = (
    Anomaly("lost", "id", "acknowledged, never polled, although a poll of its partition went "
            "past its offset", (ALO, EO), "lost", excusable=True),
    Anomaly("unseen", "id", "acknowledged, never polled, and no poll of its partition went "
            "past its offset", (ALO, EO), "unseen", excusable=True),
    Anomaly("duplicated", "id", "an id at two or more (topic, partition, offset) positions",
            (EO, AMO), "duplicated"),
    Anomaly("inconsistent_offsets", "offset", "a (topic, partition, offset) holding two or "
            "more ids", _EVERY, "inconsistent_offsets", excusable=True),
    Anomaly("aborted_reads", "id", "an id whose send failed, polled", _EVERY, "aborted_reads"),
    Anomaly("unexpected", "id", "a polled id that was never sent", _EVERY, "unexpected"),
    Anomaly("nonmonotonic_polls", "pair", "a process polled an offset not above its previous "
            "one, with no assign / rebalance between", _EVERY, "nonmonotonic_polls"),
    Anomaly("poll_skips", "pair", "a process's consecutive polls jumped over a known record, "
            "with no assign / rebalance between", _EVERY, "poll_skips"),
    Anomaly("nonmonotonic_sends", "pair", "a process's acknowledged offsets went down in "
            "invoke order", (), "nonmonotonic_sends"),
    Anomaly("recovered", "id", "an indeterminate send that was polled", (), "recovered"),
    # history version 2, transactions (checker/txn.py; zero on version 1 histories)
    Anomaly("aborted_read", "id", "a read_committed poll returned a record of an aborted "
            "transaction (G1a)", _EVERY, "aborted_read"),
    Anomaly("precommitted_read", "id", "a read_committed poll returned a record before its "
            "transaction's commit was invoked", _EVERY, "precommitted_read"),
    Anomaly("lost_committed", "transaction", "a committed transaction's acknowledged record "
            "never read_committed-polled, although a read_committed poll went past it",
            (ALO, EO), "lost_committed"),
    Anomaly("torn_transaction", "transaction", "a read_committed reader saw part of a "
            "committed transaction but skipped another record inside its read range",
            _EVERY, "torn_transaction"),
    Anomaly("ru_aborted_read", "id", "a read_uncommitted consumer (a group member, or a poll "
            "naming no isolation) polled a record of an aborted transaction (what Kafka's "
            "default isolation shows; reported only)", (),
            "aborted_read (read_uncommitted)"),
    Anomaly("ru_precommitted_read", "id", "a read_uncommitted consumer (a group member, or a "
            "poll naming no isolation) polled a record before its transaction's commit was "
            "invoked (reported only)", (),
            "precommitted_read (read_uncommitted)"),
    # read-process-write pipelines (checker/pipeline.py)
    Anomaly("copied_twice", "id", "two or more committed transactions wrote a copy of one "
            "source record (the pipeline's exactly-once broken)", (EO,), "copied_twice"),
    Anomaly("uncopied", "id", "a committed record the pipeline consumed for good (below the "
            "position it committed) has no committed copy", (ALO, EO), "uncopied"),
    Anomaly("not_copied", "id", "a committed record of a topic the pipeline reads, at or above "
            "its committed position, never copied (the pipeline never got to it)", (ALO, EO),
            "not_copied"),
    # dependency cycles between committed transactions (checker/cycles.py)
    Anomaly("write_cycle", "cycle", "committed transactions whose appends interleave in a "
            "cycle of write-write order (G0; Kafka's protocol allows it)", (), "write_cycle"),
    Anomaly("read_cycle", "cycle", "read-process-write transactions each reading another's "
            "writes in a cycle (G1c of write-read edges)", _EVERY, "read_cycle"),
    Anomaly("mixed_cycle", "cycle", "a cycle of write-write and write-read edges (G1c; "
            "Kafka's protocol allows it)", (), "mixed_cycle"),
)

ANOMALIES: dict[str, Anomaly] = {a.name: a for a in ANOMALY_TABLE}
NAMES: tuple[str, ...] = tuple(ANOMALIES)
EXCUSABLE: tuple[str, ...] = tuple(a.name for a in ANOMALY_TABLE if a.excusable)
INVALIDATING: dict[str, tuple[str, ...]] = {
    s: tuple(a.name for a in ANOMALY_TABLE if s in a.breaks) for s in SEMANTICS}
# the replica-log look-up splits lost + unseen by where the id is (validation.replicas.locate):
# reported beside the anomalies, never invalidating
LOOKUP_COUNTS = ("in_log", "not_in_log")


def report_class(name: str, semantics: str | None) -> str:
    """CSS class of a non-zero count named ``name`` (``warn`` for a look-up count)."""
    anomaly = ANOMALIES.get(name)
    return anomaly.report_class(semantics) if anomaly else "warn"
