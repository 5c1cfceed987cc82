"""pytest plugin entry point (registered under ``pytest11``). Hooks and options only;
heavy modules are imported lazily inside hooks and fixtures."""

from __future__ import annotations
