"""The Kafka distribution: Java and Maven, the jars of a version resolved into the cache, the
per-version prepared artefacts and server.properties."""
