"""The ISR a fault is judged against, read from every broker's metadata.

A broker still replaying the metadata log answers with an older ISR. A follower that had
just rejoined then looks outside the ISR, and its election after the strike reads as
unclean: the kind of event that excuses lost records (``validation.evidence``). One CI run
recorded exactly that (ISR [1, 3] read twice, node 2 elected). So the nemesis reads the ISR
from every broker the admin client reaches, waits briefly for their views to agree, and
when they never do takes the union of what they showed and says so in the strike event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ClusterError
from ..waits import wait_for

if TYPE_CHECKING:
    from ..cluster import Cluster, PartitionState

AGREE_S = 3.0  # views normally agree at the first look; a cut-off broker may never


def describe_views(views: dict[int | None, PartitionState]) -> str:
    return ", ".join(f"node {n}: leader {s.leader} epoch {s.leader_epoch} isr {sorted(s.isr)}"
                     for n, s in sorted(views.items(), key=lambda kv: str(kv[0])))


def _agree(views: dict[int | None, PartitionState]) -> bool:
    return len({(s.leader, s.leader_epoch, tuple(sorted(s.isr))) for s in views.values()}) == 1


def isr_before(cluster: Cluster, topic: str, partition: int, timeout: float = AGREE_S
               ) -> tuple[list[int], str | None]:
    """The partition's ISR as every reachable broker shows it, and ``None``; or, when their
    views did not agree within ``timeout`` (0: one look), the union of the last views and a
    note naming each. Raises ``ClusterError`` when no broker answered at all."""
    last: dict[int | None, PartitionState] = {}

    def agreed() -> str | None:
        views = cluster.partition_views(topic, partition, timeout=max(timeout, 1.0))
        last.clear()
        last.update(views)
        return None if _agree(views) else describe_views(views)

    try:
        wait_for(agreed, timeout, f"every broker's metadata of {topic}-{partition} to show "
                                  f"the same leader, epoch and ISR", poll=0.1)
    except ClusterError:
        if not last:
            raise
        union = sorted({n for s in last.values() for n in s.isr})
        return union, f"brokers disagreed on the ISR ({describe_views(last)}); took {union}"
    return sorted(next(iter(last.values())).isr), None
