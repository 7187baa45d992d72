#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A flood of tiny keys (1,000,000 SETs of 8-byte values on random keys, via redis-benchmark)
# into a 32 MiB server: eviction must keep INFO used_memory within maxmemory (10 % slack), as
# redis-server does, while the cache still holds a useful number of keys. Per-key metadata
# counts against the memory limit like the values do.
set -u
. "$(dirname "$0")/../lib/server.sh"

start_server --memory 32mb
out=$(timeout 300 redis-benchmark -h 127.0.0.1 -p "$SERVER_PORT" -q -r 100000000 -n 1000000 \
    -t set -d 8 -P 64 -c 4 2>&1)
printf '%s\n' "$out" | tr '\r' '\n' | grep 'per second'
if printf '%s\n' "$out" | grep -qiE 'err|warn|could not'; then
    fail "redis-benchmark reported errors: $(printf '%s\n' "$out" | tr '\r' '\n' |
        grep -iE 'err|warn|could not' | head -3)"
fi
info() {
    cli INFO "$1" | tr -d '\r' | sed -n "s/^$2://p"
}
used=$(info memory used_memory)
max=$(info memory maxmemory)
evicted=$(info stats evicted_keys)
keys=$(cli DBSIZE)
echo "used_memory $used, maxmemory $max, keys $keys, evicted_keys $evicted"
assert_eq "maxmemory" 33554432 "$max"
[ "$evicted" -gt 0 ] || fail "no key was evicted although 1,000,000 keys were written"
[ "$keys" -ge 50000 ] || fail "only $keys tiny keys fit in 32 MiB (redis-server 7.0: ~290,000)"
[ "$used" -le $((max * 11 / 10)) ] ||
    fail "INFO used_memory $used exceeds maxmemory $max by more than 10 % after eviction"
assert_server_alive
