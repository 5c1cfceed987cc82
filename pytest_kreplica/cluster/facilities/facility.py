"""What one node facility is: the contract every module of ``cluster/facilities/`` fills.

A facility is something a fault needs from the nodes of a cluster the suite starts: a
proxy in front of their links, a fake clock, a small disk, a lazy filesystem, a dynamic
quorum. A :class:`Facility` says how it is prepared once per machine (``prepare``), what is
swept after a killed run (``sweep``), which backends offer it and how it attaches to one
cluster (``attach``). The attached :class:`Attachment` is asked by the backend, in order,
what it adds to the nodes: the quorum's voters, each node's server.properties, a node
JVM's environment, a node container's environment, mounts and published ports, the format
step, and what to close after the nodes stopped. A backend applies whatever facilities its
spec names through these hooks and never names a fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..base import Node


@dataclass(frozen=True)
class Site:
    """Where a cluster's facilities attach: what its backend knows once every node's
    (empty) log dir exists and before any node file is written."""

    backend: str
    workdir: Path
    host: str  # the nodes' address as peers reach them (process: loopback)
    nodes: tuple[Node, ...]  # a node's home is ``log_file.parent``, its log dir ``log_dir``
    network: Any = None  # docker: the cluster's network (docker SDK object)
    kafka_version: str = ""  # the nodes' Kafka version (resolved)

    @property
    def homes(self) -> dict[int, Path]:
        return {n.node_id: n.log_file.parent for n in self.nodes}

    @property
    def log_dirs(self) -> dict[int, Path]:
        return {n.node_id: n.log_dir for n in self.nodes}


@dataclass
class ContainerParts:
    """What a facility adds to one node's container (docker SDK ``containers.create``)."""

    environment: dict[str, str] = field(default_factory=dict)
    volumes: dict[str, dict[str, str]] = field(default_factory=dict)
    ports: dict[str, tuple] = field(default_factory=dict)


class Attachment:
    """One facility on one cluster. Each hook's default adds nothing; a facility's module
    overrides the hooks it needs."""

    #: what the faults read through ``Cluster.facility(name)`` (a proxy, clocks, disks)
    handle: Any = None

    def voters(self, voters: str) -> str:
        """The quorum setting every node is given (``controller.quorum.voters``, or a
        dynamic quorum's bootstrap servers), from what earlier facilities made of it."""
        return voters

    def node_properties(self, node_id: int, props: dict[str, str]) -> dict[str, str]:
        """One node's server.properties."""
        return props

    def environment(self, node_id: int) -> dict[str, str]:
        """Variables added to a node JVM's environment (process backend)."""
        return {}

    def container(self, node_id: int, home: str) -> ContainerParts:
        """Environment, mounts and published ports of a node's container, whose home (the
        node's directory on the host) is mounted at ``home`` (docker backend)."""
        return ContainerParts()

    def storage_tool_args(self) -> list[str] | None:
        """Extra arguments of Kafka's StorageTool; not None: the nodes must be formatted by
        the tool (a template copied from another cluster does not apply)."""
        return None

    def formatted(self) -> None:
        """The nodes' storage was formatted (before any fault can strike)."""

    def describe(self) -> Any:
        """For run.json (None: nothing to say)."""
        return None

    def close(self) -> None:
        """After every node of the cluster stopped."""


class HelperAttachment(Attachment):
    """A facility that is one helper object per cluster (the disks of its nodes): durable
    after the format, described, closed."""

    def __init__(self, helper: Any):
        self.handle = helper

    def formatted(self) -> None:
        self.handle.sync()

    def describe(self) -> Any:
        return self.handle.describe()

    def close(self) -> None:
        self.handle.close()


@dataclass(frozen=True)
class Facility:
    """One entry of ``FACILITIES``: a node facility a ``Failure`` may name."""

    name: str  # what ``Failure.facilities`` and ``ClusterSpec.facilities`` hold
    doc: str  # one line: what it gives the nodes
    key: str  # the suffix of a cluster's directory name (``pool.spec_key``)
    backends: tuple[str, ...]  # the backends whose clusters can have it
    attach: Callable[[Site], Attachment]  # started for one cluster (undone by ``close``)
    # the machine-wide one-time preparation (a binary built, a library fetched), also run by
    # the first-run step before any case; None: nothing to prepare
    prepare: Callable[[], object] | None = None
    # the key of run.json's cluster description its ``Attachment.describe`` goes under
    describe_as: str = ""
    # removes what a killed run left (mounts, proxies, shared-memory objects) of owners
    # that are dead, never a live session's; run at every cluster start
    sweep: Callable[[], object] | None = None
