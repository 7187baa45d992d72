#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SET throughput into the single-process master with the SSD tier (docs/storage.md, "Eviction
# writes"): A/B of two crescent-master binaries. Each round starts every binary afresh on an
# empty tier (--memory MB, io_uring, under /var/tmp) and runs
#   redis-benchmark -t set -d 4096 -r RANGE -n REQS -c CLIENTS
# with REQS = 4x --memory of 4 KiB values and RANGE = 10^9 (random keys from a range so large that
# nearly every SET makes a new key: the data set grows to 4x --memory and about three values in
# four are evicted to disk, while overwrites of offloaded keys, whose disk removal is synchronous,
# stay rare; RANGE=REQS measures with them); rounds alternate which binary goes first; prints the medians of ops/s and p99 and every round, with each run's INFO figures
# (keys on disk, synchronous / queued eviction writes). For before/after checks, e.g.
#   bench/bench-offload-set.sh /tmp/master-before build/bin/crescent-master
# Environment: ROUNDS (3), MB (32), CLIENTS (16), REQS, RANGE, A_ENV / B_ENV ("VAR=value ..." added to
# that binary's environment, e.g. B_ENV=CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES=0). Never a test.
set -euo pipefail
A=$(realpath "$1") B=$(realpath "$2")
ROUNDS=${ROUNDS:-3} MB=${MB:-32} CLIENTS=${CLIENTS:-16}
VAL=4096
KEYS=$((MB * 4 * 1024 * 1024 / VAL))
REQS=${REQS:-$KEYS}
RANGE=${RANGE:-1000000000}
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_setup bench-offload-set
DIR=/var/tmp/crescent-bench-oset.$$
mkdir -p "$DIR"
trap 'bench_cleanup; rm -rf "$DIR"' EXIT
export MOONCAKE_OFFLOAD_USE_URING=true MOONCAKE_OFFLOAD_LOCAL_BUFFER_SIZE_BYTES=268435456
cli() { redis-cli -h 127.0.0.1 -p "$@"; }
# info PORT FIELD: one INFO field, "-" when the binary has no such field.
info() {
    local v
    v=$(cli "$1" INFO everything | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }')
    echo "${v:--}"
}

# one BINARY ENV: a fresh master on an empty tier, one redis-benchmark SET run; prints
# "ops/s p99_ms offloaded_keys sync_writes queued_writes write_failures".
one() {
    local port pid res t
    t=$(mktemp -d "$DIR/t.XXXXXX")
    port=$(free_port)
    env $2 "$1" --port "$port" --bind 127.0.0.1 --metrics_port 0 --memory "${MB}mb" \
        --enable_offload --ssd_offload_path "$t" >"$t.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 100); do cli "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
    res=$(redis-benchmark -h 127.0.0.1 -p "$port" -t set -d "$VAL" -r "$RANGE" -n "$REQS" \
        -c "$CLIENTS" --csv 2>/dev/null | awk -F'"' '$2 == "SET" { print $4, $14 }')
    echo "$res $(info "$port" offloaded_keys) $(info "$port" offload_sync_writes)" \
        "$(info "$port" offload_queued_writes) $(info "$port" offload_write_failures)"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    rm -rf "$t" "$t.log"
}

echo "$REQS SETs of $VAL B ($((REQS * VAL / 1048576)) MiB), keys from $RANGE, into --memory" \
    "${MB}mb, -c $CLIENTS; load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -a ao ap bo bp
for r in $(seq "$ROUNDS"); do
    for who in $( ((r % 2)) && echo "a b" || echo "b a"); do
        if [ "$who" = a ]; then
            read -r o p k s q f < <(one "$A" "${A_ENV:-}")
            ao+=("$o") ap+=("$p")
        else
            read -r o p k s q f < <(one "$B" "${B_ENV:-}")
            bo+=("$o") bp+=("$p")
        fi
        echo "round $r $who: $o ops/s, p99 $p ms; on disk $k, sync writes $s," \
            "queued $q, failures $f"
    done
done
med() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
echo "A $A: SET ops/s median $(med "${ao[@]}"), p99 median $(med "${ap[@]}") ms [${ao[*]} | ${ap[*]}]"
echo "B $B: SET ops/s median $(med "${bo[@]}"), p99 median $(med "${bp[@]}") ms [${bo[*]} | ${bp[*]}]"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
