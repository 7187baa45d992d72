#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# OOM when nothing can be freed (tests/stress/oom.py): a value larger than the memory limit,
# and (crescent-master only) a write that needs memory held by pinned replies in flight.
set -u
. "$(dirname "$0")/../lib/server.sh"

if ! /usr/bin/python3 -c 'import redis' 2>/dev/null; then
    echo "skip: /usr/bin/python3 has no redis module (apt-get install python3-redis)"
    exit 77
fi
start_server --memory 16mb
small_port=$SERVER_PORT
if server_is_redis; then
    timeout 120 /usr/bin/python3 "$(dirname "$0")/oom.py" "$small_port" --redis || fail "oom.py failed"
else
    start_server --memory 64mb
    timeout 120 /usr/bin/python3 "$(dirname "$0")/oom.py" "$small_port" "$SERVER_PORT" ||
        fail "oom.py failed"
fi
assert_server_alive
