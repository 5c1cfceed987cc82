"""How hard the local Spark driver's JIT compiles: ``quick`` (C1 only) or ``full`` (C1 then C2).

A pytest worker's Spark JVM checks a handful of small histories and then exits, so it never
gets warm: measured with per-thread CPU of the driver JVM, the JIT compiler threads took
1.07 s of the 2.0 s of CPU a warm check of a small history used, against 0.13 s for the
executor's tasks. C1 alone compiles far less. In the smoke matrix (``-n 2``, two rounds
alternating) it brought the checker phase from 3.99 / 4.05 s to 2.56 / 2.41 s and the
per-case overhead from 4.99 / 5.16 s to 3.14 / 3.25 s; a one-off check of 1M + 1M took
the same time either way (31.0 / 25.3 s against 29.8 / 28.0 s). At 10M + 10M C2's code
matters: 177 s with C1 alone against 87 s. So the plugin, whose histories are one case's,
asks for ``quick``; ``kreplica check`` and ``verify-logs`` ask for it when their input is
small (``spark.one_off_jit``: under ``SMALL_INPUT_BYTES``), and keep ``full`` otherwise. A
one-off command over a small input, ``quick`` against ``full`` alternating (medians of 3,
same output): ``check`` of the ``lost`` fixture 15.5 -> 12.8 s, of a planted transactional
history with anomalies 24.8 -> 17.8 s, ``verify-logs`` of a transactional case's snapshot
14.5 -> 12.3 s. Env ``KREPLICA_SPARK_JIT`` overrides all of them. Only a local driver JVM
is affected: a Connect server or a cluster is long-lived and keeps its own settings.

C1 alone also shrinks the JVM's default code cache from 240 MB to 48 MB, which a worker's
driver that lives for a whole test run (hundreds of checks, each with its own generated
classes) fills: "CodeCache is full", then "Out of space in CodeCache for adapters" stops
the SparkContext and every later check of that worker fails. ``quick`` keeps the full
cache size (``CODE_CACHE``); C1 code is small, so this costs address space, not memory.
"""

from __future__ import annotations

import os

from ...errors import InputError

ENV_JIT = "KREPLICA_SPARK_JIT"
CODE_CACHE = "-XX:ReservedCodeCacheSize=240m"
OPTIONS = {"quick": f"-XX:TieredStopAtLevel=1 {CODE_CACHE}", "full": ""}
_preferred = "full"


def prefer(mode: str) -> str:
    """Set this process's default (the plugin asks for ``quick``; the env still wins) and
    return the one it replaces."""
    global _preferred
    if mode not in OPTIONS:
        raise ValueError(f"JIT mode {mode!r}; allowed: {', '.join(OPTIONS)}")
    before, _preferred = _preferred, mode
    return before


def mode() -> str:
    """Env ``KREPLICA_SPARK_JIT`` > this process's preference; a bad env value is one line."""
    chosen = os.environ.get(ENV_JIT) or _preferred
    if chosen not in OPTIONS:
        raise InputError(f"env {ENV_JIT}: {chosen!r} is not a JIT mode (allowed: "
                         f"{', '.join(OPTIONS)})")
    return chosen


def java_option() -> str:
    """The driver JVM's option for the chosen mode ('' for ``full``)."""
    return OPTIONS[mode()]
