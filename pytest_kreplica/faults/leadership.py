"""Every partition's leadership around one fault: the facts the loss evidence rests on for
the partitions the nemesis did not watch (``validation.evidence``).

Before the strike the nemesis reads, for every partition of the case, its leader and ISR;
after the restore (once every replica is in sync again, within the fault's bounded wait) it
reads every leader once more. A partition the struck node led before and another node leads
after had its leadership moved by the fault, whatever the failure type: a pause that
outlasted the broker session moved it, a shorter one did not, and only the reads say which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..cluster import Cluster, PartitionState

READ_TIMEOUT_S = 10.0  # one metadata read of every partition; unanswered: no facts


def _leader(state: PartitionState) -> int | None:
    return state.leader if state.leader is not None and state.leader >= 0 else None


def read_partitions(cluster: Cluster, partitions: list[tuple[str, int]],
                    timeout: float = READ_TIMEOUT_S) -> dict[str, dict[str, Any]] | None:
    """``{"t-0": {"leader": 1, "isr": [1, 2, 3]}, ...}`` for every partition, or None when
    the cluster did not answer (then nothing but the watched partition can be excused)."""
    try:
        try:
            states = cluster.partition_states(sorted({t for t, _ in partitions}),
                                              timeout=timeout)
        except (NotImplementedError, AttributeError):  # a backend without the batched read
            states = {(t, p): cluster.partition_state(t, p) for t, p in partitions}
    except Exception:  # the cluster is being hurt: no facts rather than wrong ones
        return None
    return {f"{t}-{p}": {"leader": _leader(states[(t, p)]),
                         "isr": sorted(states[(t, p)].isr)}
            for t, p in partitions if (t, p) in states}


def leaders(read: dict[str, dict[str, Any]] | None) -> dict[str, int | None] | None:
    """The leader of each partition of a ``read_partitions`` answer."""
    return None if read is None else {name: p["leader"] for name, p in read.items()}


def led_by(read: dict[str, dict[str, Any]] | None, node: Any) -> list[str] | None:
    """The partitions ``node`` leads in a ``read_partitions`` answer."""
    return None if read is None else [n for n, p in read.items() if p["leader"] == node]
