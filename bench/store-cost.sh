#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Counts what one object costs on the store's tcp data path, figures that do not move with the
# machine's load (bench-store.sh's wall-clock ratios do): for 4 KiB objects in batches of 128,
# crescent-bench store put / get and crescent-bench transfer write / read over tcp,
#
#   syscalls  system calls per object of the client and of the process serving the segment or
#             buffer (strace -c -f on both, over a --duration run; divided by the objects moved)
#   instr     user-space instructions per object of the client (valgrind --tool=callgrind,
#             difference between a 2 s and a 5 s run divided by the difference in objects, so
#             start-up drops out)
#   master    user-space instructions per object of crescent-master for the store put / get
#             runs (a second master under callgrind, counters zeroed before and dumped after
#             each client run with callgrind_control; 5 s run minus 2 s run as for instr)
#
#   cpu       CPU time per object of the client (user and system, /usr/bin/time) and of the
#             master (user + system from /proc, 10 ms ticks) for 3 s store put / get runs: what
#             the instruction counts come to in time, system time included (load-dependent)
#
#   bench/store-cost.sh [syscalls] [instr] [master] [cpu]      (syscalls and instr by default)
#
# CRESCENT_STORE_REPLY_FORMAT=full in the environment runs the store clients on the full
# (self-describing) reply form instead of the compact one (docs/store.md, "Compact replies").
#
# Environment: CRESCENT_BUILD (build), COST_DURATION (2, seconds of the strace runs), COST_KEEP
# (a directory: the callgrind profiles are copied there, for callgrind_annotate).
# One crescent-master, one `crescent-bench store --operation serve` and one
# `crescent-bench transfer --mode target` on loopback, as in bench-store.sh.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${CRESCENT_BUILD:-build}
DUR=${COST_DURATION:-2}
BIN=$BUILD/bin
MODES=("$@")
[ ${#MODES[@]} -gt 0 ] || MODES=(syscalls instr)
for m in "${MODES[@]}"; do
    case $m in
    syscalls) command -v strace >/dev/null || { echo "store-cost: strace not found" >&2; exit 1; } ;;
    instr | master) command -v valgrind >/dev/null || { echo "store-cost: valgrind not found" >&2; exit 1; } ;;
    cpu) [ -x /usr/bin/time ] || { echo "store-cost: /usr/bin/time not found" >&2; exit 1; } ;;
    *) echo "usage: bench/store-cost.sh [syscalls] [instr] [master] [cpu]" >&2; exit 2 ;;
    esac
done

. bench/lib.sh
bench_setup store-cost

mport=$(free_port)
"$BIN/crescent-master" --port "$mport" --bind 127.0.0.1 --metrics_port 0 --memory 1mb \
    --embedded_segment_in_pool no \
    >"$TMP/master.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
    [ "$(redis-cli -p "$mport" ping 2>/dev/null)" = PONG ] && break
    sleep 0.1
done
MASTERPID=$!
MASTER=127.0.0.1:$mport
"$BIN/crescent-bench" store --master "$MASTER" --operation serve --protocol tcp \
    --segment_size 256m --duration 86400 >"$TMP/serve.out" 2>&1 &
SERVE=$!
PIDS+=("$SERVE")
"$BIN/crescent-bench" transfer --mode target --protocol tcp --buffer_size 64m >"$TMP/target.out" 2>&1 &
TARGETPID=$!
PIDS+=("$TARGETPID")
for _ in $(seq 300); do
    [ -s "$TMP/serve.out" ] && [ -s "$TMP/target.out" ] && break
    sleep 0.1
done
TARGET=$(sed -n 's/^ready: listening on \([^,]*\),.*/\1/p' "$TMP/target.out")
[ -n "$TARGET" ] || { echo "store-cost: transfer target did not start" >&2; exit 1; }

# The four runs: name, the pid serving it, the client command (without --duration).
NAMES=(store_put store_get xfer_write xfer_read)
declare -A PEER CMD
PEER=([store_put]=$SERVE [store_get]=$SERVE [xfer_write]=$TARGETPID [xfer_read]=$TARGETPID)
for op in put get; do
    CMD[store_$op]="$BIN/crescent-bench store --master $MASTER --protocol tcp --operation $op --object_size 4k --batch_size 128 --keys 128 --json"
done
for op in write read; do
    CMD[xfer_$op]="$BIN/crescent-bench transfer --mode initiator --protocol tcp --target $TARGET --operation $op --block_size 4k --batch_size 128 --buffer_size 64m --json"
done

# objects FILE: objects moved, from a store JSON line or a transfer "N batches" line.
objects() {
    if grep -q put_ops "$1"; then
        python3 -c 'import json,sys; r = json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(r["put_ops"] + r["get_ops"])' "$1"
    else
        echo $(($(sed -n 's/.* \([0-9]*\) batches in .*/\1/p' "$1" | head -1) * 128))
    fi
}

if [[ " ${MODES[*]} " == *" syscalls "* ]]; then
    echo "system calls per object (strace -c -f, ${DUR} s runs, 4 KiB objects, batch 128, tcp):"
    for n in "${NAMES[@]}"; do
        strace -c -f -o "$TMP/$n.peer" -p "${PEER[$n]}" >/dev/null 2>&1 &
        sp=$!
        sleep 0.5
        # shellcheck disable=SC2086
        strace -c -f -o "$TMP/$n.client" ${CMD[$n]} --duration "$DUR" >"$TMP/$n.json" 2>/dev/null
        kill -INT $sp
        wait $sp 2>/dev/null || true
        o=$(objects "$TMP/$n.json")
        c=$(awk '/total/ { print $4 }' "$TMP/$n.client")
        p=$(awk '/total/ { print $4 }' "$TMP/$n.peer")
        awk -v n="$n" -v o="$o" -v c="$c" -v p="$p" 'BEGIN {
            printf "  %-10s %7d objects  client %7d calls %6.2f/object  serving side %7d calls %6.2f/object\n",
                n, o, c, c / o, p, p / o }'
    done
fi

# per_object NAME INSTR_2S INSTR_5S OBJECTS_2S OBJECTS_5S: one line, the instructions per object
# of the objects the longer run added (start-up cancels).
per_object() {
    awk -v n="$1" -v i2="$2" -v i5="$3" -v o2="$4" -v o5="$5" 'BEGIN {
        printf "  %-10s %7d / %7d objects  %8.0f instructions/object\n", n, o2, o5, (i5 - i2) / (o5 - o2) }'
}

if [[ " ${MODES[*]} " == *" instr "* ]]; then
    echo "client instructions per object (callgrind, 5 s run minus 2 s run):"
    for n in "${NAMES[@]}"; do
        declare -A IR OB
        # A busy machine can leave the 5 s run barely ahead of the 2 s one (then start-up no
        # longer cancels): up to three tries for a 5 s run with 1.5 times the objects.
        for try in 1 2 3; do
            for d in 2 5; do
                # shellcheck disable=SC2086
                valgrind --tool=callgrind --callgrind-out-file="$TMP/$n.$d.cg" ${CMD[$n]} \
                    --duration $d >"$TMP/$n.$d.json" 2>"$TMP/$n.$d.err"
                IR[$d]=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/$n.$d.err")
                OB[$d]=$(objects "$TMP/$n.$d.json")
            done
            [ $((OB[5] * 2)) -ge $((OB[2] * 3)) ] && break
            echo "  ($n: ${OB[2]} / ${OB[5]} objects, too close; again)"
        done
        per_object "$n" "${IR[2]}" "${IR[5]}" "${OB[2]}" "${OB[5]}"
    done
fi

if [[ " ${MODES[*]} " == *" master "* ]]; then
    command -v callgrind_control >/dev/null || { echo "store-cost: callgrind_control not found" >&2; exit 1; }
    echo "master instructions per object (callgrind, 5 s run minus 2 s run):"
    vport=$(free_port)
    valgrind --tool=callgrind --callgrind-out-file="$TMP/master.cg" "$BIN/crescent-master" \
        --port "$vport" --bind 127.0.0.1 --metrics_port 0 --memory 1mb \
        --embedded_segment_in_pool no >"$TMP/vmaster.log" 2>&1 &
    VM=$!
    PIDS+=("$VM")
    for _ in $(seq 300); do
        [ "$(redis-cli -p "$vport" ping 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    "$BIN/crescent-bench" store --master "127.0.0.1:$vport" --operation serve --protocol tcp \
        --segment_size 256m --duration 86400 >"$TMP/vserve.out" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 300); do [ -s "$TMP/vserve.out" ] && break; sleep 0.1; done
    for op in put get; do
        declare -A MI MO
        for try in 1 2 3; do
            for d in 2 5; do
                callgrind_control -z "$VM" >/dev/null 2>&1
                "$BIN/crescent-bench" store --master "127.0.0.1:$vport" --protocol tcp \
                    --operation $op --object_size 4k --batch_size 128 --keys 128 --json \
                    --duration $d >"$TMP/m.$op.$d.json"
                callgrind_control -d "m.$op.$d.$try" "$VM" >/dev/null 2>&1
                f=$(grep -l "dump m.$op.$d.$try\$" "$TMP"/master.cg.*)
                MI[$d]=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$f" | head -1)
                MO[$d]=$(objects "$TMP/m.$op.$d.json")
            done
            [ $((MO[5] * 2)) -ge $((MO[2] * 3)) ] && break
            echo "  (store_$op: ${MO[2]} / ${MO[5]} objects, too close; again)"
        done
        per_object "store_$op" "${MI[2]}" "${MI[5]}" "${MO[2]}" "${MO[5]}"
    done
fi

if [[ " ${MODES[*]} " == *" cpu "* ]]; then
    echo "CPU time per object (3 s runs, 4 KiB objects, batch 128, tcp):"
    mcpu() { awk '{ print $14 + $15 }' "/proc/$MASTERPID/stat"; } # user + system ticks
    for n in store_put store_get; do
        m0=$(mcpu)
        # shellcheck disable=SC2086
        /usr/bin/time -f "%U %S" -o "$TMP/$n.time" ${CMD[$n]} --duration 3 >"$TMP/$n.cpu.json"
        m1=$(mcpu)
        o=$(objects "$TMP/$n.cpu.json")
        read -r u s <"$TMP/$n.time"
        awk -v n="$n" -v o="$o" -v u="$u" -v s="$s" -v m=$((m1 - m0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
            printf "  %-10s %7d objects  client user %5.2f us/object  system %5.2f us/object  master %5.2f us/object\n",
                n, o, u / o * 1e6, s / o * 1e6, m / hz / o * 1e6 }'
    done
fi

if [ -n "${COST_KEEP:-}" ]; then
    mkdir -p "$COST_KEEP"
    cp "$TMP"/*.cg* "$COST_KEEP"/ 2>/dev/null || true
fi
