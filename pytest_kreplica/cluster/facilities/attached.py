"""The facilities attached to one cluster, asked together: what the backends call."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from .facility import Attachment, ContainerParts, Facility, Site

log = logging.getLogger(__name__)


class Attached:
    """Each named facility's :class:`Attachment`, in registry order; every hook folds over
    them (the voters and properties pass through each in turn, the rest is merged)."""

    def __init__(self) -> None:
        self.attachments: dict[str, Attachment] = {}
        self.described_as: dict[str, str] = {}  # facility name -> its run.json key

    @classmethod
    def start(cls, facilities: Iterable[Facility], site: Site) -> Attached:
        """Attach each facility to the cluster at ``site``; on a failure the ones attached
        so far are closed before the error propagates."""
        attached = cls()
        try:
            for facility in facilities:
                attached.attachments[facility.name] = facility.attach(site)
                attached.described_as[facility.name] = facility.describe_as
        except BaseException:
            attached.close()
            raise
        return attached

    def handle(self, name: str) -> Any:
        attachment = self.attachments.get(name)
        return attachment.handle if attachment is not None else None

    def voters(self, voters: str) -> str:
        for attachment in self.attachments.values():
            voters = attachment.voters(voters)
        return voters

    def node_properties(self, node_id: int, props: dict[str, str]) -> dict[str, str]:
        for attachment in self.attachments.values():
            props = attachment.node_properties(node_id, props)
        return props

    def environment(self, node_id: int) -> dict[str, str]:
        env: dict[str, str] = {}
        for attachment in self.attachments.values():
            env.update(attachment.environment(node_id))
        return env

    def container(self, node_id: int, home: str) -> ContainerParts:
        merged = ContainerParts()
        for attachment in self.attachments.values():
            parts = attachment.container(node_id, home)
            merged.environment.update(parts.environment)
            merged.volumes.update(parts.volumes)
            merged.ports.update(parts.ports)
        return merged

    def storage_tool_args(self) -> list[str] | None:
        """The StorageTool's extra arguments, None when no facility needs the tool."""
        wanted = [a.storage_tool_args() for a in self.attachments.values()]
        if all(w is None for w in wanted):
            return None
        return [arg for w in wanted if w is not None for arg in w]

    def formatted(self) -> None:
        for attachment in self.attachments.values():
            attachment.formatted()

    def describe(self) -> dict[str, Any]:
        """For run.json's cluster description: each facility's, under its key there."""
        said = {self.described_as[name]: a.describe() for name, a in self.attachments.items()}
        return {key: text for key, text in said.items() if text is not None}

    def close(self) -> None:
        """Close every attachment, last attached first; one failing does not keep the
        others open."""
        for name, attachment in reversed(list(self.attachments.items())):
            try:
                attachment.close()
            except Exception as exc:  # closing must go on for the others
                log.warning("closing facility %s failed: %s", name, exc)
        self.attachments.clear()
