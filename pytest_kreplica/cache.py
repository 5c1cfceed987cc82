"""Where the suite keeps what it downloads or builds between runs (Kafka jars, Maven's local
repository, class-data archives, Docker build contexts, Spark's archive and logs): one root
for every part, ``$KREPLICA_CACHE`` or ``~/.cache/kreplica``."""

from __future__ import annotations

import os
from pathlib import Path

ENV_CACHE = "KREPLICA_CACHE"


def cache_dir() -> Path:
    """The cache root: ``$KREPLICA_CACHE`` or ``~/.cache/kreplica``."""
    root = os.environ.get(ENV_CACHE)
    return Path(root).expanduser() if root else Path.home() / ".cache" / "kreplica"
