#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs tests/compat/protocol.py (raw-socket RESP robustness) against a fresh server and a
# second one with a password (for the unauthenticated request-size limits) and a third with
# --timeout 1 (idle clients are closed).
set -u
. "$(dirname "$0")/../lib/server.sh"

start_server --memory 128mb --requirepass pr0t0
auth_port=$SERVER_PORT
start_server --memory 64mb --timeout 1
timeout_port=$SERVER_PORT
start_server --memory 256mb
timeout 180 /usr/bin/python3 "$(dirname "$0")/protocol.py" "$SERVER_PORT" "$auth_port" pr0t0 \
    "$timeout_port" ||
    fail "protocol.py failed"
assert_server_alive
