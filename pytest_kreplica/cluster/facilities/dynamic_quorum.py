"""dynamic_quorum: the cluster is formatted as a dynamic KRaft quorum (KIP-853), so its
voters can be removed and added at run time.

Prepared: nothing. Adds to a node: ``controller.quorum.bootstrap.servers`` instead of a
fixed ``controller.quorum.voters``, and to the format the StorageTool's
``--initial-controllers`` (every node a voter with a new directory id: no template
formatted for another cluster applies). Swept: nothing (it leaves nothing behind).
"""

from __future__ import annotations

from ..kafka import config as kconfig
from .facility import Attachment, Facility, Site

VOTERS = "controller.quorum.voters"
BOOTSTRAP = "controller.quorum.bootstrap.servers"


class DynamicQuorum(Attachment):
    def __init__(self, site: Site):
        addresses = [kconfig.NodeAddress(n.node_id, n.host, n.port, n.controller_port)
                     for n in site.nodes]
        self.bootstrap, self.initial_controllers = kconfig.dynamic_quorum(addresses)

    def voters(self, voters: str) -> str:
        return self.bootstrap

    def node_properties(self, node_id: int, props: dict[str, str]) -> dict[str, str]:
        out = {(BOOTSTRAP if key == VOTERS else key): value for key, value in props.items()}
        return out

    def storage_tool_args(self) -> list[str] | None:
        return ["--initial-controllers", self.initial_controllers]


FACILITY = Facility(name="dynamic_quorum", doc="a KRaft quorum whose voters can change",
                    key="dynquorum", backends=("process",), attach=DynamicQuorum)
