#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Eviction-bound SET throughput, crescent-master vs redis-server (maxmemory-policy allkeys-lru),
# at two resident key counts (1 M and 10 M by default), then INFO memory before and after
# FLUSHALL. Each server gets the same memory limit, sized so about N keys of 64 B fit
# (BENCH_EVICT_BYTES_PER_KEY x N); it is filled with random new keys until it evicts, then every
# measured run SETs random new keys (a 10^9 keyspace), so every SET needs an eviction. Rounds
# rotate the server order; the table shows medians of ops/s and of server CPU seconds per
# million SETs (utime+stime from /proc/PID/stat), which is less sensitive to a busy machine.
#
#   bench/bench-evict.sh
#
# Environment (all optional):
#   CRESCENT_BUILD             build dir holding bin/crescent-master (default: build)
#   BENCH_EVICT_KEYS           resident key counts to compare, small first ("1000000 10000000")
#   BENCH_EVICT_BYTES_PER_KEY  memory limit per key (150)
#   BENCH_EVICT_REQUESTS       SETs per measured run (1000000)
#   BENCH_EVICT_PIPE           redis-benchmark -P of the measured runs (16)
#   BENCH_ROUNDS               rounds (3)            BENCH_THREADS   crescent --threads (2)
#   BENCH_CLIENTS              redis-benchmark -c (50)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${CRESCENT_BUILD:-build}
KEYSETS=${BENCH_EVICT_KEYS:-"1000000 10000000"}
BPK=${BENCH_EVICT_BYTES_PER_KEY:-150}
REQS=${BENCH_EVICT_REQUESTS:-1000000}
PIPE=${BENCH_EVICT_PIPE:-16}
ROUNDS=${BENCH_ROUNDS:-3}
THREADS=${BENCH_THREADS:-2}
CLIENTS=${BENCH_CLIENTS:-50}
KEYSPACE=1000000000

for tool in redis-benchmark redis-cli redis-server python3; do
    command -v "$tool" >/dev/null || { echo "bench-evict: $tool not found" >&2; exit 1; }
done
[ -x "$BUILD/bin/crescent-master" ] || { echo "bench-evict: $BUILD/bin/crescent-master not built" >&2; exit 1; }

. bench/lib.sh
bench_setup bench-evict


cli() { redis-cli -h 127.0.0.1 -p "$@"; }

info() { # PORT FIELD
    cli "$1" info | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'
}

# start NAME KIND MEMORY_BYTES -> PORT_<NAME>, PID_<NAME>
start() {
    local name=$1 kind=$2 mem=$3 port
    port=$(free_port)
    if [ "$kind" = crescent ]; then
        "$BUILD/bin/crescent-master" --port "$port" --memory "$mem" --threads "$THREADS" \
            >"$TMP/$name.log" 2>&1 &
    else
        redis-server --port "$port" --maxmemory "$mem" --maxmemory-policy allkeys-lru \
            --save '' --appendonly no >"$TMP/$name.log" 2>&1 &
    fi
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 100); do
        [ "$(cli "$port" ping 2>/dev/null)" = PONG ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [ "$(cli "$port" ping 2>/dev/null)" = PONG ] || {
        echo "bench-evict: $name did not start" >&2; tail -20 "$TMP/$name.log" >&2; exit 1; }
    printf -v "PORT_$name" '%s' "$port"
    printf -v "PID_$name" '%s' "$pid"
}

# Random-key SETs; prints ops/s. PORT N PIPE CLIENTS
sets() {
    redis-benchmark -h 127.0.0.1 -p "$1" -t set -d 64 -r "$KEYSPACE" -n "$2" -P "$3" -c "$4" \
        --csv 2>/dev/null | tr -d '"' | awk -F, '$1 == "SET" { print $2 }'
}

# CPU seconds (user+system, all threads) consumed so far by pid.
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}

SERVERS=()
t_start=$(date +%s)
for n in $KEYSETS; do
    mem=$((n * BPK))
    for kind in crescent redis; do
        name=${kind}_$n
        start "$name" "$kind" "$mem"
        port_var=PORT_$name
        # Fill: random new keys until the server has evicted, plus 10 % of N more.
        t0=$(date +%s.%N)
        sets "${!port_var}" $((n * 11 / 10)) 64 8 >/dev/null
        while [ "$(info "${!port_var}" evicted_keys)" = 0 ]; do
            sets "${!port_var}" $((n / 10)) 64 8 >/dev/null
        done
        t1=$(date +%s.%N)
        echo "bench-evict: $name filled to $(cli "${!port_var}" dbsize) keys in" \
            "$(python3 -c "print(round($t1 - $t0, 1))") s (memory limit $mem bytes)" >&2
        SERVERS+=("$name")
    done
done

RAW=$TMP/raw.tsv
: >"$RAW"
for round in $(seq "$ROUNDS"); do
    order=("${SERVERS[@]}")
    if [ $((round % 2)) -eq 0 ]; then
        order=()
        for ((i = ${#SERVERS[@]} - 1; i >= 0; i--)); do order+=("${SERVERS[$i]}"); done
    fi
    for name in "${order[@]}"; do
        port_var=PORT_$name
        pid_var=PID_$name
        e0=$(info "${!port_var}" evicted_keys)
        c0=$(cpu_seconds "${!pid_var}")
        rps=$(sets "${!port_var}" "$REQS" "$PIPE" "$CLIENTS")
        c1=$(cpu_seconds "${!pid_var}")
        kill -0 "${!pid_var}" 2>/dev/null || { echo "bench-evict: $name died" >&2; tail -20 "$TMP/$name.log" >&2; exit 1; }
        e1=$(info "${!port_var}" evicted_keys)
        keys=$(cli "${!port_var}" dbsize)
        [ -n "$rps" ] || { echo "bench-evict: no result for $name" >&2; exit 1; }
        cpu=$(python3 -c "print(($c1 - $c0) * 1e6 / $REQS)")
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$round" "$rps" "$((e1 - e0))" "$keys" "$cpu" >>"$RAW"
    done
    echo "bench-evict: round $round done" >&2
done

# INFO memory before and after FLUSHALL: how long FLUSHALL took, then RSS polled every 0.25 s
# for 5 s; the table shows the RSS at 5 s and how long after FLUSHALL returned it fell below
# half of the loaded RSS.
MEMRAW=$TMP/mem.tsv
: >"$MEMRAW"
for name in "${SERVERS[@]}"; do
    port_var=PORT_$name
    p=${!port_var}
    keys=$(cli "$p" dbsize)
    used=$(info "$p" used_memory)
    rss=$(info "$p" used_memory_rss)
    peak=$(info "$p" used_memory_peak)
    frag=$(info "$p" mem_fragmentation_ratio)
    t0=$(date +%s.%N)
    cli "$p" flushall >/dev/null
    t1=$(date +%s.%N)
    half=n/a
    for _ in $(seq 20); do
        sleep 0.25
        now=$(info "$p" used_memory_rss)
        if [ "$half" = n/a ] && [ "$now" -lt $((rss / 2)) ]; then
            half=$(python3 -c "print(round($(date +%s.%N) - $t1, 2))")
        fi
    done
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$keys" "$used" "$rss" "$peak" "$frag" \
        "$(info "$p" used_memory)" "$now" "$half" "$(python3 -c "print(round($t1 - $t0, 2))")" >>"$MEMRAW"
done

python3 - "$RAW" "$MEMRAW" "$KEYSETS" "$PIPE" "$CLIENTS" "$REQS" "$THREADS" "$BPK" "$(($(date +%s) - t_start))" <<'PY'
import sys, statistics
from collections import defaultdict
raw, memraw, keysets, pipe, clients, reqs, threads, bpk, secs = sys.argv[1:10]
keysets = keysets.split()
rps = defaultdict(list)
ev = defaultdict(list)
cpu = defaultdict(list)
keys = {}
for line in open(raw):
    name, rnd, r, e, k, c = line.split("\t")
    rps[name].append(float(r))
    cpu[name].append(float(c))
    ev[name].append(int(e))
    keys[name] = int(k)
med = {n: statistics.median(v) for n, v in rps.items()}
def mib(b):
    return f"{int(b) / 1048576:,.1f} MiB"
print(f"Eviction-bound SET: redis-benchmark -t set -d 64 -r 1e9 -P {pipe} -c {clients} "
      f"-n {int(reqs):,}, memory = {bpk} B x N, crescent --threads {threads}, "
      f"medians of {max(len(v) for v in rps.values())} rounds")
print()
hdr = (f"{'N (target)':>12} | {'server':<9} | {'keys held':>11} | {'ops/s':>10} | {'evicted/SET':>11} | "
       f"{'cpu s/Mreq':>10} | ops/s of each round")
print(hdr)
print("-" * len(hdr))
for n in keysets:
    for kind in ("crescent", "redis"):
        name = f"{kind}_{n}"
        per_set = statistics.median(ev[name]) / int(reqs)
        runs = " ".join(f"{r:,.0f}" for r in rps[name])
        print(f"{int(n):>12,} | {kind:<9} | {keys[name]:>11,} | {med[name]:>10,.0f} | "
              f"{per_set:>11.2f} | {statistics.median(cpu[name]):>10.2f} | {runs}")
print()
small, big = keysets[0], keysets[-1]
checks = []
for kind in ("crescent", "redis"):
    r = med[f"{kind}_{big}"] / med[f"{kind}_{small}"]
    c = statistics.median(cpu[f"{kind}_{big}"]) / statistics.median(cpu[f"{kind}_{small}"])
    line = f"{kind}: {int(big):,} keys / {int(small):,} keys = {r:.2f} ops/s, {c:.2f} cpu per SET"
    if kind == "crescent":
        ok = r >= 0.8
        checks.append(ok)
        line += f"   (target >= 0.80: {'PASS' if ok else 'FAIL'})"
    print(line)
for n in keysets:
    r = med[f"crescent_{n}"] / med[f"redis_{n}"]
    ok = r >= 1.0
    checks.append(ok)
    c = statistics.median(cpu[f"crescent_{n}"]) / statistics.median(cpu[f"redis_{n}"])
    print(f"crescent / redis at {int(n):,} keys = {r:.2f} ops/s, {c:.2f} cpu per SET"
          f"   (target >= 1.00 ops/s: {'PASS' if ok else 'FAIL'})")
print()
print("INFO memory with the keys loaded, then 5 s after FLUSHALL returned ('flush': seconds FLUSHALL")
print("took; '< half': seconds after it returned until RSS fell below half, polled every 0.25 s):")
print()
hdr = (f"{'server':<18} | {'keys':>11} | {'used_memory':>13} | {'rss':>13} | {'peak':>13} | "
       f"{'frag':>5} | {'flush':>7} | {'used after':>11} | {'rss after':>11} | {'< half':>7}")
print(hdr)
print("-" * len(hdr))
for line in open(memraw):
    name, k, used, rss, peak, frag, used2, rss2, t, fl = line.rstrip("\n").split("\t")
    print(f"{name:<18} | {int(k):>11,} | {mib(used):>13} | {mib(rss):>13} | {mib(peak):>13} | "
          f"{float(frag):>5.2f} | {fl + ' s':>7} | {mib(used2):>11} | {mib(rss2):>11} | {t + ' s' if t != 'n/a' else t:>7}")
print(f"\nbench-evict took {secs} s; {'all targets met' if all(checks) else 'some targets missed'}")
PY
