"""Work units and their order for the test command (``pytest tests -n 2 --dist loadfile
--no-loadscope-reorder``; the same units under ``--dist loadgroup``).

The test command runs over an hour of test time on two workers, so its wall time is set by
the order its work units start in: a long unit started last keeps one worker busy while the
other idles.

* **Units.** Under ``--dist loadfile`` a unit is a test file (module fixtures such as a
  shared cluster are built once, on one worker). Under ``--dist loadgroup`` the plugin's
  ``xdist_group`` per cluster makes the matrix cases needing one cluster a unit, and
  ``add_file_groups`` keeps every other file together.
* **Order.** Units start longest first, by the seconds each test took in a recorded run
  (``tests/durations.json``, rewritten by ``scripts/test-durations JUNIT_XML``); a test not
  in the record counts ``DEFAULT_SECONDS``. A file's place is that of its first test.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from pytest_kreplica.plugin.summary import without_group

DURATIONS = Path(__file__).with_name("durations.json")
DEFAULT_SECONDS = 1.0


def recorded_seconds(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per test id (without xdist's ``@group`` suffix) from the recorded run."""
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except FileNotFoundError:
        return {}


def group_of(item: pytest.Item) -> str:
    """The item's work unit: its ``xdist_group`` if it has one, else its file."""
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    return item.nodeid.split("::", 1)[0]


def add_file_groups(items: list[pytest.Item]) -> None:
    """Give every test without a group its file's, so loadgroup keeps files together."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> list[pytest.Item]:
    """Items reordered unit by unit, the unit with the most recorded seconds first; within a
    unit (and among units of equal weight) the collection order stays."""
    units: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        units[group_of(item)].append(item)
    weight = {name: sum(seconds.get(without_group(i.nodeid), DEFAULT_SECONDS) for i in unit)
              for name, unit in units.items()}
    order = sorted(units, key=lambda name: -weight[name])  # stable: ties keep their order
    return [item for name in order for item in units[name]]
