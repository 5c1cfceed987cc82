#!/bin/sh
# Runs as PID 1 of a kreplica broker container: format the node's log dir the first time,
# then become the broker (exec, so docker stop / kill signal the JVM itself).
# Works on the kreplica/kafka image and on the official apache/kafka image alike.
set -eu
exec >>/kreplica/server.log 2>&1
echo "node.sh: $(date -u +%FT%TZ) node ${KREPLICA_NODE_ID} starting"
if [ ! -f "${KREPLICA_LOG_DIR}/meta.properties" ]; then
    # shellcheck disable=SC2086
    java ${KREPLICA_TOOL_OPTS:-} -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format \
        -t "${KREPLICA_CLUSTER_ID}" -c /kreplica/server.properties --ignore-formatted
fi
# shellcheck disable=SC2086
exec java ${KREPLICA_JVM_OPTS:-} -cp '/opt/kafka/libs/*' kafka.Kafka /kreplica/server.properties
