#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Python get_into against the C client: zero-copy reads of 1 MiB objects (one thread, 64 keys,
# tcp from a `crescent-bench store --operation serve` peer on this host) by
# bench/bench_python_get_into.py (crescent.Store over ctypes) and by
# `crescent-bench store --operation get` (C), alternating rounds (and which side goes first)
# against one master and peer; prints both medians and the ratios Python / C of throughput and
# of per-call p50 latency (C's p50 over Python's, so that above 1 means Python is faster) —
# target >= 0.9, docs/python.md.
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

c_runs=() py_runs=() c_p50=() py_p50=()
run_c() {
    "$BUILD/bin/crescent-bench" store --master "$master" --operation get --protocol "$PROTO" \
        --object_size "$SIZE" --keys 64 --threads 1 --duration "$DUR" --json | tail -1
}
run_py() {
    /usr/bin/python3 bench/bench_python_get_into.py --master "$master" --protocol "$PROTO" \
        --object_size "$SIZE" --keys 64 --duration "$DUR"
}
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
for r in $(seq "$ROUNDS"); do
    # Alternate which side runs first, so that a drift in the machine's load hits both alike.
    if [ $((r % 2)) -eq 1 ]; then c=$(run_c); p=$(run_py); else p=$(run_py); c=$(run_c); fi
    c_runs+=("$(field "$c" get_GBps)") py_runs+=("$(field "$p" get_GBps)")
    c_p50+=("$(field "$c" get_p50_us)") py_p50+=("$(field "$p" get_p50_us)")
    printf 'round %d: C %.3f GB/s p50 %.0f us, Python %.3f GB/s p50 %.0f us\n' "$r" \
        "${c_runs[-1]}" "${c_p50[-1]}" "${py_runs[-1]}" "${py_p50[-1]}"
done
python3 - "${c_runs[*]}" "${py_runs[*]}" "${c_p50[*]}" "${py_p50[*]}" "$SIZE" "$PROTO" <<'PY'
import statistics, sys
med = [statistics.median(map(float, a.split())) for a in sys.argv[1:5]]
c, p, c50, p50 = med
print("get_into of %d-byte objects over %s, medians of %d rounds: C %.3f GB/s (p50 %.0f us), "
      "Python %.3f GB/s (p50 %.0f us); ratio Python/C: throughput %.3f, per-call p50 %.3f"
      % (int(sys.argv[5]), sys.argv[6], len(sys.argv[1].split()), c, c50, p, p50, p / c,
         c50 / p50))
PY
