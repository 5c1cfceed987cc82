"""tiered_storage: the nodes run with the remote tier on (KIP-405), over Kafka's own test
remote store ``LocalTieredStorage`` in a directory every node of the cluster shares
(``cluster/facilities/impl/tiered.py``).

Prepared: the ``kafka-storage`` test jar, resolved from Maven Central into the cache when the
first tiered cluster of a Kafka version is attached. Adds to a node: the remote log settings
(the spec's own settings win). Closed: a store left frozen by the remote store fault is thawed
(``cluster/facilities/impl/tieredfreeze.py``), so that the workdir can be deleted. Swept: the
stores frozen by a process that died before it thawed them. Process backend only: the store is
a directory of this machine."""

from __future__ import annotations

from .facility import Attachment, Facility, Site
from .impl import tiered


class TieredStorage(Attachment):
    def __init__(self, site: Site):
        self.settings = tiered.broker_config(site.kafka_version, len(site.nodes), site.workdir)
        self.handle = tiered.store_dir(site.workdir)  # what the checks read

    def node_properties(self, node_id: int, props: dict[str, str]) -> dict[str, str]:
        return {**self.settings, **props}

    def describe(self) -> str:
        return str(self.handle)

    def close(self) -> None:
        from .impl import tieredfreeze  # pulls in psutil

        if tieredfreeze.is_frozen(self.handle):
            tieredfreeze.thaw(self.handle)


def sweep() -> object:
    from .impl import tieredfreeze  # pulls in psutil

    return tieredfreeze.sweep_stale()


FACILITY = Facility(name="tiered_storage", doc="the remote tier (Kafka's LocalTieredStorage)",
                    key="tiered", backends=("process",), attach=TieredStorage,
                    describe_as="tiered_storage", sweep=sweep)
