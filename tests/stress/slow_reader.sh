#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The pin scenario: a 64 MiB GET reply read slowly (and one stalled) while the key is
# overwritten, deleted, flushed and 1 GiB of filler forces eviction in a 512 MiB server; the
# readers must get the original bytes exactly.
set -u
. "$(dirname "$0")/../lib/server.sh"

prog="$CRESCENT_BUILD/tests/stress/slow_reader"
[ -x "$prog" ] || fail "$prog not built (make all)"
start_server --memory 512mb
timeout 300 "$prog" 127.0.0.1 "$SERVER_PORT" -s 64 -f 1024 || fail "slow_reader failed"
assert_server_alive
