"""What the external backend asks of a cluster's ApiVersions answer before any case runs.

A cluster file declares capabilities (the KRaft controller, transactions) and a Kafka
version; ApiVersions says what the brokers really speak. A declared capability whose
requests are missing, or a version the protocol contradicts, is one line at start instead
of a case failing half-way on an unsupported request.
"""

from __future__ import annotations

from ..capabilities import major_minor

#: api key -> name, for the requests every case sends (producer, consumer, admin)
CORE = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 10: "FindCoordinator",
        11: "JoinGroup", 19: "CreateTopics", 20: "DeleteTopics", 60: "DescribeCluster"}
CONTROLLER = {55: "DescribeQuorum"}
TRANSACTIONS = {22: "InitProducerId", 24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn",
                26: "EndTxn", 28: "TxnOffsetCommit"}
#: Kafka 4.0 removed Produce v0-v2 (KIP-896): a broker whose Produce starts at v3 is >= 4.0
PRODUCE_MIN_SINCE_4 = 3


def judge(apis: dict[int, tuple[int, int]], *, controller: bool, transactions: bool,
          kafka_version: str | None, where: str) -> str | None:
    """Why the cluster's ApiVersions contradicts what ``where`` declares (None: it does not)."""
    wanted = [("every case", CORE)]
    if controller:
        wanted.append(("capabilities.controller: true", CONTROLLER))
    if transactions:
        wanted.append(("capabilities.transactions: true", TRANSACTIONS))
    for reason, table in wanted:
        missing = [f"{name} (key {key})" for key, name in table.items() if key not in apis]
        if missing:
            return (f"{where}: {reason} needs {', '.join(missing)}; the cluster's ApiVersions "
                    f"does not offer them (declare it false, or check the broker)")
    declared = major_minor(kafka_version)
    produce_min = apis[0][0]
    if declared is not None and declared[0] < 4 and produce_min >= PRODUCE_MIN_SINCE_4:
        return (f"{where}: kafka_version {kafka_version} declared, but ApiVersions offers "
                f"Produce from v{produce_min} only (a Kafka >= 4.0 broker, KIP-896); "
                f"expected kafka_version 4.x")
    return None
