#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Races on hot lists, hashes and sets for 4 s (4 event-loop threads in crescent-master): pushes,
# pops, trims, field updates and DELs against LRANGE/LINDEX/HGETALL/HGET/SMEMBERS readers; see
# tests/stress/aggregate_race.c.
set -u
. "$(dirname "$0")/../lib/server.sh"

prog="$CRESCENT_BUILD/tests/stress/aggregate_race"
[ -x "$prog" ] || fail "$prog not built (make all)"
start_server --memory 64mb --threads 4
timeout 300 "$prog" 127.0.0.1 "$SERVER_PORT" -t 4 || fail "aggregate_race failed"
assert_server_alive
