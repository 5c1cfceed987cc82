"""Per-case verdict.json and report.html, and the index.html of a whole run.

matplotlib and pyarrow load on first use of the report functions, never at plugin import."""

from __future__ import annotations

from typing import Any

from .verdict import VERDICT_FILE, build_verdict, read_verdict, write_verdict

__all__ = ["VERDICT_FILE", "build_verdict", "read_verdict", "write_verdict", "write_report",
           "write_index"]


def write_report(run_dir: Any) -> Any:
    """Render report.html into ``run_dir`` (see ``report.html``)."""
    from .html import write_report as _write

    return _write(run_dir)


def write_index(root: Any) -> Any:
    """Write index.html into ``root`` linking every case below it."""
    from .html import write_index as _write

    return _write(root)
