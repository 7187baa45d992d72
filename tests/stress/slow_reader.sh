#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The pin scenario: a 64 MiB GET reply read slowly (and one stalled) while the key is
# overwritten, deleted, flushed and filler twice the memory size forces eviction; the readers
# must get the original bytes exactly. Eight readers then vanish mid-reply; a final 200 MiB
# SET must fit, so none of their 64 MiB values may stay pinned. redis-server counts the readers'
# 64 MiB output-buffer copies and big query buffers as used memory, so it gets twice the memory
# (and filler).
set -u
. "$(dirname "$0")/../lib/server.sh"

prog="$CRESCENT_BUILD/tests/stress/slow_reader"
[ -x "$prog" ] || fail "$prog not built (make all)"
if server_is_redis; then
    mem_mib=512
else
    mem_mib=256
fi
start_server --memory ${mem_mib}mb
timeout 300 "$prog" 127.0.0.1 "$SERVER_PORT" -s 64 -f $((2 * mem_mib)) -l 200 || fail "slow_reader failed"
assert_server_alive
