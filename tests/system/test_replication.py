"""The packaged plan's replication scenario (pytest_kreplica/plan/test_replication.py), run
from the checkout: ``pytest tests/system -m "smoke and compression_gzip" -n 2``."""

from pytest_kreplica.plan.test_replication import test_replication  # noqa: F401
