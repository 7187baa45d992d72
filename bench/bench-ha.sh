#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Put throughput of crescent-master with and without HA + the Redis op-log (bench_ha_put.py).
#   bench/bench-ha.sh [ROUNDS] [PUTS] [CLIENTS] [BATCH]      (make bench-ha)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/bench_ha_put.py "$@"
