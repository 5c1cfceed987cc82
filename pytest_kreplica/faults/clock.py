"""Clock skew: a node's wall clock bumped forward, bumped back, or strobed, through the
libfaketime its JVM was started with (``cluster/facilities/impl/faketime.py``; on the docker
backend the host's library is mounted into the node's container and preloaded there, and the
offset file lies in the node's mounted directory).

Only ``System.currentTimeMillis`` moves (the monotonic clock stays true, as libfaketime's
README prescribes for a JVM), which is what Kafka uses for log append times, segment and
retention ages, the ISR lag rule (``replica.lag.time.max.ms``), transaction timeouts and
the KRaft timers.

Each strike is verified to act before it counts: the node's own clock is read back from the
``LogAppendTime`` of a record it appends (``clockprobe``) until it shows the requested offset,
and the reading goes into the fault's event ("skew +60.0 s"); the restore writes offset 0
and reads the clock back to about 0 the same way. A strobe flips the offset in a thread of
this process until the restore stops it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ClusterError, InputError
from .clockprobe import ClockProbe
from .failure import Failure, degrading

if TYPE_CHECKING:
    from ..cluster.facilities.impl.faketime import Clocks

SKEW_S = 60.0  # each bump; a strobe flips between 0 and this
STROBE_HALF_PERIOD_S = 2.0  # a strobe holds each offset this long
TOLERANCE_S = 1.5  # libfaketime reads the offset file again within 1 s (its cache)
ACT_TIMEOUT_S = 15.0  # until the node's clock shows the new offset


@dataclass(frozen=True)
class ClockFault:
    name: str
    doc: str
    offset_s: float  # the bump; for the strobe its far end
    strobe: bool = False


FORWARD = ClockFault("clock_skew", f"the node's wall clock bumped {SKEW_S:+.0f} s", SKEW_S)
BACK = ClockFault("clock_skew_back", f"the node's wall clock bumped {-SKEW_S:+.0f} s",
                  -SKEW_S)
STROBE = ClockFault("clock_strobe", f"the node's wall clock flipped between +0 and "
                    f"{SKEW_S:+.0f} s every {STROBE_HALF_PERIOD_S:.0f} s", SKEW_S, strobe=True)
CLOCK_FAULTS: dict[str, ClockFault] = {f.name: f for f in (FORWARD, BACK, STROBE)}


class _Strobe:
    """Flips a node's offset between 0 and ``offset_s`` until stopped."""

    def __init__(self, clocks: Clocks, node: int, offset_s: float):
        self.clocks, self.node, self.offset_s = clocks, node, offset_s
        self.stop = threading.Event()
        self.flips = 0
        self.thread = threading.Thread(target=self._run, name=f"kreplica-strobe-{node}",
                                       daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.clocks.set_offset(self.node, self.offset_s if self.flips % 2 == 0 else 0.0)
            self.flips += 1
            self.stop.wait(STROBE_HALF_PERIOD_S)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(STROBE_HALF_PERIOD_S + 5)


_strobes: dict[tuple[int, int], _Strobe] = {}  # (id(clocks), node) -> its running strobe


def clocks_of(cluster: Any, failure: str) -> Clocks:
    """The cluster's preloaded clocks; a cluster started without them cannot be skewed."""
    clocks = cluster.facility("fake_clock")
    if clocks is None:
        raise InputError(f"failure {failure} needs a cluster whose nodes run under "
                         "libfaketime (process or docker backend, facility fake_clock); "
                         "this one has none")
    return clocks


def _check_preloaded(cluster: Any, clocks: Clocks, node: int, failure: str) -> None:
    pid = cluster.node(node).pid
    if pid is None or not clocks.loaded(pid):
        raise ClusterError(f"{failure}: node {node} (pid {pid}) has no {clocks.library.name} "
                           f"mapped (expected the preload from its start); log: "
                           f"{cluster.node(node).log_file}")


def strike(cluster: Any, node: int, failure: str) -> str:
    """Move ``node``'s clock and read it back from the node; returns the reading."""
    fault = CLOCK_FAULTS[failure]
    clocks = clocks_of(cluster, failure)
    _check_preloaded(cluster, clocks, node, failure)
    probe = ClockProbe(cluster)
    try:
        if not fault.strobe:
            clocks.set_offset(node, fault.offset_s)
            seen = probe.wait_skew(node, fault.offset_s, TOLERANCE_S, ACT_TIMEOUT_S, failure)
            return f"skew {seen:+.1f} s (requested {fault.offset_s:+.0f} s)"
        _strobes[(id(clocks), node)] = _Strobe(clocks, node, fault.offset_s)
        # both ends seen: reads over two and a half periods
        seen = probe.samples(node, 5 * STROBE_HALF_PERIOD_S, every=0.25)
        low, high = (min(seen), max(seen)) if seen else (None, None)
        if low is None or abs(low) > TOLERANCE_S or abs(high - fault.offset_s) > TOLERANCE_S:
            raise ClusterError(f"{failure} did not act on node {node}: {len(seen)} reads "
                               f"between {low} and {high} s (expected both 0 and "
                               f"{fault.offset_s:+.0f} s ± {TOLERANCE_S} s)")
        return (f"skew {low:+.1f}..{high:+.1f} s (requested +0 / {fault.offset_s:+.0f} s, "
                f"flipped every {STROBE_HALF_PERIOD_S:.0f} s; {len(seen)} reads)")
    finally:
        probe.close()


def restore(cluster: Any, node: int, failure: str, timeout: float = ACT_TIMEOUT_S) -> str:
    """Stop a strobe, set ``node``'s offset back to 0 and read its clock back to about 0."""
    clocks = clocks_of(cluster, failure)
    strobe = _strobes.pop((id(clocks), node), None)
    if strobe is not None:
        strobe.finish()
    clocks.set_offset(node, 0.0)
    probe = ClockProbe(cluster)
    try:
        seen = probe.wait_skew(node, 0.0, TOLERANCE_S, min(timeout, ACT_TIMEOUT_S),
                               f"{failure} reset")
    finally:
        probe.close()
    flips = f" after {strobe.flips} flips" if strobe is not None else ""
    return f"skew {seen:+.1f} s after the reset{flips}"


def _failure(fault: ClockFault, colour: str, label: str) -> Failure:
    """The registry's entry: a degrading fault (``failure.degrading``) (a
    leader's clock jumping ahead makes its followers look out of sync)."""
    return degrading(fault.name, fault.doc, "clock-reset", colour, label, strike, restore,
                     backends=("process", "docker"), facilities=frozenset({"fake_clock"}))


# the FAILURES registry's entries (faults/registry.py: one line)
CLOCK_FAILURES = (
    _failure(FORWARD, "#6b6ecf", f"clock skew ({SKEW_S:+.0f} s)"),
    _failure(BACK, "#9c9ede", f"clock skew ({-SKEW_S:+.0f} s)"),
    _failure(STROBE, "#e7ba52", f"clock strobe (0 / {SKEW_S:+.0f} s)"),
)
