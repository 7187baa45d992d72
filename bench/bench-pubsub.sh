#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# PUBLISH fan-out: crescent-master against redis-server in the same run. For each server,
# BENCH_SUBS subscribers (100) on one channel are held by a draining reader process, then
# redis-benchmark sends PUBLISH to that channel (each one delivered BENCH_SUBS times); the
# servers alternate for BENCH_ROUNDS rounds and the medians of PUBLISH/s are compared.
# crescent runs twice per round, on its default network backend (io_uring where the kernel
# allows it) and with --io-backend epoll. Prints one line per round and the ratios to redis at
# the end (target >= 0.8), with the server CPU time per PUBLISH (all threads, /proc/<pid>/stat),
# which the load of a shared machine disturbs less than the rate.
#
#   bench/bench-pubsub.sh          (make bench-pubsub)
#
# Environment (all optional): CRESCENT_BUILD (build), BENCH_ROUNDS (3), BENCH_SUBS (100),
# BENCH_N publishes per run (100000), BENCH_CLIENTS redis-benchmark -c (50), BENCH_PIPELINE
# redis-benchmark -P (1), BENCH_PAYLOAD bytes per message (32), BENCH_THREADS crescent
# --threads (the server's own default when unset), BENCH_A_ARGS extra crescent flags.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${CRESCENT_BUILD:-build}
ROUNDS=${BENCH_ROUNDS:-3}
SUBS=${BENCH_SUBS:-100}
N=${BENCH_N:-100000}
CLIENTS=${BENCH_CLIENTS:-50}
PIPELINE=${BENCH_PIPELINE:-1}
PAYLOAD=${BENCH_PAYLOAD:-32}
for tool in redis-benchmark redis-cli redis-server python3; do
    command -v "$tool" >/dev/null || { echo "bench-pubsub: $tool not found" >&2; exit 1; }
done
. bench/lib.sh
bench_setup bench-pubsub

# Starts server NAME (crescent, crescent-epoll or redis) on a free port; sets PORT and SPID.
start() {
    PORT=$(free_port)
    if [ "$1" != redis ]; then
        local extra=()
        [ "$1" = crescent-epoll ] && extra+=(--io-backend epoll)
        [ -n "${BENCH_THREADS:-}" ] && extra+=(--threads "$BENCH_THREADS")
        # shellcheck disable=SC2206
        [ -n "${BENCH_A_ARGS:-}" ] && extra+=($BENCH_A_ARGS)
        "$BUILD/bin/crescent-master" --bind 127.0.0.1 --port "$PORT" --memory 256mb \
            --metrics_port 0 "${extra[@]}" >"$TMP/$1.log" 2>&1 &
    else
        redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no \
            >"$TMP/redis.log" 2>&1 &
    fi
    SPID=$!
    PIDS+=("$SPID")
    for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && return; sleep 0.1; done
    echo "bench-pubsub: $1 did not start" >&2
    exit 1
}

# Subscribers: one process holding SUBS connections, reading everything as it arrives.
subscribers() {
    python3 - "$PORT" "$SUBS" <<'EOF' &
import selectors, socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
sel = selectors.DefaultSelector()
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$5\r\nbench\r\n")
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        if not key.fileobj.recv(1 << 20):
            sys.exit(0)
EOF
    SUBPID=$!
    PIDS+=("$SUBPID")
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$PORT" pubsub numsub bench | tail -1)" = "$SUBS" ] && return
        sleep 0.1
    done
    echo "bench-pubsub: subscribers did not connect" >&2
    exit 1
}

# Server CPU time (user + system, all threads) in clock ticks.
cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}

# One run against server $1: prints "PUBLISH/s server-CPU-microseconds-per-PUBLISH".
run() {
    start "$1"
    subscribers
    local msg rps t0 t1
    msg=$(head -c "$PAYLOAD" /dev/zero | tr '\0' x)
    t0=$(cpu_ticks "$SPID")
    rps=$(redis-benchmark -p "$PORT" -c "$CLIENTS" -n "$N" -P "$PIPELINE" -q \
        PUBLISH bench "$msg" 2>/dev/null | tr '\r' '\n' |
        awk '/requests per second/ {for (i = 1; i <= NF; i++) if ($i == "requests") print $(i-1)}' |
        tail -1)
    t1=$(cpu_ticks "$SPID")
    kill "$SUBPID" "$SPID" 2>/dev/null || true
    wait "$SUBPID" "$SPID" 2>/dev/null || true
    awk -v r="${rps:-0}" -v d="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v n="$N" \
        'BEGIN {printf "%.0f %.1f\n", r, d / hz * 1e6 / n}'
}

# Median of column $1 of the lines on stdin.
median() {
    awk -v k="$1" '{print $k}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

echo "PUBLISH to $SUBS subscribers, $PAYLOAD-byte messages, c=$CLIENTS P=$PIPELINE, n=$N," \
    "$ROUNDS rounds"
: >"$TMP/crescent.txt"
: >"$TMP/crescent-epoll.txt"
: >"$TMP/redis.txt"
for r in $(seq "$ROUNDS"); do
    line="round $r:"
    for srv in crescent crescent-epoll redis; do
        v=$(run "$srv")
        echo "$v" >>"$TMP/$srv.txt"
        line+="  $srv ${v% *}/s (${v#* } us CPU each)"
    done
    echo "$line"
done
mb=$(median 1 <"$TMP/redis.txt")
cb=$(median 2 <"$TMP/redis.txt")
for srv in crescent crescent-epoll; do
    ma=$(median 1 <"$TMP/$srv.txt")
    ca=$(median 2 <"$TMP/$srv.txt")
    awk -v n="$srv" -v a="$ma" -v b="$mb" -v ca="$ca" -v cb="$cb" 'BEGIN {
        printf "median %-15s %8.0f PUBLISH/s (redis %8.0f): ratio %.2f (target >= 0.80);", n, a, b, (b > 0 ? a / b : 0)
        printf " server CPU per PUBLISH %.1f us (redis %.1f us): ratio %.2f\n", ca, cb, (cb > 0 ? ca / cb : 0)
    }'
done
