"""Shared by every test directory.

pytester's in-process runs (tests/unit/test_plugin.py, test_failure_plugin.py) drop the
modules first imported during a run; numpy's C core cannot be loaded a second time, so a
later test importing it (through pyarrow or matplotlib) would fail depending on the order
tests land on an xdist worker. Importing them here puts them in every run's snapshot.
"""

import numpy  # noqa: F401
import pyarrow  # noqa: F401
import pyarrow.json  # noqa: F401
