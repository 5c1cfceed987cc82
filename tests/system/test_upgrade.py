"""The packaged plan's version-compatibility scenario (pytest_kreplica/plan/test_upgrade.py),
run from the checkout: ``pytest tests/system -m "version_compat and ci"``."""

from pytest_kreplica.plan.test_upgrade import test_version_compat  # noqa: F401
