"""Shared by every test directory.

pytester's in-process runs (tests/unit/test_plugin.py, test_failure_plugin.py) drop the
modules first imported during a run; numpy's C core cannot be loaded a second time, so a
later test importing it (through pyarrow or matplotlib) would fail depending on the order
tests land on an xdist worker. Importing them here puts them in every run's snapshot.

pytester also points ``HOME`` at its own empty directory, so a nested run would find an
empty ``~/.cache/kreplica`` and build everything again (measured in CI: the external backend
test spent 63 s making Spark's archive and resolved Kafka from Maven in its nested run).
The ``pytester`` fixture below hands nested runs the cache of the run that started them.
"""

import numpy  # noqa: F401
import pyarrow  # noqa: F401
import pyarrow.json  # noqa: F401
import pytest

from pytest_kreplica.cache import ENV_CACHE, cache_dir
from tests import schedule

OUTER_CACHE = cache_dir()
RECORDED = schedule.recorded_seconds()


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    """pytester with ``$KREPLICA_CACHE`` set to the outer run's cache (not its empty HOME)."""
    monkeypatch.setenv(ENV_CACHE, str(OUTER_CACHE))
    return pytester


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files longest first (tests/schedule.py), after every other implementation (the
    plugin's own sort by cluster stays within each file)."""
    items[:] = schedule.longest_first(items, RECORDED)
