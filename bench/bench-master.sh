#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmarks crescent-master against Debian's redis-server with redis-benchmark: SET and GET
# at several value sizes, A/B alternating for several rounds, medians of ops/s, p50, p99 and
# server CPU seconds per million requests (utime+stime from /proc/<pid>/stat), and the CPU of the
# load generator itself (redis-benchmark, as % of one core and s per Mreq). Then counts the
# work per request of each server (--count-only for this part alone): system calls with
# `strace -c -f` and user-space instructions with `valgrind --tool=callgrind`, each as the
# difference between two run lengths of redis-benchmark SET+GET 64 B c=50 (P 1 and 16), so
# start-up and connection set-up cancel out. With --memory, loads 1,000,000 keys of 64 B
# through redis-cli --pipe and compares INFO used_memory.
#
#   bench/bench-master.sh [--memory-only | --with-memory | --count-only | --no-count]
#
# Environment (all optional):
#   CRESCENT_BUILD  build dir holding bin/crescent-master (default: build)
#   BENCH_A_CMD     server A command line; {port} {memory} {threads} are substituted
#                   (default: $CRESCENT_BUILD/bin/crescent-master --port {port} --memory {memory},
#                   plus --threads N when BENCH_THREADS is set, plus $BENCH_A_ARGS)
#   BENCH_B_CMD     server B (default: redis-server --port {port} --maxmemory {memory}
#                   --save '' --appendonly no)
#   BENCH_A_NAME, BENCH_B_NAME   column labels (crescent, redis)
#   BENCH_MEMORY    memory for both servers (1gb)       BENCH_THREADS  crescent threads (default:
#                                                       the server's own policy)
#   BENCH_A_ARGS    extra crescent flags, e.g. "--io-backend epoll"
#   BENCH_COUNT_N   the two run lengths of the counting part ("20000 60000")
#   BENCH_ROUNDS    rounds per row, >= 1 (3)            BENCH_SCALE    request-count factor (1)
#   BENCH_CLIENTS   redis-benchmark -c (50)             BENCH_KEYS     keys for the memory test
#   BENCH_RAW       file to keep the raw per-run results (TSV)
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${CRESCENT_BUILD:-build}
BUILD=$(cd "$BUILD" 2>/dev/null && pwd || echo "$BUILD")
A_NAME=${BENCH_A_NAME:-crescent}
B_NAME=${BENCH_B_NAME:-redis}
A_DEFAULT="$BUILD/bin/crescent-master --port {port} --memory {memory}"
[ -n "${BENCH_THREADS:-}" ] && A_DEFAULT+=" --threads {threads}"
[ -n "${BENCH_A_ARGS:-}" ] && A_DEFAULT+=" $BENCH_A_ARGS"
A_CMD=${BENCH_A_CMD:-$A_DEFAULT}
B_CMD=${BENCH_B_CMD:-"redis-server --port {port} --maxmemory {memory} --save '' --appendonly no"}
MEMORY=${BENCH_MEMORY:-1gb}
THREADS=${BENCH_THREADS:-0}
COUNT_N=${BENCH_COUNT_N:-"20000 60000"}
ROUNDS=${BENCH_ROUNDS:-3}
SCALE=${BENCH_SCALE:-1}
CLIENTS=${BENCH_CLIENTS:-50}
NKEYS=${BENCH_KEYS:-1000000}
MODE=speed
COUNT=1
case "${1:-}" in
--memory-only) MODE=memory ;;
--with-memory) MODE=both ;;
--count-only) MODE=count ;;
--no-count) COUNT=0 ;;
"") ;;
*) echo "usage: $0 [--memory-only | --with-memory | --count-only | --no-count]" >&2; exit 2 ;;
esac

for tool in redis-benchmark redis-cli python3; do
    command -v "$tool" >/dev/null || { echo "bench: $tool not found" >&2; exit 1; }
done
a_bin=${A_CMD%% *}
if ! command -v "$a_bin" >/dev/null && [ ! -x "$a_bin" ]; then
    echo "bench: server A binary '$a_bin' not found (build it, or set BENCH_A_CMD)" >&2
    exit 1
fi

. bench/lib.sh
bench_setup bench


# start_server NAME TEMPLATE -> sets SRV_PID and SRV_PORT
start_server() {
    local name=$1 tmpl=$2 port cmd
    port=$(free_port)
    cmd=${tmpl//\{port\}/$port}
    cmd=${cmd//\{memory\}/$MEMORY}
    cmd=${cmd//\{threads\}/$THREADS}
    (cd "$TMP" && exec bash -c "exec $cmd" >"$TMP/$name.log" 2>&1) &
    SRV_PID=$!
    SRV_PORT=$port
    PIDS+=("$SRV_PID")
    for _ in $(seq 300); do
        if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
            return 0
        fi
        kill -0 "$SRV_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "bench: $name did not start: $cmd" >&2
    tail -20 "$TMP/$name.log" >&2
    exit 1
}

# CPU seconds (user+system, all threads) consumed so far by pid.
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}

check_alive() {
    kill -0 "$1" 2>/dev/null || { echo "bench: server $2 died" >&2; tail -20 "$TMP/$2.log" >&2; exit 1; }
}

# One redis-benchmark run; appends "row test server round rps p50 p99 cpu_per_M" to RAW.
RAW=$TMP/raw.tsv
: >"$RAW"
# The client's CPU (user + system of redis-benchmark, from the shell's `times` for its
# children) is recorded too: on a small host the load generator, not the server, can be what
# saturates (docs/benchmarks.md). Softirq time is not in either process's figure when the
# kernel accounts it apart (CONFIG_IRQ_TIME_ACCOUNTING).
run_one() {
    local name=$1 pid=$2 port=$3 test=$4 size=$5 pipe=$6 n=$7 round=$8 c0 c1 w0 w1 out line cli
    c0=$(cpu_seconds "$pid")
    w0=$(date +%s.%N)
    out=$(
        redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -P "$pipe" -t "$test" \
            -d "$size" -n "$n" --csv 2>/dev/null || true
        times
    )
    w1=$(date +%s.%N)
    c1=$(cpu_seconds "$pid")
    check_alive "$pid" "$name"
    line=$(echo "$out" | grep -i "^\"$test\"" | head -1) || true
    if [ -z "$line" ]; then
        echo "bench: no result from redis-benchmark for $name $test -d $size -P $pipe" >&2
        exit 1
    fi
    # last line of `times`: "XmY.YYYs XmY.YYYs" user and system of the children
    cli=$(echo "$out" | tail -1 | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, "m");
        sub(/s$/, "", a[2]); s += a[1] * 60 + a[2] } print s }')
    # "test","rps","avg","min","p50","p95","p99","max"
    echo "$line" | tr -d '"' | awk -F, -v r="$test/$size/$pipe" -v s="$name" -v k="$round" \
        -v c0="$c0" -v c1="$c1" -v n="$n" -v cli="$cli" -v w="$(echo "$w0 $w1" | awk '{ print $2 - $1 }')" \
        '{ printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%.3f\t%.1f\n", r, $1, s, k, $2, $5, $7,
           (c1 - c0) * 1e6 / n, cli * 1e6 / n, (w > 0 ? cli * 100 / w : 0) }' \
        >>"$RAW"
}

scaled() { python3 -c "print(max(100, int($1 * $SCALE)))"; }

speed_bench() {
    start_server "$A_NAME" "$A_CMD"
    local a_pid=$SRV_PID a_port=$SRV_PORT
    start_server "$B_NAME" "$B_CMD"
    local b_pid=$SRV_PID b_port=$SRV_PORT
    # size pipeline requests
    local rows=("64 1 $(scaled 100000)" "64 16 $(scaled 400000)" "4096 1 $(scaled 50000)"
        "65536 1 $(scaled 10000)" "1048576 1 $(scaled 1000)")
    echo "bench: $A_NAME (pid $a_pid, port $a_port) vs $B_NAME (pid $b_pid, port $b_port)," \
        "memory $MEMORY, $CLIENTS clients, $ROUNDS rounds, scale $SCALE" >&2
    for round in $(seq "$ROUNDS"); do
        for row in "${rows[@]}"; do
            read -r size pipe n <<<"$row"
            for test in SET GET; do
                if [ $((round % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
                for who in $order; do
                    if [ "$who" = A ]; then
                        run_one "$A_NAME" "$a_pid" "$a_port" "$test" "$size" "$pipe" "$n" "$round"
                    else
                        run_one "$B_NAME" "$b_pid" "$b_port" "$test" "$size" "$pipe" "$n" "$round"
                    fi
                done
            done
            echo "bench: round $round: -d $size -P $pipe done" >&2
        done
    done
    python3 - "$RAW" "$A_NAME" "$B_NAME" <<'PY'
import sys, statistics
from collections import defaultdict
raw, a, b = sys.argv[1:4]
runs = defaultdict(list)
order = []
for line in open(raw):
    row, test, srv, rnd, rps, p50, p99, cpu, ccpu, cpct = line.rstrip("\n").split("\t")
    key = (row, test)
    if key not in order:
        order.append(key)
    runs[(row, test, srv)].append((float(rps), float(p50), float(p99), float(cpu), float(ccpu),
                                   float(cpct)))
def med(row, test, srv, i):
    v = [r[i] for r in runs[(row, test, srv)]]
    return statistics.median(v) if v else float("nan")
def human(n):
    n = int(n)
    return {64: "64 B", 4096: "4 KiB", 65536: "64 KiB", 1048576: "1 MiB"}.get(n, f"{n} B")
hdr = (f"{'test':<5} {'value':>7} {'P':>3} | {a + ' ops/s':>15} {'p50':>7} {'p99':>7} | "
       f"{b + ' ops/s':>15} {'p50':>7} {'p99':>7} | {'ratio':>6} | "
       f"{'cpu s/Mreq ' + a:>20} {b:>8} | {'client cpu%':>11} {'':>5}")
print(hdr)
print("-" * len(hdr))
for row, test in order:
    size, pipe = row.split("/")[1:]
    ra, rb = med(row, test, a, 0), med(row, test, b, 0)
    print(f"{test:<5} {human(size):>7} {pipe:>3} | {ra:>15,.0f} {med(row, test, a, 1):>7.3f} "
          f"{med(row, test, a, 2):>7.3f} | {rb:>15,.0f} {med(row, test, b, 1):>7.3f} "
          f"{med(row, test, b, 2):>7.3f} | {ra / rb if rb else float('nan'):>6.2f} | "
          f"{med(row, test, a, 3):>20.2f} {med(row, test, b, 3):>8.2f} | "
          f"{med(row, test, a, 5):>11.0f} {med(row, test, b, 5):>5.0f}")
print("\nmedians of %d rounds; p50/p99 in ms (redis-benchmark); ratio = %s/%s ops/s;"
      % (max(len(v) for v in runs.values()), a, b))
print("cpu s/Mreq: server user+system CPU seconds per million requests; client cpu%%: "
      "redis-benchmark's user+system CPU as %% of one core (%s, then %s)" % (a, b))
print("client cpu s/Mreq (%s, %s): " % (a, b) + ", ".join(
    f"{t} {human(r.split('/')[1])} P{r.split('/')[2]} {med(r, t, a, 4):.1f}/{med(r, t, b, 4):.1f}"
    for r, t in order))
PY
    if [ -n "${BENCH_RAW:-}" ]; then cp "$RAW" "$BENCH_RAW"; fi
    kill "$a_pid" "$b_pid" 2>/dev/null || true
}

# Generates NKEYS "SET key:<i> <64 bytes>" commands in RESP for redis-cli --pipe.
gen_sets() {
    python3 - "$NKEYS" <<'PY'
import sys
n = int(sys.argv[1])
val = b"v" * 64
out = sys.stdout.buffer
chunk = []
for i in range(n):
    k = b"key:%010d" % i
    chunk.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$64\r\n%s\r\n" % (len(k), k, val))
    if len(chunk) == 10000:
        out.write(b"".join(chunk))
        chunk = []
out.write(b"".join(chunk))
PY
}

used_memory() {
    redis-cli -h 127.0.0.1 -p "$1" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'
}

memory_bench() {
    gen_sets >"$TMP/sets.resp"
    printf '%-10s %14s %14s %14s %12s %10s\n' server keys "used before" "used after" "bytes/key" "load s"
    for side in A B; do
        if [ $side = A ]; then start_server "$A_NAME" "$A_CMD"; name=$A_NAME
        else start_server "$B_NAME" "$B_CMD"; name=$B_NAME; fi
        before=$(used_memory "$SRV_PORT")
        t0=$(date +%s.%N)
        redis-cli -h 127.0.0.1 -p "$SRV_PORT" --pipe <"$TMP/sets.resp" >"$TMP/pipe-$name.log" 2>&1 || {
            echo "bench: redis-cli --pipe failed for $name" >&2; cat "$TMP/pipe-$name.log" >&2; exit 1; }
        t1=$(date +%s.%N)
        check_alive "$SRV_PID" "$name"
        keys=$(redis-cli -h 127.0.0.1 -p "$SRV_PORT" dbsize 2>/dev/null | tr -d '\r' || true)
        case "$keys" in ''|*[!0-9]*) keys="n/a" ;; esac
        after=$(used_memory "$SRV_PORT")
        [ -n "$before" ] && [ -n "$after" ] || { echo "bench: $name has no INFO used_memory" >&2; exit 1; }
        awk -v s="$name" -v k="$keys" -v b="$before" -v a="$after" -v n="$NKEYS" -v t0="$t0" -v t1="$t1" \
            'BEGIN { printf "%-10s %14s %14d %14d %12.1f %10.2f\n", s, k, b, a, (a - b) / n, t1 - t0 }'
        kill "$SRV_PID" 2>/dev/null || true
    done
    echo "($NKEYS keys, 10-byte names, 64-byte values, loaded with redis-cli --pipe; used_memory from INFO memory)"
}

# ---------------------------------------------------------------- work per request

# start_wrapped NAME TEMPLATE WRAPPER...: start_server with the command run under WRAPPER
# (strace, valgrind); SRV_PID is the wrapper's pid, SRV_PORT the port.
start_wrapped() {
    local name=$1 tmpl=$2
    shift 2
    start_server "$name" "$* $tmpl"
}

# stop_wrapped PID: SIGTERM the server (strace: its traced child; valgrind runs in PID itself),
# then wait for the wrapper to write its report.
stop_wrapped() {
    local pid=$1 child
    child=$(pgrep -P "$pid" | head -1 || true)
    kill -TERM "${child:-$pid}" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
}

# count_run KIND NAME TEMPLATE PIPE N: one server run under strace/callgrind with N SET and N
# GET requests; prints the total (system calls, or instructions) and the io backend.
count_run() {
    local kind=$1 name=$2 tmpl=$3 pipe=$4 n=$5 out=$TMP/count.$$.$RANDOM be
    if [ "$kind" = sys ]; then
        start_wrapped "$name" "$tmpl" strace -f -c -o "$out"
    else
        start_wrapped "$name" "$tmpl" valgrind --tool=callgrind --callgrind-out-file="$out"
    fi
    be=$(redis-cli -h 127.0.0.1 -p "$SRV_PORT" info server 2>/dev/null | tr -d '\r' |
        awk -F: '$1 == "io_backend" { print $2 }')
    redis-benchmark -h 127.0.0.1 -p "$SRV_PORT" -c "$CLIENTS" -P "$pipe" -t set,get -d 64 \
        -n "$n" --csv >/dev/null 2>&1 || true
    stop_wrapped "$SRV_PID"
    if [ "$kind" = sys ]; then
        awk '$NF == "total" { print $4 }' "$out"
    else
        grep -E '^(summary|totals):' "$out" | awk '{ print $2 }' | sort -n | tail -1
    fi
    echo "${be:--}"
}

# count_bench: system calls and instructions per request for A and B, differential.
count_bench() {
    local n1 n2 kind who name tmpl pipe r1 r2 be
    read -r n1 n2 <<<"$COUNT_N"
    for tool in strace valgrind; do
        command -v $tool >/dev/null || { echo "bench: $tool not found (scripts/install-deps.sh)" >&2; return 1; }
    done
    echo "bench: counting work per request (strace -c -f, valgrind --tool=callgrind;" \
        "n = $n1 and $n2 SET + GET each)" >&2
    : >"$TMP/count.tsv"
    for kind in sys ins; do
        for pipe in 1 16; do
            [ "$kind" = ins ] && [ "$pipe" = 16 ] && [ -z "${BENCH_COUNT_ALL:-}" ] && continue
            for who in A B; do
                if [ $who = A ]; then name=$A_NAME tmpl=$A_CMD; else name=$B_NAME tmpl=$B_CMD; fi
                mapfile -t r1 < <(count_run $kind "$name" "$tmpl" $pipe "$n1")
                mapfile -t r2 < <(count_run $kind "$name" "$tmpl" $pipe "$n2")
                be=${r2[1]}
                printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$pipe" "$name" "${r1[0]}" "${r2[0]}" "$be" \
                    >>"$TMP/count.tsv"
                echo "bench: $kind P$pipe $name: ${r1[0]} / ${r2[0]}" >&2
            done
        done
    done
    python3 - "$TMP/count.tsv" "$A_NAME" "$B_NAME" "$n1" "$n2" "$CLIENTS" <<'PY'
import sys
path, a, b, n1, n2 = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
clients = sys.argv[6]
rows = {}
for line in open(path):
    kind, pipe, srv, c1, c2, be = line.rstrip("\n").split("\t")
    rows[(kind, pipe, srv)] = ((float(c2) - float(c1)) / (2 * (n2 - n1)), be)
print(f"{'work per request':<22} {'P':>3} | {a:>12} {'backend':>8} | {b:>12} | {'ratio':>6}")
print("-" * 72)
for kind, label in (("sys", "system calls"), ("ins", "user instructions")):
    for pipe in ("1", "16"):
        if (kind, pipe, a) not in rows:
            continue
        va, be = rows[(kind, pipe, a)]
        vb = rows[(kind, pipe, b)][0]
        fmt = "{:>12.3f}" if kind == "sys" else "{:>12,.0f}"
        print(f"{label:<22} {pipe:>3} | " + fmt.format(va) + f" {be:>8} | " + fmt.format(vb) +
              f" | {va / vb if vb else float('nan'):>6.2f}")
print(f"\nSET+GET 64 B, c={clients}; (count(n={n2}) - count(n={n1})) / (2 * {n2 - n1}) requests;"
      " system calls: strace -c -f, instructions: valgrind --tool=callgrind (all threads)")
PY
}

case $MODE in
speed) speed_bench; if [ $COUNT = 1 ]; then echo; count_bench; fi ;;
count) count_bench ;;
memory) memory_bench ;;
both) speed_bench; echo; memory_bench ;;
esac
