"""A helper per node of a cluster (a small disk, a lazy filesystem), closed all together."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ....errors import ClusterError

T = TypeVar("T")


@dataclass
class PerNode(Generic[T]):
    """``disks[node_id]``; ``each`` runs an action on every one and raises the failures
    together, after trying them all (one stuck mount must not leave the others mounted)."""

    disks: dict[int, T] = field(default_factory=dict)

    def __getitem__(self, node_id: int) -> T:
        return self.disks[node_id]

    def close(self) -> None:
        raise NotImplementedError

    def add_each(self, made: Iterable[tuple[int, T]], start: Callable[[T], object]):
        """Add and start each ``(node_id, item)`` in turn; on any failure close what was
        added (nothing half-mounted stays) and raise it. Returns ``self``."""
        try:
            for node_id, item in made:
                self.disks[node_id] = item
                start(item)
        except BaseException:
            with contextlib.suppress(ClusterError):
                self.close()
            raise
        return self

    def each(self, action: Callable[[T], object],
             expected: tuple[type[BaseException], ...] = (ClusterError,)) -> None:
        errors = []
        for item in self.disks.values():
            try:
                action(item)
            except expected as exc:
                errors.append(str(exc))
        if errors:
            raise ClusterError("; ".join(errors))
