#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fragmented memory: a 64 MiB server filled with 1 MiB values, every other one deleted (1 MiB
# holes everywhere), must still accept 4, 8, 16 and 24 MiB values by evicting older keys, as
# redis-server does; everything that survives reads back intact.
set -u
. "$(dirname "$0")/../lib/server.sh"

if ! /usr/bin/python3 -c 'import redis' 2>/dev/null; then
    echo "skip: /usr/bin/python3 has no redis module (apt-get install python3-redis)"
    exit 77
fi
start_server --memory 64mb
/usr/bin/python3 - "$SERVER_PORT" <<'PYEOF' || fail "fragmentation checks failed"
import sys
import redis

MIB = 1 << 20
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), socket_timeout=120)


def value(seed, n):
    block = bytes((seed * 31 + i * 13) & 0xFF for i in range(4096))
    return (block * (n // 4096 + 1))[:n]


def check(what, expected, got):
    if expected != got:
        if isinstance(got, bytes):
            got = f"<{len(got)} bytes>"
        raise SystemExit(f"FAIL: {what}: expected {expected!r:.60}, got {got!r:.60}")


for i in range(56):
    check(f"SET f:{i}", True, r.set(f"f:{i}", value(i, MIB)))
deleted = sum(r.delete(f"f:{i}") for i in range(1, 56, 2))
print(f"56 x 1 MiB written, {deleted} odd ones deleted")
for size in (4, 8, 16, 24):
    try:
        check(f"SET big:{size} ({size} MiB)", True, r.set(f"big:{size}", value(100 + size, size * MIB)))
    except redis.exceptions.ResponseError as e:
        raise SystemExit(f"FAIL: SET big:{size} ({size} MiB) into fragmented memory: {e}")
    check(f"GET big:{size}", value(100 + size, size * MIB), r.get(f"big:{size}"))
survivors = 0
for i in range(0, 56, 2):
    v = r.get(f"f:{i}")
    if v is not None:
        check(f"GET f:{i}", value(i, MIB), v)
        survivors += 1
bigs = sum(1 for size in (4, 8, 16, 24) if r.get(f"big:{size}") is not None)
evicted = r.info("stats")["evicted_keys"]
print(f"{survivors} of 28 1 MiB values and {bigs} of 4 big values left; evicted_keys {evicted}")
check("big:24 still present (written last)", True, r.exists("big:24") == 1)
if evicted <= 0:
    raise SystemExit("FAIL: no eviction although 52 MiB were added to a 64 MiB server holding 28 MiB")
PYEOF
assert_server_alive
