"""The local Spark driver's memory, read from the environment.

Below both ``spark.py`` (which sizes the driver it starts with it) and ``connect.py`` (which
keys the shared server on it), so neither imports the other for it.
"""

from __future__ import annotations

import os

ENV_DRIVER_MEMORY = "KREPLICA_SPARK_DRIVER_MEMORY"
DEFAULT_DRIVER_MEMORY = "2g"


def driver_memory() -> str:
    return os.environ.get(ENV_DRIVER_MEMORY) or DEFAULT_DRIVER_MEMORY
