#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Snapshots of the pool metadata with OBJECTS objects (default 1,000,000; one replica, 64-byte
# keys): for ROUNDS rounds, MC.SNAPSHOT of the running master (fork to published: duration, the
# pool lock held around fork, file size) while a probe client measures the slowest MC.EXIST
# round trip, then a restart with --enable_snapshot_restore (load time). Prints every round and
# the medians. Usage: bench/bench-snapshot.sh [BUILD_DIR]     (make bench-snapshot)
set -eu
BUILD=${1:-build}
OBJECTS=${OBJECTS:-1000000}
ROUNDS=${ROUNDS:-3}
. "$(dirname "$0")/../tests/lib/ports.sh"
tmp=$(mktemp -d /tmp/crescent-bench-snapshot.XXXXXX)
pid=
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
C=0123456789abcdef0123456789abcdef

start() { # start EXTRA_ARGS...: a master on a new port, waits for PING
    port=$(free_port)
    "$BUILD/bin/crescent-master" --bind 127.0.0.1 --port "$port" --memory 16mb --metrics_port 0 \
        --snapshot_local_path "$tmp" --client_live_ttl_sec 3600 "$@" >>"$tmp/master.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
    echo "master did not start"; exit 1
}
info() { redis-cli -p "$port" INFO snapshot | tr -d '\r' | sed -n "s/^$1://p"; }

start --enable_snapshot yes --snapshot_retention_count 1
redis-cli -p "$port" MC.REGISTER $C bench-host >/dev/null
redis-cli -p "$port" MC.MOUNT $C seg 4096 $((OBJECTS * 128 + (1 << 30))) ENDPOINT 127.0.0.1:1 >/dev/null
python3 -c "
import sys
w = sys.stdout.write
for i in range($OBJECTS):
    k = 'object:%057d' % i
    w('*4\r\n\$11\r\nMC.PUTSTART\r\n\$32\r\n$C\r\n\$64\r\n%s\r\n\$2\r\n64\r\n' % k)
    w('*3\r\n\$9\r\nMC.PUTEND\r\n\$32\r\n$C\r\n\$64\r\n%s\r\n' % k)
" | redis-cli -p "$port" --pipe >/dev/null
echo "objects: $(redis-cli -p "$port" MC.STATS | tr -d '\r' | grep -A1 -x objects | tail -1)," \
     "master RSS $(($(awk '/VmRSS/ {print $2}' /proc/$pid/status) / 1024)) MiB"

probe() { # the slowest MC.EXIST round trip (ms) while the flag file exists
    python3 - "$port" "$tmp/probing" <<'PY'
import os, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
req = b"*2\r\n$8\r\nMC.EXIST\r\n$8\r\nobject:1\r\n"
worst = 0.0
while os.path.exists(sys.argv[2]):
    t = time.perf_counter()
    s.sendall(req)
    s.recv(64)
    worst = max(worst, time.perf_counter() - t)
    time.sleep(0.0005)
print("%.2f" % (worst * 1000))
PY
}

printf '%-6s %12s %12s %14s %12s %12s\n' round "snapshot ms" "pause us" "probe max ms" "MiB" "restore ms"
for r in $(seq "$ROUNDS"); do
    n=$(info snapshot_ok)
    touch "$tmp/probing"
    probe >"$tmp/probe.out" &
    ppid=$!
    sleep 0.3
    redis-cli -p "$port" MC.SNAPSHOT >/dev/null
    until [ "$(info snapshot_ok)" -gt "$n" ]; do sleep 0.02; done
    sleep 0.2
    rm -f "$tmp/probing"
    wait $ppid
    row="$(info snapshot_last_duration_ms) $(info snapshot_last_pause_us) $(cat "$tmp/probe.out")"
    row+=" $(($(info snapshot_last_bytes) / 1048576))"
    # restore: a second master loads the same snapshot
    keep_pid=$pid keep_port=$port
    start --enable_snapshot_restore yes
    row+=" $(info snapshot_restore_ms)"
    [ "$(info snapshot_restored_objects)" = "$OBJECTS" ] || { echo "restore lost objects"; exit 1; }
    kill $pid; wait $pid 2>/dev/null || true
    pid=$keep_pid port=$keep_port
    echo "$r $row" | tee -a "$tmp/rows" | awk '{printf "%-6s %12s %12s %14s %12s %12s\n", $1, $2, $3, $4, $5, $6}'
done
sort -n -k2 "$tmp/rows" | awk '{a[NR]=$2} END {printf "median snapshot ms %s", a[int((NR+1)/2)]}'
sort -n -k3 "$tmp/rows" | awk '{a[NR]=$3} END {printf ", pause us %s", a[int((NR+1)/2)]}'
sort -n -k4 "$tmp/rows" | awk '{a[NR]=$4} END {printf ", probe max ms %s", a[int((NR+1)/2)]}'
sort -n -k6 "$tmp/rows" | awk '{a[NR]=$6} END {printf ", restore ms %s\n", a[int((NR+1)/2)]}'
echo "targets: snapshot of 1 M objects <= 2000 ms with <= 10 ms pause (docs/ha.md)"
