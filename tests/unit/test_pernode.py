"""The per-node helper of the mount kinds: a failed start closes what was added."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_kreplica.cluster.facilities.impl.pernode import PerNode
from pytest_kreplica.errors import ClusterError


@dataclass
class _Mounts(PerNode[str]):
    closed: tuple = ()

    def close(self) -> None:
        self.closed = tuple(self.disks)
        self.each(lambda item: (_ for _ in ()).throw(ClusterError(f"{item} busy"))
                  if item == "b" else None)


def _start(item: str) -> None:
    if item == "c":
        raise OSError("mount failed")


def test_a_failed_start_closes_every_item_added_and_raises_the_start_failure():
    mounts = _Mounts()
    with pytest.raises(OSError, match="mount failed"):
        mounts.add_each([(1, "a"), (2, "b"), (3, "c"), (4, "d")], _start)
    assert mounts.closed == (1, 2, 3)  # "d" was never made


def test_each_tries_every_item_and_raises_their_failures_together():
    mounts = _Mounts().add_each([(1, "a"), (2, "b")], _start)
    assert mounts[2] == "b"
    with pytest.raises(ClusterError, match="^b busy$"):
        mounts.close()
