"""The order of the test command's files (``pytest tests -n 3 --dist loadfile
--no-loadscope-reorder``).

The test command runs over an hour of test time on three workers, so its wall time is set by
the order its work units start in: a long unit started last keeps one worker busy while the
other idles. Under ``--dist loadfile`` a unit is a test file (module fixtures such as a
shared cluster are built once, on one worker); files start longest first, by the seconds
each test took in a recorded run (``tests/durations.json``, rewritten by
``scripts/test-durations JUNIT_XML``); a test not in the record counts ``DEFAULT_SECONDS``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
DEFAULT_SECONDS = 1.0


def recorded_seconds(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per test id from the recorded run."""
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except FileNotFoundError:
        return {}


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> list[pytest.Item]:
    """Items reordered file by file, the file with the most recorded seconds first; within a
    file (and among files of equal weight) the collection order stays."""
    units: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        units[item.nodeid.split("::", 1)[0]].append(item)
    weight = {name: sum(seconds.get(i.nodeid, DEFAULT_SECONDS) for i in unit)
              for name, unit in units.items()}
    order = sorted(units, key=lambda name: -weight[name])  # stable: ties keep their order
    return [item for name in order for item in units[name]]
