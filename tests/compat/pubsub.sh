#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pub/sub (tests/compat/pubsub.py): deterministic scenarios byte-compared with a reference
# redis-server, then fan-out across event-loop threads (--threads 2), redis-py, a slow
# subscriber cut off by the pubsub output limit and the KV events of the pool; last a redis-cli
# SUBSCRIBE / PSUBSCRIBE / PUBLISH round trip. Runs on both io backends through
# CRESCENT_IO_BACKEND like the other network suites.
set -u
. "$(dirname "$0")/../lib/server.sh"

# The KV-event scenario fills its own 1 MiB segment to see evictions: the master's embedded
# segment stays out of the pool so every put lands there.
start_server --memory 256mb --threads 2 --embedded_segment_in_pool no
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
# redis-cli round trip across connections: SUBSCRIBE and PSUBSCRIBE in two redis-cli processes,
# PUBLISH from a third.
out1="$SRV_TMP/cli-sub.out"
out2="$SRV_TMP/cli-psub.out"
timeout 10 redis-cli -p "$test_port" SUBSCRIBE cli:news >"$out1" 2>&1 &
sub1=$!
timeout 10 redis-cli -p "$test_port" PSUBSCRIBE 'cli:*' >"$out2" 2>&1 &
sub2=$!
for _ in $(seq 100); do
    [ "$(redis-cli -p "$test_port" PUBSUB NUMSUB cli:news | tail -1)" = 1 ] &&
        [ "$(redis-cli -p "$test_port" PUBSUB NUMPAT)" = 1 ] && break
    sleep 0.1
done
assert_eq "redis-cli PUBLISH receivers" 2 "$(redis-cli -p "$test_port" PUBLISH cli:news hello)"
for _ in $(seq 100); do
    grep -q hello "$out1" && grep -q hello "$out2" && break
    sleep 0.1
done
kill "$sub1" "$sub2" 2>/dev/null
wait "$sub1" "$sub2" 2>/dev/null
assert_eq "redis-cli SUBSCRIBE output" "$(printf 'subscribe\ncli:news\n1\nmessage\ncli:news\nhello')" \
    "$(cat "$out1")"
assert_eq "redis-cli PSUBSCRIBE output" \
    "$(printf 'psubscribe\ncli:*\n1\npmessage\ncli:*\ncli:news\nhello')" "$(cat "$out2")"
SERVER_PORT=$test_port SERVER_PID=$test_pid assert_server_alive
if ! server_is_redis; then
    grep -q "closed ASAP for overcoming of output buffer limits" "$test_log" ||
        fail "no log line for the subscriber closed by the output limit"
fi
