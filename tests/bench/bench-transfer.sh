#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-transfer: measures each transfer transport next to its baseline in one run and
# prints the ratios (issue 3 targets in brackets):
#   shm    vs single-thread memcpy, same block sizes and access pattern   [>= 0.9x at 1 MiB]
#   tcp    vs iperf3 single stream on loopback, same write size           [>= 0.8x]
#   fabric vs raw_fi_write (tests/bench), same provider, FI_DELIVERY_COMPLETE [>= 0.95x]
# at 64 KiB and 1 MiB blocks, plus 4 KiB batch-1 latency (p50/p99) per transport.
# Every figure is the best of BENCH_REPEAT runs, baseline and Crescent alternating, because a
# shared 2-core machine is noisy; read the ratios, not the absolute numbers.
# Env: CRESCENT_BUILD (build dir), BENCH_SECONDS (per measurement, default 2), BENCH_REPEAT
#      (default 3), FI_PROVIDER (default "tcp;ofi_rxm").
set -u
BUILD=${CRESCENT_BUILD:-$(pwd)/build}
SECS=${BENCH_SECONDS:-2}
REPEAT=${BENCH_REPEAT:-3}
BENCH=$BUILD/bin/crescent-bench
RAW=$BUILD/tests/bench/raw_fi_write
export FI_PROVIDER=${FI_PROVIDER:-"tcp;ofi_rxm"}
BATCH=16
BUF=64M
tmp=$(mktemp -d /tmp/crescent-bench-xfer.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
[ -x "$BENCH" ] || { echo "bench-transfer: $BENCH missing (make first)"; exit 1; }

# start_target PROTO [args...]: starts a crescent-bench target; sets TADDR and TPID.
start_target() {
    local proto=$1 out=$tmp/target.$RANDOM
    shift
    : >"$out"
    "$BENCH" transfer --mode target --protocol "$proto" --buffer_size $BUF "$@" >"$out" 2>&1 &
    TPID=$!
    pids+=("$TPID")
    TADDR=
    for _ in $(seq 100); do
        TADDR=$(awk '/^ready: listening on/ {sub(",", "", $4); print $4}' "$out" 2>/dev/null)
        [ -n "$TADDR" ] && return 0
        kill -0 "$TPID" 2>/dev/null || break
        sleep 0.05
    done
    echo "bench-transfer: target $proto did not start: $(cat "$out")" >&2
    return 1
}
stop_target() { kill "$TPID" 2>/dev/null; wait "$TPID" 2>/dev/null; }

# json FIELD < line
json() { python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())[sys.argv[1]])' "$1"; }

# initiator PROTO OP BLOCK BATCH [args...]: prints the JSON result line.
initiator() {
    local proto=$1 op=$2 block=$3 batch=$4
    shift 4
    "$BENCH" transfer --mode initiator --protocol "$proto" --target "$TADDR" --operation "$op" \
        --block_size "$block" --batch_size "$batch" --duration "$SECS" --buffer_size $BUF \
        --json "$@" 2>&1 | grep '^{' | tail -1
}

# best A B: the larger of two numbers ("" counts as 0).
best() { python3 -c 'import sys; print("%.3f" % max(float(x or 0) for x in sys.argv[1:]))' "${1:-0}" "${2:-0}"; }

ratio() { python3 -c 'import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print("%.2f" % (a/b if b else 0))' "$1" "$2"; }
rows=()
row() { rows+=("$(printf '%-7s %-28s %9s %9s %7s %s' "$@")"); }

echo "bench-transfer: ${SECS}s per measurement, batch $BATCH, build $BUILD"

# ---- shm vs memcpy ----
for blk in 64K 1M; do
    for variant in memfd cma; do
        start_target shm --shm_memfd $([ $variant = memfd ] && echo 1 || echo 0) || continue
        for op in read write; do
            base=0 g=0
            for _ in $(seq "$REPEAT"); do
                b1=$("$BENCH" transfer --mode memcpy --block_size $blk --batch_size $BATCH \
                    --duration "$SECS" --json | grep '^{' | json GBps)
                base=$(best "$base" "$b1")
                g=$(best "$g" "$(initiator shm $op $blk $BATCH | json GBps)")
            done
            target=""
            [ $blk = 1M ] && target="[>=0.9]"
            row shm "$op $blk $variant vs memcpy" "$g" "$base" "$(ratio "$g" "$base")x" "$target"
        done
        stop_target
    done
done

# ---- tcp vs iperf3 single stream ----
if command -v iperf3 >/dev/null; then
    . "$(dirname "$0")/../lib/ports.sh"
    iperf() { # iperf3 single stream on loopback, GB/s
        local port ip
        port=$(free_port)
        iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
        ip=$!
        pids+=("$ip")
        sleep 0.3
        iperf3 -c 127.0.0.1 -p "$port" -t "$SECS" -l "$1" -J 2>/dev/null | python3 -c \
            'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e9)'
        wait "$ip" 2>/dev/null
    }
    for blk in 64K 1M; do
        start_target tcp || continue
        for op in read write; do
            ibps=0 g1=0 g4=0
            for _ in $(seq "$REPEAT"); do
                ibps=$(best "$ibps" "$(iperf $blk)")
                # One worker = one connection: like for like with one iperf3 stream.
                g1=$(best "$g1" "$(initiator tcp $op $blk $BATCH --protocol_args workers=1 | json GBps)")
                g4=$(best "$g4" "$(initiator tcp $op $blk $BATCH --protocol_args workers=8,peer_workers=4 | json GBps)")
            done
            row tcp "$op $blk 1 conn vs iperf3" "$g1" "$ibps" "$(ratio "$g1" "$ibps")x" "[>=0.8]"
            row tcp "$op $blk 4 conns vs iperf3" "$g4" "$ibps" "$(ratio "$g4" "$ibps")x" ""
        done
        stop_target
    done
else
    row tcp "iperf3 not installed" - - - "skipped"
fi

# ---- fabric vs raw libfabric ----
fabric_ok=0
if [ -x "$RAW" ] && start_target fabric 2>/dev/null; then
    fabric_ok=1
    rawfi() { # raw libfabric fi_write loop, GB/s
        local rp port
        "$RAW" --server >"$tmp/raw.out" 2>&1 &
        rp=$!
        pids+=("$rp")
        port=
        for _ in $(seq 100); do
            port=$(awk '/^PORT/ {print $2}' "$tmp/raw.out")
            [ -n "$port" ] && break
            sleep 0.05
        done
        "$RAW" --client "127.0.0.1:$port" --block_size "$1" --batch_size $BATCH \
            --duration "$SECS" --op write --delivery --json 2>/dev/null | grep '^{' | json GBps
        kill "$rp" 2>/dev/null
        wait "$rp" 2>/dev/null
    }
    for blk in 64K 1M; do
        bytes=$([ $blk = 64K ] && echo 65536 || echo 1048576)
        raw=0 g=0
        for _ in $(seq "$REPEAT"); do
            raw=$(best "$raw" "$(rawfi $bytes)")
            g=$(best "$g" "$(initiator fabric write $blk $BATCH | json GBps)")
        done
        row fabric "write $blk vs raw_fi_write" "$g" "$raw" "$(ratio "$g" "$raw")x" "[>=0.95]"
    done
    stop_target
else
    row fabric "not built (no raw_fi_write or fabric transport)" - - - "skipped"
fi

# ---- 4 KiB batch-1 latency ----
lat=()
for proto in shm tcp fabric; do
    [ $proto = fabric ] && [ $fabric_ok = 0 ] && continue
    start_target $proto || continue
    r=$(initiator $proto read 4K 1)
    lat+=("$(printf '%-7s 4 KiB read batch 1: p50 %8s us  p99 %8s us  (%s GB/s)' $proto \
        "$(echo "$r" | json p50_us)" "$(echo "$r" | json p99_us)" "$(echo "$r" | json GBps)")")
    stop_target
done

echo
printf '%-7s %-28s %9s %9s %7s %s\n' proto "case" "GB/s" "base GB/s" ratio target
for r in "${rows[@]}"; do echo "$r"; done
echo
for l in "${lat[@]}"; do echo "$l"; done
