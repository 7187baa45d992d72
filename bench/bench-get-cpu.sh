#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Server CPU per GET (user + system time from /proc/PID/stat) for values of SIZE bytes, two
# servers side by side in alternating rounds: A and B are command lines with {port}. Loads 1000
# keys, then times redis-benchmark -t get -n N -c 50 -P P against each. Prints every round and
# the medians in microseconds of server CPU per request.
# Usage: bench/bench-get-cpu.sh SIZE P "A command" "B command" [ROUNDS] [N]
# Example (the reply copy threshold, docs/benchmarks.md):
#   bench/bench-get-cpu.sh 4096 1 "build/bin/crescent-master --port {port} --metrics_port 0" \
#       "redis-server --port {port} --save '' --appendonly no"
set -eu
SIZE=$1 P=$2 A=$3 B=$4 ROUNDS=${5:-5} N=${6:-200000}
. "$(dirname "$0")/../tests/lib/ports.sh"
tick=$(getconf CLK_TCK)
run() { # run CMD -> us of server CPU per GET
    local port pid t0 t1
    port=$(free_port)
    eval "exec ${1//\{port\}/$port}" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
    redis-benchmark -p "$port" -t set -n 20000 -d "$SIZE" -r 1000 -q >/dev/null
    t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    redis-benchmark -p "$port" -t get -n "$N" -d "$SIZE" -r 1000 -c 50 -P "$P" -q >/dev/null
    t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    echo "$t0 $t1" | awk -v tick="$tick" -v n="$N" '{printf "%.2f", ($2 - $1) / tick * 1e6 / n}'
}
: >/tmp/bench-get-cpu.$$
for r in $(seq "$ROUNDS"); do
    a=$(run "$A")
    b=$(run "$B")
    echo "round $r: A $a us  B $b us" | tee -a /tmp/bench-get-cpu.$$
done
med() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ma=$(awk '{print $4}' /tmp/bench-get-cpu.$$ | med)
mb=$(awk '{print $7}' /tmp/bench-get-cpu.$$ | med)
echo "median server CPU per GET ($SIZE B, P $P): A $ma us  B $mb us  A/B $(echo "$ma $mb" | awk '{printf "%.2f", $1 / $2}')"
rm -f /tmp/bench-get-cpu.$$
