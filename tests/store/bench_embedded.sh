#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The master's embedded segment against a client's (not part of make test): crescent-bench store
# put / get of 1 MiB objects, batch 16, over tcp and shm, alternating a master whose embedded
# segment is the pool's only segment with a master whose pool holds one `--operation serve`
# peer's segment (embedded_segment_in_pool no). Prints one line per run: where, protocol,
# operation, GB/s, errors. ROUNDS (default 3) rounds.
set -u
B=${CRESCENT_BUILD:-build}/bin
. "$(dirname "$0")/../lib/ports.sh"
run() { # label, master flags, peer (yes/no), protocol
    local port
    port=$(free_port)
    "$B/crescent-master" --port "$port" --bind 127.0.0.1 --metrics_port 0 --memory 1gb $2 \
        --logfile /dev/null >/dev/null 2>&1 &
    local mp=$! pp=""
    until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
    if [ "$3" = yes ]; then
        exec 3< <(exec "$B/crescent-bench" store --master "127.0.0.1:$port" --operation serve \
            --protocol "$4" --segment_size 1g --duration 120 2>&1)
        pp=$!
        read -r -t 60 -u 3 _
    fi
    for op in put get; do
        r=$(timeout 60 "$B/crescent-bench" store --master "127.0.0.1:$port" --protocol "$4" \
            --object_size 1m --batch_size 16 --keys 256 --duration 3 --operation $op --json \
            2>/dev/null | tail -1)
        echo "$1 $4 $op $(echo "$r" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read())
print(d["put_GBps"] if d["operation"] == "put" else d["get_GBps"], d["errors"])')"
    done
    [ -n "$pp" ] && kill "$pp" 2>/dev/null
    kill "$mp"
    sleep 0.5
}
for _ in $(seq "${ROUNDS:-3}"); do
    for proto in tcp shm; do
        run embedded "" no $proto
        run peer "--embedded_segment_in_pool no" yes $proto
    done
done
