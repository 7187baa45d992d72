#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Python get_into against the C client: zero-copy reads of 1 MiB objects (one thread, 64 keys,
# tcp from a `crescent-bench store --operation serve` peer on this host) by
# bench/bench_python_get_into.py (crescent.Store over ctypes) and by
# `crescent-bench store --operation get` (C), alternating rounds against one master and peer;
# prints both medians and the ratio Python / C (target >= 0.9, docs/python.md).
#
#   bench/bench-python.sh        (make bench-python)
#
# Environment (all optional): CRESCENT_BUILD (build), BENCH_ROUNDS (5), BENCH_DURATION
# (seconds per run, 3), BENCH_OBJECT_SIZE (bytes, 1048576), BENCH_PROTOCOL (tcp).
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${CRESCENT_BUILD:-build}
ROUNDS=${BENCH_ROUNDS:-5}
DUR=${BENCH_DURATION:-3}
SIZE=${BENCH_OBJECT_SIZE:-1048576}
PROTO=${BENCH_PROTOCOL:-tcp}
export CRESCENT_LIB=$BUILD/lib/libcrescent.so.0

. bench/lib.sh
bench_setup bench-python

port=$(free_port)
"$BUILD/bin/crescent-master" --port "$port" --bind 127.0.0.1 --metrics_port 0 --memory 16mb \
    >"$TMP/master.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do
    redis-cli -p "$port" PING 2>/dev/null | grep -q PONG && break
    sleep 0.05
done
master=127.0.0.1:$port
exec 3< <(exec "$BUILD/bin/crescent-bench" store --master "$master" --operation serve \
    --protocol "$PROTO" --segment_size 512m --duration 3600 2>&1)
PIDS+=($!)
read -r -t 60 -u 3 _ || { echo "bench-python: serve peer did not start" >&2; exit 1; }

c_runs=() py_runs=()
for r in $(seq "$ROUNDS"); do
    c=$("$BUILD/bin/crescent-bench" store --master "$master" --operation get --protocol "$PROTO" \
        --object_size "$SIZE" --keys 64 --threads 1 --duration "$DUR" --json | tail -1)
    p=$(/usr/bin/python3 bench/bench_python_get_into.py --master "$master" --protocol "$PROTO" \
        --object_size "$SIZE" --keys 64 --duration "$DUR")
    cg=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["get_GBps"])' "$c")
    pg=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["get_GBps"])' "$p")
    c_runs+=("$cg") py_runs+=("$pg")
    lat=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("p50 %.0f us, p99 %.0f us"
    % (d["get_p50_us"], d["get_p99_us"]))' "$p")
    printf 'round %d: C %.3f GB/s, Python %.3f GB/s (Python %s)\n' "$r" "$cg" "$pg" "$lat"
done
python3 - "${c_runs[*]}" "${py_runs[*]}" "$SIZE" "$PROTO" <<'PY'
import statistics, sys
c = statistics.median(map(float, sys.argv[1].split()))
p = statistics.median(map(float, sys.argv[2].split()))
print("get_into of %d-byte objects over %s, medians: C %.3f GB/s, Python %.3f GB/s, ratio %.3f"
      % (int(sys.argv[3]), sys.argv[4], c, p, p / c))
PY
