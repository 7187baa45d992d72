#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Figures of the one keyspace for docs/store.md (not a test: no threshold):
#  1. GET of a 64 MiB value through plain RESP: from a pool object in a client segment over tcp
#     and over shm (a master with --memory 0, a `crescent-bench store --operation serve` client
#     holding the segment), and from the embedded segment: the median of 9 GETs of each.
#  2. redis-benchmark SET (pipelined) on an embedded-segment master while the pool is empty
#     (no pool mutex taken) and while it holds one object (every SET looks its key up in the
#     pool): ROUNDS alternating rounds (default 5).
# Needs /usr/bin/python3 with the redis module, redis-benchmark and redis-cli.
set -eu
B=${CRESCENT_BUILD:-$(pwd)/build}
tmp=$(mktemp -d /tmp/crescent-ks-bench.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do redis-cli -p "$1" PING >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }

measure() { # port label
    /usr/bin/python3 - "$1" "$2" <<'PY'
import redis, socket, statistics, sys, time
port, label = int(sys.argv[1]), sys.argv[2]
n = 64 << 20
assert redis.Redis(port=port).set("big", bytes(range(256)) * (n // 256))
s = socket.create_connection(("127.0.0.1", port))
buf = bytearray(n + 64)
want = len(b"$%d\r\n" % n) + n + 2
ts = []
for _ in range(9):
    t = time.perf_counter()
    s.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n")
    view, got = memoryview(buf), 0
    while got < want:
        got += s.recv_into(view[got:], want - got)
    ts.append(time.perf_counter() - t)
    assert buf[:1] == b"$" and buf[want - n - 2:want - 2] == bytes(range(256)) * (n // 256)
print("%-26s GET 64 MiB: median %.1f ms of 9" % (label, statistics.median(ts) * 1000))
PY
}

for proto in tcp shm; do
    port=$(free_port)
    "$B/bin/crescent-master" --port "$port" --bind 127.0.0.1 --metrics_port 0 --memory 0 \
        --logfile "$tmp/master-$proto.log" &
    pids+=($!)
    wait_port "$port"
    "$B/bin/crescent-bench" store --master "127.0.0.1:$port" --operation serve --protocol "$proto" \
        --segment_size 256m --duration 600 >"$tmp/serve-$proto.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$port" MC.SEGMENTS | wc -l)" -gt 1 ] && break
        sleep 0.1
    done
    measure "$port" "pool object over $proto"
done
port=$(free_port)
"$B/bin/crescent-master" --port "$port" --bind 127.0.0.1 --metrics_port 0 --memory 1gb \
    --client_live_ttl_sec 3600 --logfile "$tmp/master-embedded.log" &
pids+=($!)
wait_port "$port"
measure "$port" "embedded segment"

bench_set() { # port
    redis-benchmark -p "$1" -t set -n 400000 -c 50 -P 16 -r 100000 -q 2>/dev/null | tr '\r' '\n' |
        grep -o 'SET: [0-9.]*' | tail -1
}
id=0123456789abcdef0123456789abcdef
redis-cli -p "$port" MC.REGISTER $id bench >/dev/null
redis-cli -p "$port" MC.MOUNT $id bench-seg 4096 1048576 >/dev/null
for round in $(seq "${ROUNDS:-5}"); do
    redis-cli -p "$port" MC.REMOVEALL FORCE >/dev/null
    echo "round $round, pool empty:      $(bench_set "$port") requests/s"
    redis-cli -p "$port" MC.PUTSTART $id pool-key 10 >/dev/null
    redis-cli -p "$port" MC.PUTEND $id pool-key >/dev/null
    echo "round $round, one pool object: $(bench_set "$port") requests/s"
done
