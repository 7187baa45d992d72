#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package Crescent builds, tests or benchmarks with (strace and valgrind:
# make bench counts system calls and instructions per request).
# Idempotent: packages already present are skipped; apt runs only when needed.
set -euo pipefail

PKGS=(
    build-essential pkg-config clang clang-format libclang-rt-14-dev
    libhiredis-dev libfabric-dev libfabric-bin libibverbs-dev rdma-core
    liburing-dev libjemalloc-dev libcurl4-openssl-dev libjansson-dev libyaml-dev
    libcriterion-dev openssl libmicrohttpd-dev
    redis-server redis-tools etcd-server etcd-client python3 python3-redis iperf3
    python3-pytest python3-numpy python3-yaml
    procps iproute2 curl prometheus man-db
    strace valgrind
    fio
) # EOL

missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
# Debian starts the packaged daemons; our tests start their own on free ports.
for svc in redis-server etcd prometheus prometheus-node-exporter; do
    if command -v systemctl >/dev/null 2>&1; then
        $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
    fi
done
