"""The ``external`` backend: a Kafka(-compatible) cluster the user started (``cluster``), its
YAML, the ApiVersions check, and Tansu run on loopback."""
