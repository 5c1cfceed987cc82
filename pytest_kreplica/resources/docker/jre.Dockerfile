# A headless JRE 17 from Debian's packages, on a Debian base that may itself be built
# locally (debootstrap + docker import) when no registry is reachable. iptables is here
# for network partitions (rules inside the container, which runs with NET_ADMIN).
ARG BASE
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        openjdk-17-jre-headless iptables \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
