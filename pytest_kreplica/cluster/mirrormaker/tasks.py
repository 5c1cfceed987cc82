"""Connect tasks that MirrorMaker 2 killed for good, read from its log.

When a Connect task throws what the runtime cannot retry, the worker logs "Task is being
killed and will not recover until manually restarted" and the task stays down while the
process runs on: no record of its partitions is mirrored again. A dedicated MirrorMaker 2 has
no REST endpoint to restart one task, so an operator restarts the process. The scenario needs
the task and its root cause to do that and to say so in the verdict (``scenarios.mirror``).
"""

from __future__ import annotations

import re
from pathlib import Path

KILLED = "will not recover until manually restarted"
_TASK = re.compile(r"\{id=([^}]+)\}")
_EXCEPTION = re.compile(
    r"^(?:Caused by: )?((?:[\w$]+\.)*([\w$]+(?:Exception|Error)))(?::\s*(.*))?$")
_MAX_TRACE_LINES = 400  # a Connect stack trace with its causes is far shorter


def killed_tasks(text: str) -> list[str]:
    """One line per task the log says was killed for good: ``task: RootCause: message``
    (the last ``Caused by`` of the trace that follows, else its first exception line)."""
    lines = text.splitlines()
    found: dict[str, str] = {}  # a sink task's death is logged twice; a task dies once
    for i, line in enumerate(lines):
        if KILLED not in line:
            continue
        task = _TASK.search(line)
        name = task.group(1) if task else "a task"
        root = _root_cause(lines[i + 1:i + 1 + _MAX_TRACE_LINES])
        found.setdefault(name, f"{name}: {root or 'no exception logged'}")
    return list(found.values())


def _root_cause(trace: list[str]) -> str | None:
    """The innermost exception of the stack trace at the start of ``trace``."""
    root = None
    for line in trace:
        stripped = line.strip()
        match = _EXCEPTION.match(stripped)
        if match:
            name, message = match.group(2), (match.group(3) or "").strip()
            root = f"{name}: {message[:200]}" if message else name
        elif stripped.startswith(("at ", "...")) or not stripped:
            continue
        else:  # the next log record: the trace has ended
            break
    return root


def killed_since(log_file: Path, offset: int) -> list[str]:
    """``killed_tasks`` of what the log holds past byte ``offset`` (the last start)."""
    try:
        with open(log_file, "rb") as f:
            f.seek(offset)
            return killed_tasks(f.read().decode(errors="replace"))
    except OSError:
        return []
