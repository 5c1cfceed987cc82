# A Kafka broker image from the same Maven Central jars the process backend runs.
# The container's command and configuration come from the docker backend (node.sh,
# server.properties, log config mounted at /kreplica), so this image holds only jars.
ARG JRE
FROM ${JRE}
ARG KAFKA_VERSION
COPY libs/ /opt/kafka/libs/
LABEL org.kreplica.kafka-version=${KAFKA_VERSION}
