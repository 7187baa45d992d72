#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The single-process master with the SSD tier (docs/storage.md), run by make bench-storage:
# redis-benchmark GET over a data set four times --memory (4 KiB values, uniform random keys,
# so about 4 reads in 5 come from the tier) beside the same data set on a master whose memory
# holds all of it. Both masters are loaded once with redis-cli --pipe and warmed up; rounds
# alternate which one is measured first; the rows show medians of ops/s and of p99 latency, and
# the share of GETs the tier served (INFO offload_reads / keyspace_hits over the runs).
#
#   bench/bench-offload.sh BUILD DIR      (DIR: a directory on the disk under test)
#
# Environment: BENCH_ROUNDS (3), BENCH_OFFLOAD_MB (--memory of the offloading master, 32),
# BENCH_OFFLOAD_REQUESTS (GETs per run, 50000), BENCH_CLIENTS (redis-benchmark -c, 16),
# BENCH_THREADS (--threads of both masters; unset: the master's default),
# MOONCAKE_OFFLOAD_* as for the tier (bench-storage.sh sets io_uring and 256 MiB of staging).
set -euo pipefail
BUILD=${1:-$(pwd)/build}
DIR=${2:-/var/tmp/crescent-bench-offload.$$}
ROUNDS=${BENCH_ROUNDS:-3}
MB=${BENCH_OFFLOAD_MB:-32}
REQS=${BENCH_OFFLOAD_REQUESTS:-50000}
CLIENTS=${BENCH_CLIENTS:-16}
VAL=4096
KEYS=$((MB * 4 * 1024 * 1024 / VAL))
MASTER=$BUILD/bin/crescent-master

for tool in redis-benchmark redis-cli python3; do
    command -v "$tool" >/dev/null || { echo "bench-offload: $tool not found" >&2; exit 1; }
done
[ -x "$MASTER" ] || { echo "bench-offload: $MASTER not built" >&2; exit 1; }
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup bench-offload
mkdir -p "$DIR/offload"
trap 'bench_cleanup; rm -rf "$DIR/offload"' EXIT

cli() { redis-cli -h 127.0.0.1 -p "$@"; }
info() { cli "$1" INFO everything | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'; }

# start NAME ARGS... -> PORT_<NAME>
start() {
    local name=$1 port
    shift
    port=$(free_port)
    "$MASTER" --port "$port" --bind 127.0.0.1 --metrics_port 0 \
        ${BENCH_THREADS:+--threads "$BENCH_THREADS"} "$@" >"$TMP/$name.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do cli "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
    printf -v "PORT_$name" '%s' "$port"
}

# get PORT N: one redis-benchmark GET run; prints "ops/s p99_ms".
get() {
    redis-benchmark -h 127.0.0.1 -p "$1" -t get -n "$2" -r "$KEYS" -c "$CLIENTS" --csv 2>/dev/null |
        awk -F'"' '$2 == "GET" { print $4, $14 }'
}

start off --memory "${MB}mb" --enable_offload --ssd_offload_path "$DIR/offload"
start mem --memory "$((MB * 6))mb"
bench_load_strings "$PORT_off" "$KEYS" "$VAL"
bench_load_strings "$PORT_mem" "$KEYS" "$VAL"
for p in "$PORT_off" "$PORT_mem"; do
    [ "$(cli "$p" DBSIZE)" = "$KEYS" ] || { echo "bench-offload: load failed" >&2; exit 1; }
done
echo "bench-offload: $KEYS keys of $VAL B ($((KEYS * VAL / 1048576)) MiB), --memory ${MB}mb" \
    "with the tier ($(info "$PORT_off" offload_io), $(info "$PORT_off" offloaded_keys) keys on" \
    "disk after the load) vs --memory $((MB * 6))mb"
get "$PORT_off" $((REQS / 4)) >/dev/null
get "$PORT_mem" $((REQS / 4)) >/dev/null

declare -a oo op mo mp
r0=$(info "$PORT_off" offload_reads)
h0=$(info "$PORT_off" keyspace_hits)
for r in $(seq 1 "$ROUNDS"); do
    for who in $( ((r % 2)) && echo "off mem" || echo "mem off"); do
        if [ "$who" = off ]; then
            read -r ops p99 < <(get "$PORT_off" "$REQS")
            oo+=("$ops") op+=("$p99")
        else
            read -r ops p99 < <(get "$PORT_mem" "$REQS")
            mo+=("$ops") mp+=("$p99")
        fi
    done
done
share=$(awk -v r=$(($(info "$PORT_off" offload_reads) - r0)) \
    -v h=$(($(info "$PORT_off" keyspace_hits) - h0)) 'BEGIN { printf "%.0f", h ? 100 * r / h : 0 }')
[ "$(info "$PORT_off" offload_read_failures)" = 0 ] || echo "bench-offload: read failures!" >&2

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
m() { printf '%s\n' "$@" | median; }
printf '%-44s %12s %12s %7s\n' "redis-benchmark GET, 4x --memory ($share % SSD)" "with tier" \
    "all in mem" ratio
printf '%-44s %12.0f %12.0f %7s\n' "  ops/s, -c $CLIENTS, 4 KiB values" "$(m "${oo[@]}")" \
    "$(m "${mo[@]}")" "$(awk -v a="$(m "${oo[@]}")" -v b="$(m "${mo[@]}")" \
        'BEGIN {printf "%.2f", a / b}')"
printf '%-44s %12.3f %12.3f\n' "  p99 latency (ms)" "$(m "${op[@]}")" "$(m "${mp[@]}")"
echo "rounds: tier ops/s ${oo[*]} p99 ${op[*]} | in memory ops/s ${mo[*]} p99 ${mp[*]}"
