#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmarks the distributed store (make bench-store) side by side with its baselines, in one
# run, medians of alternating rounds (the order of the runs is reversed every other round):
#
#   1. crescent-bench store put / get of 1 MiB objects, batch 16, against crescent-bench
#      transfer write / read of the same block and batch size, per protocol (shm, tcp). The
#      store's segment is held by one `crescent-bench store --operation serve` process; the
#      transfer target holds the raw buffer. Target: store >= 0.8x transfer.
#   2. The same 1 MiB store gets (get_into, zero copy) against redis-server GET of a 1 MiB
#      value, redis-benchmark -c 1 -P 16 (one connection, 16 requests in flight = one batch).
#      Target: store >= 3x redis.
#   3. 4 KiB objects, batch 128: store put / get objects/s against one redis-server MSET / MGET
#      of 128 keys per request, redis-benchmark -c 1. Target: store >= 1x redis.
#   4. bench/bench-mc.sh (pipelined MC.GETREPLICAS against redis GET of 64 B, target >= 0.8x;
#      metadata memory per object against redis used_memory per 64 B key, target <= 1x).
#
# Everything runs on this host over loopback, one client thread on each side. Prints every
# round on stderr and a table on stdout: the medians of each side and their ratio, and
# "paired", the median of the rounds' own ratios (each store run sits next to its baseline in a
# round, so a slow spell of the shared machine hits both); the target is judged on "paired".
# --update-docs also writes the table into docs/benchmarks.md between the bench-store markers.
#
#   bench/bench-store.sh [--update-docs] [--no-mc]
#
# Environment (all optional):
#   CRESCENT_BUILD     build dir holding bin/ (default: build)
#   BENCH_ROUNDS       rounds (3)                  BENCH_DURATION   seconds per store/transfer run (3)
#   BENCH_PROTOCOLS    ("shm tcp")                 BENCH_MC_REQUESTS  bench-mc.sh requests per run (500000)
#   BENCH_REDIS_1M_N   redis GET 1 MiB requests per run (4000)
#   BENCH_REDIS_4K_N   redis MSET / MGET requests per run (2000)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${CRESCENT_BUILD:-build}
ROUNDS=${BENCH_ROUNDS:-3}
DUR=${BENCH_DURATION:-3}
PROTOS=${BENCH_PROTOCOLS:-"shm tcp"}
MC_REQS=${BENCH_MC_REQUESTS:-500000}
R1M_N=${BENCH_REDIS_1M_N:-4000}
R4K_N=${BENCH_REDIS_4K_N:-2000}
UPDATE_DOCS=0
RUN_MC=1
for a in "$@"; do
    case $a in
    --update-docs) UPDATE_DOCS=1 ;;
    --no-mc) RUN_MC=0 ;;
    *) echo "usage: bench/bench-store.sh [--update-docs] [--no-mc]" >&2; exit 2 ;;
    esac
done
BIN=$BUILD/bin
for tool in redis-benchmark redis-cli redis-server python3; do
    command -v "$tool" >/dev/null || { echo "bench-store: $tool not found" >&2; exit 1; }
done
for b in crescent-master crescent-bench; do
    [ -x "$BIN/$b" ] || { echo "bench-store: $BIN/$b missing" >&2; exit 1; }
done

. bench/lib.sh
bench_setup bench-store

wait_pong() { # port name
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ] && return
        sleep 0.1
    done
    echo "bench-store: $2 did not start" >&2
    exit 1
}

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$TMP/redis.log" 2>&1 &
PIDS+=($!)
wait_pong "$rport" redis-server

# A background process whose first stdout line tells it is ready; sets LINE.
start_line() { # name command...
    local name=$1
    shift
    "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
    PIDS+=($!)
    for _ in $(seq 300); do
        LINE=$(head -1 "$TMP/$name.out" 2>/dev/null || true)
        [ -n "$LINE" ] && return
        kill -0 "${PIDS[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench-store: $name did not start" >&2
    cat "$TMP/$name.err" >&2
    exit 1
}

# One master per protocol, each with one serve peer: the peer's segment is the only place its
# objects can go (the master's embedded segment, at its 1 MiB minimum, is not in the pool).
declare -A TARGET MASTER
for p in $PROTOS; do
    mport=$(free_port)
    "$BIN/crescent-master" --port "$mport" --bind 127.0.0.1 --metrics_port 0 --memory 1mb \
        --embedded_segment_in_pool no \
        >"$TMP/master-$p.log" 2>&1 &
    PIDS+=($!)
    wait_pong "$mport" "crescent-master ($p)"
    MASTER[$p]=127.0.0.1:$mport
    start_line "serve-$p" "$BIN/crescent-bench" store --master "${MASTER[$p]}" --operation serve \
        --protocol "$p" --segment_size 256m --duration 86400
    start_line "target-$p" "$BIN/crescent-bench" transfer --mode target --protocol "$p" \
        --buffer_size 64m
    TARGET[$p]=$(sed -n 's/^ready: listening on \([^,]*\),.*/\1/p' <<<"$LINE")
done

json() { # field <<< json line
    python3 -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])[sys.argv[1]])' "$1"
}

# store NAME PROTO OP SIZE BATCH -> appends GB/s (1 MiB) or objects/s (4 KiB) to $TMP/NAME
store() {
    local out
    out=$("$BIN/crescent-bench" store --master "${MASTER[$2]}" --protocol "$2" --operation "$3" \
        --object_size "$4" --batch_size "$5" --keys "$5" --duration "$DUR" --json) ||
        { echo "bench-store: store $*: $out" >&2; exit 1; }
    [ "$(json errors <<<"$out")" = 0 ] || { echo "bench-store: store $* errors: $out" >&2; exit 1; }
    if [ "$4" = 1m ]; then
        json "$3_GBps" <<<"$out" >>"$TMP/$1"
    else
        python3 -c 'import json,sys; r = json.loads(sys.argv[1]); print("%.0f" % (r[sys.argv[2] + "_ops"] / r["seconds"]))' \
            "$out" "$3" >>"$TMP/$1"
    fi
}

# raw NAME PROTO OP [BLOCK BATCH] -> appends GB/s (1 MiB blocks, batch 16) or requests/s to
# $TMP/NAME
raw() {
    local out block=${4:-1m} batch=${5:-16}
    out=$("$BIN/crescent-bench" transfer --mode initiator --protocol "$2" --target "${TARGET[$2]}" \
        --operation "$3" --block_size "$block" --batch_size "$batch" --buffer_size 64m \
        --duration "$DUR" --json) || { echo "bench-store: transfer $*: $out" >&2; exit 1; }
    if [ "$block" = 1m ]; then
        json GBps <<<"$out" >>"$TMP/$1"
    else
        json GBps <<<"$out" | awk '{ printf "%.0f\n", $1 * 1e9 / 4096 }' >>"$TMP/$1"
    fi
}

# redis NAME N SCALE command... -> appends requests/s x SCALE to $TMP/NAME
redis() {
    local name=$1 n=$2 scale=$3 rps
    shift 3
    rps=$(redis-benchmark -p "$rport" -c 1 -P "$PIPE" -n "$n" -q "$@" 2>/dev/null |
        tr '\r' '\n' | awk '/requests per second/ { for (i = 2; i <= NF; i++) if ($i == "requests") v = $(i-1) } END { print v }')
    [ -n "$rps" ] || { echo "bench-store: redis-benchmark $name gave no rate" >&2; exit 1; }
    awk -v r="$rps" -v s="$scale" 'BEGIN { printf "%.4f\n", r * s }' >>"$TMP/$name"
}

# The redis data: k1m (1 MiB) and k4k:0..127 (4 KiB each), written once; MSET rewrites them.
head -c 1048576 /dev/zero | tr '\0' v | redis-cli -p "$rport" -x SET k1m >/dev/null
v4k=$(head -c 4096 /dev/zero | tr '\0' v)
MSET=(MSET)
MGET=(MGET)
for i in $(seq 0 127); do
    MSET+=("k4k:$i" "$v4k")
    MGET+=("k4k:$i")
done
redis-cli -p "$rport" "${MSET[@]}" >/dev/null

# Each store run sits next to its baseline (the redis runs are repeated per protocol for that),
# so a round's ratio compares two runs a few seconds apart.
JOBS=()
for p in $PROTOS; do
    JOBS+=("store s_put_$p $p put 1m 16" "raw t_write_$p $p write"
        "store s_get_$p $p get 1m 16" "raw t_read_$p $p read" "r1m $p"
        "store s_put4k_$p $p put 4k 128" "r4k_mset $p" "store s_get4k_$p $p get 4k 128"
        "r4k_mget $p" "raw t_write4k_$p $p write 4k 128" "raw t_read4k_$p $p read 4k 128")
done
run_job() {
    case $1 in
    r1m\ *) PIPE=16 redis "r_get1m_${1#* }" "$R1M_N" 1.048576e-3 GET k1m ;; # GB/s
    r4k_mset\ *) PIPE=1 redis "r_mset4k_${1#* }" "$R4K_N" 128 "${MSET[@]}" ;; # objects/s
    r4k_mget\ *) PIPE=1 redis "r_mget4k_${1#* }" "$R4K_N" 128 "${MGET[@]}" ;;
    *) eval "$1" ;;
    esac
}

echo "bench-store: $ROUNDS alternating rounds of ${DUR} s store/transfer runs; load average" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then
        for j in "${JOBS[@]}"; do run_job "$j"; done
    else
        for ((k = ${#JOBS[@]} - 1; k >= 0; k--)); do run_job "${JOBS[k]}"; done
    fi
    line="  round $r:"
    for f in "$TMP"/s_* "$TMP"/t_* "$TMP"/r_*; do line+=" ${f##*/}=$(tail -1 "$f")"; done
    echo "$line" >&2
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

if [ "$RUN_MC" = 1 ]; then
    echo "bench-store: bench/bench-mc.sh (BENCH_ROUNDS=$ROUNDS BENCH_REQUESTS=$MC_REQS)" >&2
    BENCH_ROUNDS=$ROUNDS BENCH_REQUESTS=$MC_REQS CRESCENT_BUILD=$BUILD bench/bench-mc.sh \
        >"$TMP/mc.out"
fi

python3 - "$TMP" "$ROUNDS" "$DUR" "$PROTOS" "$UPDATE_DOCS" "$LOAD_END" "$RUN_MC" <<'PY'
import os, re, statistics, sys, time
tmp, rounds, dur, protos, update, load, run_mc = sys.argv[1:8]
def vals(name):
    with open(os.path.join(tmp, name)) as f:
        return [float(x) for x in f.read().split()]
rows = []
def row(label, a, b, target, unit_fmt="%.3f", inverse=False):
    va, vb = vals(a), vals(b)
    ma, mb = statistics.median(va), statistics.median(vb)
    per = [x / y for x, y in zip(va, vb) if y > 0]
    ratio = ma / mb if mb else 0.0
    paired = statistics.median(per)
    verdict = "(reference)" if target is None else ">= %.2f %s" % (
        target, "met" if paired >= target else "MISSED")
    rows.append("%-44s %12s %12s %6.2f %6.2f %6.2f-%-5.2f  %s" % (
        label, unit_fmt % ma, unit_fmt % mb, ratio, paired, min(per), max(per), verdict))
for p in protos.split():
    row(p + " put 1 MiB b16 GB/s vs transfer write", "s_put_" + p, "t_write_" + p, 0.8)
    row(p + " get 1 MiB b16 GB/s vs transfer read", "s_get_" + p, "t_read_" + p, 0.8)
for p in protos.split():
    row(p + " get_into 1 MiB GB/s vs redis GET -P16", "s_get_" + p, "r_get1m_" + p, 3.0)
for p in protos.split():
    row(p + " put 4 KiB b128 obj/s vs redis MSET 128", "s_put4k_" + p, "r_mset4k_" + p, 1.0, "%.0f")
    row(p + " get 4 KiB b128 obj/s vs redis MGET 128", "s_get4k_" + p, "r_mget4k_" + p, 1.0, "%.0f")
for p in protos.split():
    row(p + " put 4 KiB b128 obj/s vs transfer write", "s_put4k_" + p, "t_write4k_" + p, None, "%.0f")
    row(p + " get 4 KiB b128 obj/s vs transfer read", "s_get4k_" + p, "t_read4k_" + p, None, "%.0f")
head = "%-44s %12s %12s %6s %6s %12s  %s" % ("medians of %s alternating rounds" % rounds, "store",
                                               "baseline", "ratio", "paired", "round range", "target")
out = [head] + rows
if run_mc == "1":
    mc = open(os.path.join(tmp, "mc.out")).read()
    def num(label):
        m = re.search(re.escape(label) + r"\s+([0-9.]+)", mc)
        return float(m.group(1)) if m else float("nan")
    c, r = num("median MC.GETREPLICAS (crescent)"), num("median GET 64 B (redis-server)")
    lc, lr = num("light: median MC.GETREPLICAS"), num("light: median GET 64 B (redis-server)")
    out.append("%-44s %12.0f %12.0f %6.2f %6s %12s  >= 0.80 %s" % (
        "MC.GETREPLICAS vs GET 64 B, redis-benchmark", c, r, c / r, "", "", "met" if c / r >= 0.8 else "MISSED"))
    if lc == lc and lr == lr:  # not NaN: bench_mc_load was built (make bench-store builds it)
        out.append("%-44s %12.0f %12.0f %6.2f %6s %12s  >= 0.80 %s" % (
            "  same, light client (bench_mc_load)", lc, lr, lc / lr, "", "", "met" if lc / lr >= 0.8 else "MISSED"))
    else:
        out.append("%-44s  not run: no bench/bench_mc_load in the build (make bench-store builds it)" % (
            "  same, light client (bench_mc_load)"))
    cm, rm = num("crescent used_memory growth per object"), num("redis used_memory growth per 64 B key")
    meta = num("MC.STATS meta_bytes per object")
    out.append("%-44s %12.1f %12.1f %6.2f %6s %12s  <= 1.00 %s" % (
        "memory B/object, 1 replica vs redis 64 B key", cm, rm, cm / rm, "", "", "met" if cm <= rm else "MISSED"))
    out.append("%-44s %12.1f" % ("  of which MC.STATS meta_bytes", meta))
out.append("(%s s runs; load average at the end %s)" % (dur, load))
text = "\n".join(out)
print(text)
if update == "1":
    path = "docs/benchmarks.md"
    doc = open(path).read()
    begin, end = "<!-- bench-store:begin -->", "<!-- bench-store:end -->"
    block = "%s\n`make bench-store`, %s:\n\n```\n%s\n```\n%s" % (
        begin, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), text, end)
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    open(path, "w").write(doc)
    print("bench-store: wrote the table into " + path, file=sys.stderr)
PY
