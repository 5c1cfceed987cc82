"""The replica-log check of a case: every replica's log snapshotted at rest into the run
directory and compared batch by batch (``validation.replicas``: HISTORY.md "Replica logs");
a mirrored case does this for both clusters."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cluster.base import TopicSpec
from ..validation.replicas.snapshot import snapshot_replicas
from ..validation.replicas.verify import verify_logs

if TYPE_CHECKING:
    from ..cluster.base import Cluster

REST_TIMEOUT = 30.0  # seconds to wait for every ISR replica to reach the leader's log end


class Phases(dict):
    """Phase name -> seconds; a phase timed twice (two clusters' snapshots) adds up."""

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self[name] = round(self.get(name, 0.0) + time.monotonic() - start, 3)


@dataclass
class ReplicaCheck:
    """The replica-log check. With ``logs`` (``kreplica verify-logs``' verdict: replicas
    compared batch by batch) it is valid when no batch is corrupt, missing or divergent;
    without it (the interim form, closed segments compared by sha256) when no closed
    segment differs."""

    at_rest: bool
    segments: int  # segments read (batch check) / closed segments compared (interim form)
    mismatches: list[dict[str, Any]]  # closed segments whose sha256 differ
    skipped: str | None = None
    logs: dict[str, Any] | None = None  # LogVerdict.to_dict() without the per-file list

    @property
    def valid(self) -> bool:
        if self.skipped is not None:
            return True
        if self.logs is not None:
            return bool(self.logs["valid"])
        return not self.mismatches

    def as_dict(self) -> dict[str, Any]:
        out = {"valid": self.valid, "at_rest": self.at_rest, "segments": self.segments,
               "mismatches": self.mismatches, "skipped": self.skipped}
        if self.logs is not None:
            out.update(counts=self.logs["counts"],
                       first_divergence=self.logs["first_divergence"],
                       examples=self.logs["examples"])
        return out

    def failure_lines(self, run_dir: Path) -> list[str]:
        if self.logs is None:
            return [f"replicas: expected equal closed segments on every replica, "
                    f"{len(self.mismatches)} differ: {json.dumps(self.mismatches[:5])}"]
        counts = self.logs["counts"]
        bad = ("corrupt_batches", "missing_batches", "divergent_batches")
        lines = ["replicas: expected no corrupt, missing or divergent batches; seen "
                 + ", ".join(f"{k} {counts[k]}" for k in bad)]
        for d in self.logs["first_divergence"]:
            lines.append(f"  first divergence {d['topic']}-{d['partition']} at offset "
                         f"{d['offset']} ({d['kind']}), stored crc by node: "
                         f"{json.dumps(d['replicas'])}")
        for name in bad:
            rows = self.logs["examples"].get(name) or []
            if rows:
                lines.append(f"  {name} e.g. {json.dumps(rows[:5], default=str)}")
        lines.append(f"  replica logs: {run_dir / 'replicas'} (kreplica verify-logs {run_dir})")
        return lines



def verify_replicas(cluster: Cluster, topics: list[str], partitions: int, run_dir: Path,
                    spark_master: str | None = None, phases: Phases | None = None
                    ) -> ReplicaCheck:
    """Snapshot every replica's log at rest into ``run_dir`` (``replicas.snapshot``) and
    compare them batch by batch on Spark (``replicas.verify``: HISTORY.md "Replica logs").
    With ``phases``, the two are timed apart as ``snapshot`` and ``replicas``."""
    phases = Phases() if phases is None else phases
    with phases.timed("snapshot"):
        snapshot_replicas(cluster, [TopicSpec(t, partitions) for t in topics], run_dir,
                          timeout=REST_TIMEOUT)
    with phases.timed("replicas"):
        verdict = verify_logs(run_dir, spark_master=spark_master)
    logs = verdict.to_dict()
    logs.pop("segments")  # per-file sha256 list: ``kreplica verify-logs RUN_DIR --json``
    return ReplicaCheck(verdict.at_rest, verdict.counts["segments"],
                        verdict.examples.get("segment_mismatches") or [], logs=logs)


def verify_both(sides: dict[str, tuple[Cluster, list[str]]], partitions: int, run_dir: Path,
                spark_master: str | None, phases: Phases, extra: dict[str, Any]
                ) -> ReplicaCheck:
    """A mirrored case's replicas: each cluster snapshotted and verified like a single
    cluster's, into its own sub-run directory (``replicas-source/``, ``replicas-target/``,
    each with its replicas.json, so ``kreplica verify-logs`` runs on either); one combined
    check, and each side's verdict in ``extra["replica_logs"]``."""
    checks = {}
    for name, (cluster, names) in sides.items():
        sub = run_dir / f"replicas-{name}"
        sub.mkdir(parents=True, exist_ok=True)
        checks[name] = verify_replicas(cluster, names, partitions, sub, spark_master, phases)
    extra["replica_logs"] = {n: {k: c.logs[k] for k in ("valid", "counts", "first_divergence")}
                             for n, c in checks.items()}
    return combine_checks(checks)


def combine_checks(checks: dict[str, ReplicaCheck]) -> ReplicaCheck:
    """One check of several clusters' verdicts: valid only when each is, counts summed,
    every divergence, example and mismatch tagged with its ``cluster``."""
    counts: dict[str, int] = {}
    for c in checks.values():
        for k, v in c.logs["counts"].items():
            counts[k] = counts.get(k, 0) + v
    logs: dict[str, Any] = {
        "valid": all(c.logs["valid"] for c in checks.values()), "counts": counts,
        "first_divergence": [{**d, "cluster": n} for n, c in checks.items()
                             for d in c.logs["first_divergence"]],
        "examples": {}, "at_rest": all(c.at_rest for c in checks.values())}
    for n, c in checks.items():
        for kind, rows in c.logs["examples"].items():
            logs["examples"].setdefault(kind, []).extend({**r, "cluster": n} for r in rows)
    return ReplicaCheck(logs["at_rest"], sum(c.segments for c in checks.values()),
                        [{**m, "cluster": n} for n, c in checks.items() for m in c.mismatches],
                        logs=logs)
