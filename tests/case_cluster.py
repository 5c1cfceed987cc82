"""A started cluster of the shape a case asks for (``cluster_spec``), closed afterwards:
what the integration tests that run whole cases share as their module fixture."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def started_cluster(case: Any, workdir: Path, timeout: float = 180) -> Iterator[Any]:
    from pytest_kreplica.cluster import create_cluster
    from pytest_kreplica.cluster.pool import cluster_spec

    cluster = create_cluster(cluster_spec(case), workdir)
    cluster.start(timeout=timeout)
    try:
        yield cluster
    finally:
        cluster.close()
