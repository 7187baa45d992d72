#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pub/sub (tests/compat/pubsub.py): deterministic scenarios byte-compared with a reference
# redis-server, then fan-out across event-loop threads (--threads 2), redis-py, a slow
# subscriber cut off by the pubsub output limit and the KV events of the pool. Runs on both io
# backends through CRESCENT_IO_BACKEND like the other network suites.
set -u
. "$(dirname "$0")/../lib/server.sh"

start_server --memory 256mb --threads 2
test_port=$SERVER_PORT
test_pid=$SERVER_PID
test_log=$SERVER_LOG
saved=$CRESCENT_TEST_SERVER
CRESCENT_TEST_SERVER=redis
start_server --memory 256mb
CRESCENT_TEST_SERVER=$saved
ref_port=$SERVER_PORT
timeout 300 /usr/bin/python3 "$(dirname "$0")/pubsub.py" "$test_port" "$ref_port" \
    "$CRESCENT_TEST_SERVER" ||
    fail "pub/sub checks failed"
SERVER_PORT=$test_port SERVER_PID=$test_pid assert_server_alive
if ! server_is_redis; then
    grep -q "closed ASAP for overcoming of output buffer limits" "$test_log" ||
        fail "no log line for the subscriber closed by the output limit"
fi
