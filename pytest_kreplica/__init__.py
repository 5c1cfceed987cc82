"""pytest-kreplica: Kafka replication system tests as a pytest matrix.

Kept import-light on purpose: the pytest plugin imports this package at every
pytest start, so nothing heavy (pyspark, kafka, docker) is imported here.
"""

__version__ = "0.1.0"
