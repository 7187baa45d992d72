#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The memory limit holds for every kind of data, as with redis-server's maxmemory: a flood of
# 1,000,000 tiny keys (8-byte values on random keys, via redis-benchmark) and 200 MiB of list
# and hash elements, each into a fresh 32 MiB server, must leave INFO used_memory within
# maxmemory (10 % slack) through eviction, while the cache still holds a useful amount of data.
set -u
. "$(dirname "$0")/../lib/server.sh"

info() {
    cli INFO "$1" | tr -d '\r' | sed -n "s/^$2://p"
}

failures=0
soft_fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# check_limit WHAT MIN_KEYS: used_memory within maxmemory, evictions happened, keys left.
# Records failures and goes on, so both phases are always reported.
check_limit() {
    local used max evicted keys
    used=$(info memory used_memory)
    max=$(info memory maxmemory)
    evicted=$(info stats evicted_keys)
    keys=$(cli DBSIZE)
    echo "$1: used_memory $used, maxmemory $max, keys $keys, evicted_keys $evicted"
    [ "$max" = 33554432 ] || soft_fail "$1: maxmemory is $max, expected 33554432"
    [ "$evicted" -gt 0 ] ||
        soft_fail "$1: no key was evicted although far more than 32 MiB was written"
    [ "$keys" -ge "$2" ] || soft_fail "$1: only $keys keys left in 32 MiB (expected at least $2)"
    [ "$used" -le $((max * 11 / 10)) ] ||
        soft_fail "$1: INFO used_memory $used exceeds maxmemory $max by more than 10 %"
    assert_server_alive
}

# 1. Tiny strings: per-key metadata must count against the limit (redis-server 7.0 keeps about
#    290,000 of these keys in 32 MiB).
start_server --memory 32mb
out=$(timeout 300 redis-benchmark -h 127.0.0.1 -p "$SERVER_PORT" -q -r 100000000 -n 1000000 \
    -t set -d 8 -P 64 -c 4 2>&1)
printf '%s\n' "$out" | tr '\r' '\n' | grep 'per second'
if printf '%s\n' "$out" | grep -qiE 'err|warn|could not'; then
    fail "redis-benchmark reported errors: $(printf '%s\n' "$out" | tr '\r' '\n' |
        grep -iE 'err|warn|could not' | head -3)"
fi
check_limit "1,000,000 tiny keys" 50000

# 2. Aggregates: 100 lists of 1,000 x 1 KiB elements and 100 hashes of 1,000 x 1 KiB fields.
start_server --memory 32mb
/usr/bin/python3 - "$SERVER_PORT" <<'PYEOF' || fail "writing lists and hashes failed"
import sys
import redis

OOM = "OOM command not allowed when used memory > 'maxmemory'."
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), socket_timeout=120)
v = b"e" * 1024
ok = oom = 0
for k in range(100):
    p = r.pipeline(transaction=False)
    for i in range(1000):
        p.rpush(f"list:{k}", v)
        p.hset(f"hash:{k}", f"f{i}", v)
    for x in p.execute(raise_on_error=False):
        if isinstance(x, redis.exceptions.ResponseError):
            if str(x) != OOM:
                sys.exit(f"unexpected error: {x}")
            oom += 1
        else:
            ok += 1
print(f"{ok} RPUSH/HSET OK, {oom} OOM")
PYEOF
check_limit "200 MiB of list and hash elements" 5
[ $failures -eq 0 ] || fail "$failures memory-limit check(s) failed (see above)"
echo "memory_limit: all checks passed"
