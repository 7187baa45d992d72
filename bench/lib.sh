# SPDX-License-Identifier: Apache-2.0
# Shared set-up of the bench/ scripts. Source it from the repository root:
#   . bench/lib.sh; bench_setup NAME
# bench_setup creates $TMP (/tmp/crescent-NAME.XXXXXX) and the PIDS array; on exit every pid in
# PIDS gets SIGTERM, then SIGKILL after 5 s, and $TMP is removed. free_port comes from
# tests/lib/ports.sh. bench_load_strings loads a data set through redis-cli --pipe.
. tests/lib/ports.sh

bench_cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    rm -rf "$TMP"
}

bench_setup() {
    TMP=$(mktemp -d "/tmp/crescent-$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}

# bench_load_strings PORT KEYS SIZE: SETs key:%012d (redis-benchmark's key:__rand_int__) for
# KEYS keys on 127.0.0.1:PORT, each value SIZE bytes that start with the key's number.
bench_load_strings() {
    python3 - "$2" "$3" <<'EOF' | redis-cli -h 127.0.0.1 -p "$1" --pipe >/dev/null
import sys
n, size = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout.buffer
for i in range(n):
    k = b"key:%012d" % i
    v = (b"%012d" % i) * (size // 12) + b"v" * (size % 12)
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
EOF
}
