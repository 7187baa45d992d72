#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fabric transport vs the raw libfabric loop (tests/bench/raw_fi_write), same provider, same
# completion semantics, alternating runs, best of REPEAT: 4 KiB batch 1 (latency), 64 KiB and
# 1 MiB in batches of 16 (bandwidth). Not part of the test suite (timing on a shared machine is
# noisy); run by hand:  CRESCENT_BUILD=build tests/fabric/bench-fabric-vs-raw.sh
# Env: CRESCENT_BUILD, SECONDS_EACH (default 2), REPEAT (default 3), FI_PROVIDER, CASES (default
# "4096:1 65536:16 1048576:16", BLOCK:BATCH pairs).
set -u
BUILD=${CRESCENT_BUILD:-build}
SECS=${SECONDS_EACH:-2}
REPEAT=${REPEAT:-3}
RAW=$BUILD/tests/bench/raw_fi_write
ENG=$BUILD/tests/fabric/test_xfer_fabric
[ -x "$RAW" ] && [ -x "$ENG" ] || { echo "build $RAW and $ENG first"; exit 1; }
tmp=$(mktemp -d /tmp/fabric-bench.XXXXXX)
"$RAW" --server >"$tmp/srv" 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do port=$(awk '/^PORT/ {print $2}' "$tmp/srv"); [ -n "$port" ] && break; sleep 0.05; done
field() { python3 -c "import json,sys; print(json.loads(sys.stdin.readline())['$1'])"; }
printf '%-14s %12s %12s %8s %12s %12s\n' case "fabric GB/s" "raw GB/s" ratio "fabric p50" "raw p50"
for c in ${CASES:-4096:1 65536:16 1048576:16}; do
    set -- ${c/:/ }
    eg=0 rg=0 el=1e9 rl=1e9
    for _ in $(seq "$REPEAT"); do
        r=$("$RAW" --client "127.0.0.1:$port" --block_size "$1" --batch_size "$2" --duration "$SECS" --json)
        e=$("$ENG" bench "$1" "$2" "$SECS")
        rg=$(echo "$r" | field GBps | awk -v b="$rg" '{print ($1 > b) ? $1 : b}')
        eg=$(echo "$e" | field GBps | awk -v b="$eg" '{print ($1 > b) ? $1 : b}')
        rl=$(echo "$r" | field p50_us | awk -v b="$rl" '{print ($1 < b) ? $1 : b}')
        el=$(echo "$e" | field p50_us | awk -v b="$el" '{print ($1 < b) ? $1 : b}')
    done
    printf '%-14s %12s %12s %7.2fx %10s us %10s us\n' "$1 x $2" "$eg" "$rg" \
        "$(awk -v a="$eg" -v b="$rg" 'BEGIN {print (b > 0) ? a / b : 0}')" "$el" "$rl"
done
