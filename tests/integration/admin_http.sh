#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# crescent-master's admin HTTP server: admin_http.py against a master with --metrics_port; then
# --metrics_port 0 (nothing listens) and a port already taken (logged, RESP still serves).
set -u
. "$(dirname "$0")/../lib/server.sh"

if server_is_redis; then
    echo "skip: the admin HTTP server is crescent-master's own"
    exit 77
fi
command -v promtool >/dev/null || fail "promtool missing (scripts/install-deps.sh installs prometheus)"
http=$(free_port)
start_server --memory 128mb --metrics_host 127.0.0.1 --metrics_port "$http"
grep -q "admin HTTP on 127.0.0.1:$http" "$SERVER_LOG" || fail "no admin HTTP line in the log"
timeout 300 /usr/bin/python3 "$(dirname "$0")/admin_http.py" "$SERVER_PORT" "$http" ||
    fail "admin_http.py failed"
assert_server_alive

# The port is taken by the first server: the second one says so and serves RESP anyway.
start_server --memory 16mb --metrics_host 127.0.0.1 --metrics_port "$http"
grep -q "admin HTTP server not started: cannot listen on 127.0.0.1:$http" "$SERVER_LOG" ||
    fail "busy admin port not reported"
assert_eq "PING on the second server" PONG "$(cli ping)"

# --metrics_port 0: no listener at all (nor the embedded segment's transfer listener).
start_server --memory 16mb --metrics_port 0 --embedded_segment_in_pool no
if grep -q "admin HTTP" "$SERVER_LOG"; then fail "admin HTTP started with --metrics_port 0"; fi
if ss -ltnp 2>/dev/null | grep "pid=$SERVER_PID," | grep -v ":$SERVER_PORT " | grep -q LISTEN; then
    fail "server with --metrics_port 0 listens on a second TCP port"
fi
echo "admin_http.sh: ok"
