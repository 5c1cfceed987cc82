"""Replay files: the shrunk failing program of the log model as runnable Python.

A replay file is an ordinary pytest module: ``STEPS`` (rule name and arguments, valid
Python reprs), ``MACHINE`` (``module:Class`` of the state machine) and one test that runs
them on a new topic of a pool cluster through the ``kreplica_log_replay`` fixture. Run it
with ``pytest --kreplica-replay FILE`` (or ``pytest FILE``).
"""

from __future__ import annotations

import importlib
import runpy
from pathlib import Path
from typing import Any

REPLAY_FILE = "replay.py"

_TEMPLATE = '''"""Log model: the minimal failing program ({count} steps, shrunk by Hypothesis).

Failure: {failure}

Re-run it against a new topic on a pool cluster:
    pytest --kreplica-replay {name}
"""

from pytest_kreplica.logmodel.model import Batch  # noqa: F401  (used by STEPS)

MACHINE = {machine!r}

STEPS = [
{steps}]


def test_replay(kreplica_log_replay):
    kreplica_log_replay(STEPS, MACHINE)
'''


def machine_path(machine: type) -> str:
    return f"{machine.__module__}:{machine.__qualname__}"


def render(program: list[tuple[str, dict[str, Any]]], machine: type, failure: str,
           name: str = REPLAY_FILE) -> str:
    """The replay module's source."""
    steps = "".join(f"    ({step!r}, {{{', '.join(f'{k!r}: {v!r}' for k, v in kw.items())}}}),\n"
                    for step, kw in program)
    first = (failure.strip().splitlines() or [""])[0][:300].replace('"""', "'''")
    return _TEMPLATE.format(count=len(program), failure=first, name=name,
                            machine=machine_path(machine), steps=steps)


def write_replay(run_dir: Path, program: list[tuple[str, dict[str, Any]]], machine: type,
                 exc: BaseException) -> Path:
    """Write the program into ``run_dir/replay.py``; returns the path."""
    path = Path(run_dir) / REPLAY_FILE
    failure = f"{type(exc).__name__}: {exc}"
    path.write_text(render(program, machine, failure, str(path)), encoding="utf-8")
    return path


def load_machine(path: str) -> type:
    """``module:Class`` to the class."""
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def load_replay(path: Path) -> tuple[list[tuple[str, dict[str, Any]]], type]:
    """The steps and machine class of a replay file."""
    namespace = runpy.run_path(str(path))
    return list(namespace["STEPS"]), load_machine(namespace["MACHINE"])
