#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Admin HTTP /metrics against a master holding KEYS keys (default 1,000,000): scrape time
# (median and max of SCRAPES curl scrapes) and the latency of concurrent RESP GETs
# (redis-benchmark -c 50 P1, max and p99) with and without a scrape loop running beside them.
# Usage: bench/bench-metrics.sh [BUILD_DIR]     (make bench-metrics)
set -eu
BUILD=${1:-build}
KEYS=${KEYS:-1000000}
SCRAPES=${SCRAPES:-50}
. "$(dirname "$0")/../tests/lib/ports.sh"
port=$(free_port)
http=$(free_port)
tmp=$(mktemp -d /tmp/crescent-bench-metrics.XXXXXX)
"$BUILD/bin/crescent-master" --bind 127.0.0.1 --port "$port" --memory 2gb \
    --metrics_host 127.0.0.1 --metrics_port "$http" >"$tmp/master.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
python3 -c "
import sys
w = sys.stdout.write
for i in range($KEYS):
    w('*3\r\n\$3\r\nSET\r\n\$%d\r\nkey:%d\r\n\$2\r\nvv\r\n' % (len('key:%d' % i), i))
" | redis-cli -p "$port" --pipe >/dev/null
echo "keys: $(redis-cli -p "$port" dbsize)"

scrape_times() {
    for _ in $(seq "$SCRAPES"); do
        curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$http/metrics"
    done | sort -n | awk '{a[NR]=$1} END {printf "scrape ms: median %.2f  max %.2f  (n=%d)\n", a[int((NR+1)/2)]*1000, a[NR]*1000, NR}'
}
scrape_times

bench_get() {
    redis-benchmark -p "$port" -c 50 -n 200000 -t get -r "$KEYS" --csv 2>/dev/null |
        awk -F'"' '/"GET"/ {printf "ops/s %s  p99 %s ms  max %s ms\n", $4, $14, $16}'
}
echo "GET alone:          $(bench_get)"
( while :; do curl -s -o /dev/null "http://127.0.0.1:$http/metrics"; done ) &
loop=$!
echo "GET while scraping: $(bench_get)"
kill $loop 2>/dev/null; wait $loop 2>/dev/null || true
