"""What an environment can run, and why a case cannot run there.

A cluster someone else built (an external YAML, a ``ReplicationSuite`` subclass, a
Kafka-compatible broker) offers some of what the matrix asks for: a failure type, a broker
count, a replication factor, transactions, a Kafka version. ``Capabilities.lacks(case)``
gives the one line that deselects a case at collection, so a green run never hides a case
that could not have run. Cases are read by attribute (no import of the matrix layer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FAILURES = ("clean", "hard", "soft")  # the process-level failures a fault adapter can offer
#: scenarios that run on a cluster handed to them (mirror and version-compat start their own)
ON_ONE_CLUSTER = ("replication",)


def major_minor(version: str | None) -> tuple[int, ...] | None:
    """``"4.1.0"`` -> ``(4, 1)``; None for None or a value that is not a version."""
    if not version:
        return None
    parts = str(version).split(".")[:2]
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


TXN_WORKLOAD = "txn"  # the matrix's transactional ``workload`` value (workloads.WORKLOADS)


def needs_transactions(case: Any) -> bool:
    """A transactional workload (``workload: txn``) or an exactly-once mirror needs the
    transaction APIs."""
    return getattr(case, "workload", "plain") == TXN_WORKLOAD or (
        getattr(case, "scenario", "") == "mirror"
        and getattr(case, "mirror_semantics", "") == "exactly-once")


@dataclass(frozen=True)
class Capabilities:
    """What an environment offers; the defaults are those of a 3-node Apache Kafka cluster
    reached through a fault adapter that can kill, terminate and pause a node."""

    failures: tuple[str, ...] = FAILURES
    brokers: tuple[int, ...] | None = None  # broker counts it can provide; None: any
    max_replication_factor: int | None = None
    controller: bool = True  # whether the KRaft quorum leader can be found (DescribeQuorum)
    transactions: bool = True
    idempotence: bool = True
    kafka_version: str | None = None  # the version it speaks; None: whatever a case asks
    scenarios: tuple[str, ...] = ON_ONE_CLUSTER
    replica_logs: bool = True  # log directories readable here (the replica-log verifier)
    where: str = "the environment"  # named in every reason (a file, a class)

    def lacks(self, case: Any) -> str | None:
        """Why ``case`` cannot run here (None: it can)."""
        scenario = getattr(case, "scenario", "replication")
        if scenario not in self.scenarios:
            return (f"scenario {scenario} starts clusters of its own; {self.where} runs "
                    f"{', '.join(self.scenarios)}")
        failure = getattr(case, "failure", "none")
        if failure != "none" and failure not in self.failures:
            return (f"failure {failure} is not offered by {self.where} "
                    f"(failures: {', '.join(self.failures) or 'none'})")
        if failure != "none" and getattr(case, "target", "") == "controller" \
                and not self.controller:
            return f"target controller needs capabilities.controller: true in {self.where}"
        brokers = getattr(case, "brokers", None)
        if self.brokers is not None and brokers not in self.brokers:
            return (f"needs {brokers} brokers; {self.where} declares "
                    f"{' or '.join(map(str, self.brokers))} nodes")
        rf = getattr(case, "replication_factor", 1)
        if self.max_replication_factor is not None and rf > self.max_replication_factor:
            return (f"needs replication factor {rf}; {self.where} replicates at most "
                    f"{self.max_replication_factor}")
        if needs_transactions(case) and not self.transactions:
            return f"needs transactions; {self.where} declares none"
        if getattr(case, "idempotence", False) and not self.idempotence:
            return f"needs an idempotent producer; {self.where} declares none"
        if getattr(case, "tiered", "off") == "on":  # the remote store is a local directory
            return f"tiered: on runs on the process backend's own clusters only, not {self.where}"
        wanted, offered = (major_minor(getattr(case, "kafka_version", None)),
                           major_minor(self.kafka_version))
        if wanted is not None and offered is not None and wanted != offered:
            return (f"needs Kafka {case.kafka_version}; {self.where} speaks "
                    f"{self.kafka_version}")
        return None
