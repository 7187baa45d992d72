#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hot-key races for 4 s in a 16 MiB server (4 event-loop threads in crescent-master): SET,
# SET ... GET, GETSET, GETDEL and DEL against concurrent GET/MGET and eviction; see
# tests/stress/overwrite_race.c.
set -u
. "$(dirname "$0")/../lib/server.sh"

prog="$CRESCENT_BUILD/tests/stress/overwrite_race"
[ -x "$prog" ] || fail "$prog not built (make all)"
start_server --memory 16mb --threads 4
timeout 300 "$prog" 127.0.0.1 "$SERVER_PORT" -t 4 -m 16 || fail "overwrite_race failed"
assert_server_alive
