"""A background sampler for fault tests: what a test sees of the cluster while the nemesis
runs, independent of the nemesis' own bookkeeping (proof that a fault really acted)."""

from __future__ import annotations

import threading

SAMPLE_EVERY_S = 0.05


class BackgroundSampler:
    """Calls ``sample()`` every 50 ms on a thread of its own while the ``with`` block runs."""

    join_s = 5.0  # how long ``__exit__`` waits for the last sample

    def __init__(self, cluster):
        self.cluster = cluster
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        raise NotImplementedError

    def _loop(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(SAMPLE_EVERY_S)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(self.join_s)
