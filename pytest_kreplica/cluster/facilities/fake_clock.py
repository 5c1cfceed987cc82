"""fake_clock: libfaketime preloaded into every node JVM
(``cluster/facilities/impl/faketime.py``), each node's wall clock at offset 0 until a fault
writes another into its offset file.

Prepared once: Debian's libfaketime fetched into the cache (or the system's). Adds to a
node: ``LD_PRELOAD`` and libfaketime's settings in its JVM's environment; on docker, the
library's directory mounted read-only into the container and the same settings pointing
there. Swept: libfaketime's shared-memory objects whose process is gone.
"""

from __future__ import annotations

from .facility import Attachment, ContainerParts, Facility, Site
from .impl import faketime

MOUNT = "/kreplica-faketime"  # the library's directory inside a node container


class FakeClocks(Attachment):
    def __init__(self, site: Site):
        self.handle = faketime.Clocks.plan(site.homes)

    def environment(self, node_id: int) -> dict[str, str]:
        return self.handle.preload(node_id)

    def container(self, node_id: int, home: str) -> ContainerParts:
        return ContainerParts(environment=self.handle.container_env(MOUNT, home),
                              volumes={str(self.handle.library.parent): {"bind": MOUNT,
                                                                         "mode": "ro"}})

    def describe(self) -> object:
        return self.handle.describe()

    def close(self) -> None:
        self.handle.close()


def prepare() -> object:
    return faketime.ensure_library()


def sweep() -> object:
    return faketime.sweep()


FACILITY = Facility(name="fake_clock", doc="every node JVM under libfaketime, offsets at 0",
                    key="clock", backends=("process", "docker"), attach=FakeClocks,
                    describe_as="clocks", prepare=prepare, sweep=sweep)
