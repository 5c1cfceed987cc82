#!/bin/sh
# Runs as PID 1 of a kreplica MirrorMaker 2 container: becomes the dedicated MirrorMaker 2
# JVM (exec, so docker stop / kill signal the JVM itself). Its output goes to the log in the
# bind-mounted run directory; each start appends after a banner.
set -eu
exec >>/kreplica/mirror-maker.log 2>&1
echo "=== kreplica: starting MirrorMaker 2 at $(date -u +%H:%M:%S) in container $(hostname) ==="
# shellcheck disable=SC2086
exec java ${KREPLICA_JVM_OPTS:-} -cp "${KREPLICA_MIRROR_LIBS:-/opt/kafka/mirror-libs}/*" \
    org.apache.kafka.connect.mirror.MirrorMaker /kreplica/mm2.properties
