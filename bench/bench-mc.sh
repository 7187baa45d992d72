#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmarks the distributed store's metadata path: pipelined MC.GETREPLICAS of one object on
# crescent-master (after MC.REGISTER, MC.MOUNT of a fake segment and MC.PUTSTART/MC.PUTEND of
# the key) against redis-server's pipelined GET of a 64-byte value, with redis-benchmark,
# alternating rounds, medians of requests/s and server CPU per request; then the same with
# bench/bench_mc_load, a light client that does not build reply objects. Then the metadata memory per object: N objects of
# 64 bytes with one replica and 10-byte keys loaded with redis-cli --pipe, MC.STATS meta_bytes
# and INFO used_memory growth per object, against redis-server's used_memory growth per
# 64-byte key with the same names.
#
#   bench/bench-mc.sh            (make bench-mc)
#
# Environment (all optional):
#   CRESCENT_BUILD  build dir holding bin/crescent-master (default: build)
#   BENCH_ROUNDS    rounds, each running both servers (5)     BENCH_REQUESTS  per run (2000000)
#   BENCH_PIPELINE  redis-benchmark -P (16)                   BENCH_CLIENTS   -c (50)
#   BENCH_THREADS   crescent event-loop threads (2)           BENCH_KEYS      memory test (1000000)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${CRESCENT_BUILD:-build}
ROUNDS=${BENCH_ROUNDS:-5}
REQS=${BENCH_REQUESTS:-2000000}
PIPE=${BENCH_PIPELINE:-16}
CLIENTS=${BENCH_CLIENTS:-50}
THREADS=${BENCH_THREADS:-2}
NKEYS=${BENCH_KEYS:-1000000}
CID=0123456789abcdef0123456789abcdef

for tool in redis-benchmark redis-cli redis-server python3; do
    command -v "$tool" >/dev/null || { echo "bench-mc: $tool not found" >&2; exit 1; }
done
[ -x "$BUILD/bin/crescent-master" ] || { echo "bench-mc: $BUILD/bin/crescent-master missing" >&2; exit 1; }

. bench/lib.sh
bench_setup bench-mc

# start NAME CMD... -> sets PORT and PID (the pid also goes to PIDS)
start() {
    local name=$1
    shift
    PORT=$(free_port)
    "$@" --port "$PORT" >"$TMP/$name.log" 2>&1 &
    PID=$!
    PIDS+=($PID)
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ] && return
        sleep 0.1
    done
    echo "bench-mc: $name did not start" >&2
    tail "$TMP/$name.log" >&2
    exit 1
}

# A long client TTL: the fake client does not ping while the benchmark runs.
start crescent "$BUILD/bin/crescent-master" --threads "$THREADS" --memory 64mb --metrics_port 0 \
    --embedded_segment_in_pool no \
    --bind 127.0.0.1 --client_live_ttl_sec 86400
cport=$PORT
cpid=$PID
start redis redis-server --save '' --appendonly no --bind 127.0.0.1
rport=$PORT
rpid=$PID
cli() { redis-cli -p "$1" "${@:2}"; }

cli "$cport" MC.REGISTER $CID bench-host >/dev/null
cli "$cport" MC.MOUNT $CID seg0 0x100000000 1073741824 >/dev/null
cli "$cport" MC.PUTSTART $CID key 64 >/dev/null
[ "$(cli "$cport" MC.PUTEND $CID key)" = OK ] || { echo "bench-mc: put failed" >&2; exit 1; }
cli "$rport" SET key "$(printf 'v%.0s' $(seq 64))" >/dev/null

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# rps PID PORT OUT command... -> appends requests/s to OUT and server CPU s per 1M requests to OUT.cpu
rps() {
    local t0 t1 hz
    hz=$(getconf CLK_TCK)
    t0=$(cpu_ticks "$1")
    redis-benchmark -p "$2" -P "$PIPE" -c "$CLIENTS" -n "$REQS" -q "${@:4}" 2>/dev/null |
        tr '\r' '\n' | awk '/requests per second/ { for (i = 2; i <= NF; i++) if ($i == "requests") v = $(i-1) } END { print v }' >>"$3"
    t1=$(cpu_ticks "$1")
    awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$REQS" 'BEGIN { printf "%.3f\n", d / hz / n * 1e6 }' >>"$3.cpu"
}
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2 }'; }

echo "pipelined reads: redis-benchmark -P $PIPE -c $CLIENTS -n $REQS, $ROUNDS alternating rounds," \
    "crescent-master --threads $THREADS" >&2
: >"$TMP/c" && : >"$TMP/r" && : >"$TMP/c.cpu" && : >"$TMP/r.cpu"
for i in $(seq "$ROUNDS"); do
    if [ $((i % 2)) -eq 1 ]; then
        rps "$cpid" "$cport" "$TMP/c" MC.GETREPLICAS key
        rps "$rpid" "$rport" "$TMP/r" GET key
    else
        rps "$rpid" "$rport" "$TMP/r" GET key
        rps "$cpid" "$cport" "$TMP/c" MC.GETREPLICAS key
    fi
    echo "  round $i: MC.GETREPLICAS $(tail -1 "$TMP/c")/s ($(tail -1 "$TMP/c.cpu") CPU s/M)," \
        "redis GET $(tail -1 "$TMP/r")/s ($(tail -1 "$TMP/r.cpu") CPU s/M)" >&2
done
c=$(median <"$TMP/c")
r=$(median <"$TMP/r")
cc=$(median <"$TMP/c.cpu")
rc=$(median <"$TMP/r.cpu")
printf '%-40s %14s req/s %8s server CPU s per 1M\n' "median MC.GETREPLICAS (crescent)" "$c" "$cc"
printf '%-40s %14s req/s %8s server CPU s per 1M\n' "median GET 64 B (redis-server)" "$r" "$rc"
awk -v c="$c" -v r="$r" 'BEGIN { printf "%-40s %14.2f  (target >= 0.80)\n", "throughput ratio", c / r }'
awk -v c="$cc" -v r="$rc" 'BEGIN { printf "%-40s %14.2f  (redis CPU / crescent CPU per request)\n", "server CPU ratio", r / c }'

# ---- the same with a light client ---------------------------------------------------------
# bench_mc_load finds where each reply ends without building reply objects, so the shape of
# the MC.GETREPLICAS reply costs the client little and the servers' own rates show.
LOAD=$BUILD/bench/bench_mc_load
if [ -x "$LOAD" ]; then
    echo "light client: $LOAD PORT $CLIENTS $PIPE $REQS ..., $ROUNDS alternating rounds" >&2
    : >"$TMP/lc" && : >"$TMP/lr"
    light() { # port out command... ; fails on error replies
        local out
        out=$("$LOAD" "$1" "$CLIENTS" "$PIPE" "$REQS" "${@:3}")
        [ "${out#* }" = 0 ] || { echo "bench-mc: error replies: $out" >&2; exit 1; }
        echo "${out% *}" >>"$2"
    }
    for i in $(seq "$ROUNDS"); do
        if [ $((i % 2)) -eq 1 ]; then
            light "$cport" "$TMP/lc" MC.GETREPLICAS key
            light "$rport" "$TMP/lr" GET key
        else
            light "$rport" "$TMP/lr" GET key
            light "$cport" "$TMP/lc" MC.GETREPLICAS key
        fi
        echo "  round $i: MC.GETREPLICAS $(tail -1 "$TMP/lc")/s, redis GET $(tail -1 "$TMP/lr")/s" >&2
    done
    c=$(median <"$TMP/lc")
    r=$(median <"$TMP/lr")
    printf '%-40s %14s req/s\n' "light: median MC.GETREPLICAS" "$c"
    printf '%-40s %14s req/s\n' "light: median GET 64 B (redis-server)" "$r"
    awk -v c="$c" -v r="$r" 'BEGIN { printf "%-40s %14.2f  (target >= 0.80)\n", "light: throughput ratio", c / r }'
fi

# ---- metadata memory per object ----------------------------------------------------------
used_memory() { cli "$1" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'; }
stat_field() { cli "$cport" MC.STATS | awk -v f="$1" 'p { print; exit } $0 == f { p = 1 }'; }
python3 - "$NKEYS" "$CID" "$TMP" <<'PY'
import sys
n, cid, tmp = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def cmd(*a):
    return '*%d\r\n' % len(a) + ''.join('$%d\r\n%s\r\n' % (len(x), x) for x in a)
v = 'v' * 64
with open(tmp + '/mc.resp', 'w') as f, open(tmp + '/redis.resp', 'w') as g:
    for i in range(n):
        k = 'key:%06d' % i  # 10-byte names, as make bench-memory
        f.write(cmd('MC.PUTSTART', cid, k, '64') + cmd('MC.PUTEND', cid, k))
        g.write(cmd('SET', k, v))
PY
cli "$cport" MC.REMOVEALL FORCE >/dev/null
cb=$(used_memory "$cport")
rb=$(used_memory "$rport")
cli "$cport" --pipe <"$TMP/mc.resp" | tail -1 >&2
cli "$rport" --pipe <"$TMP/redis.resp" | tail -1 >&2
ca=$(used_memory "$cport")
ra=$(used_memory "$rport")
objs=$(stat_field objects)
meta=$(stat_field meta_bytes)
echo
echo "metadata memory: $objs objects of 64 B with one replica, 10-byte keys (redis-cli --pipe)"
awk -v m="$meta" -v o="$objs" 'BEGIN { printf "%-40s %14.1f B\n", "MC.STATS meta_bytes per object", m / o }'
awk -v a="$ca" -v b="$cb" -v o="$objs" 'BEGIN { printf "%-40s %14.1f B\n", "crescent used_memory growth per object", (a - b) / o }'
awk -v a="$ra" -v b="$rb" -v o="$NKEYS" 'BEGIN { printf "%-40s %14.1f B\n", "redis used_memory growth per 64 B key", (a - b) / o }'
