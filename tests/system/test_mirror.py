"""The packaged plan's MirrorMaker 2 scenario (pytest_kreplica/plan/test_mirror.py), run from
the checkout: ``pytest tests/system -m "mirror_maker_failure and failure_hard"``."""

from pytest_kreplica.plan.test_mirror import test_mirror_maker_failure  # noqa: F401
