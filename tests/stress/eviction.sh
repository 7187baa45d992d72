#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Eviction under sustained writes: 200,000 checksummed SETs (about 250 MiB) into a 32 MiB
# server (4 event-loop threads in crescent-master) with a concurrent reader; see
# tests/stress/eviction.c for what is checked.
set -u
. "$(dirname "$0")/../lib/server.sh"

prog="$CRESCENT_BUILD/tests/stress/eviction"
[ -x "$prog" ] || fail "$prog not built (make all)"
start_server --memory 32mb --threads 4
timeout 300 "$prog" 127.0.0.1 "$SERVER_PORT" -n 200000 -w 2 -k 100000 || fail "eviction failed"
assert_server_alive
