"""scenarios.interrupt with real signals to this process: the first SIGTERM / SIGINT in the
block is recorded and sets the stop event instead of ending the process; the handlers are
the previous ones again after the first signal and after the block."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from pytest_kreplica.scenarios.interrupt import cut_short


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_the_first_signal_sets_stop_and_restores_the_handlers(number):
    before = signal.getsignal(number)
    stop = threading.Event()
    started = time.monotonic()
    with cut_short(stop) as cut:
        assert signal.getsignal(number) is not before
        os.kill(os.getpid(), number)
        assert stop.wait(5), "the signal did not set stop"
        assert signal.getsignal(number) is before  # a second signal acts as before
    assert cut.signal == number.name
    assert 0 <= cut.describe(started)["after_s"] < 5


def test_disabled_or_unsignalled_it_changes_nothing():
    before = signal.getsignal(signal.SIGTERM)
    stop = threading.Event()
    with cut_short(stop, enabled=False) as cut:
        assert signal.getsignal(signal.SIGTERM) is before
    with cut_short(stop) as quiet:
        pass
    assert signal.getsignal(signal.SIGTERM) is before
    assert cut.describe(0.0) is None and quiet.describe(0.0) is None and not stop.is_set()
