#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs tests/compat/redis_py.py (redis-py from Debian python3-redis) against a fresh server.
# /usr/bin/python3 on purpose: a python3 earlier in PATH may lack the redis module.
set -u
. "$(dirname "$0")/../lib/server.sh"

if ! /usr/bin/python3 -c 'import redis' 2>/dev/null; then
    echo "skip: /usr/bin/python3 has no redis module (apt-get install python3-redis)"
    exit 77
fi
sock="$SRV_TMP/crescent.sock"
start_server --memory 256mb --unixsocket "$sock"
timeout 120 /usr/bin/python3 "$(dirname "$0")/redis_py.py" "$SERVER_PORT" "$sock" ||
    fail "redis_py.py failed"
assert_server_alive
