#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Differential test (tests/compat/differential.py): 20,000 pseudo-random commands with valid and
# invalid arguments (half over RESP2, half over RESP3), sent to the server under test and to a
# reference redis-server; replies must be identical. Under CRESCENT_TEST_SERVER=redis both sides
# are redis-server.
set -u
. "$(dirname "$0")/../lib/server.sh"

start_server --memory 256mb
test_port=$SERVER_PORT
test_pid=$SERVER_PID
# The reference is always a plain redis-server.
saved=$CRESCENT_TEST_SERVER
CRESCENT_TEST_SERVER=redis
start_server --memory 256mb
CRESCENT_TEST_SERVER=$saved
ref_port=$SERVER_PORT
rc=0
for proto in 2 3; do
    timeout 300 /usr/bin/python3 "$(dirname "$0")/differential.py" "$test_port" "$ref_port" \
        10000 "$proto" "$proto" || rc=1
done
SERVER_PORT=$test_port SERVER_PID=$test_pid assert_server_alive
[ $rc -eq 0 ] || fail "replies differ from redis-server (see MISMATCH lines)"
