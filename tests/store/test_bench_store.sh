#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# crescent-bench store end to end: a crescent-master, a `--operation serve` peer contributing a
# segment, then put / get / mixed runs with --verify --json over tcp, shm and fabric (libfabric's
# tcp;ofi_rxm provider; skipped with a message where it is missing) (batch 1 and 4,
# replica_num 2 on the second run); asserts the JSON result (throughput and operations > 0,
# percentiles ordered, no errors, no verify failures), that --keep leaves the objects and the
# default removes them, and that bad options exit 2. The master serves its embedded segment over
# fabric too (--embedded_segment_protocols), as fabric-only clients may be placed there.
set -u
. "$(dirname "$0")/../lib/ports.sh"
BIN=${CRESCENT_BUILD:?}/bin
tmp=$(mktemp -d /tmp/crescent-benchstore.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; cat "$tmp"/*.log 2>/dev/null | tail -20; exit 1; }

port=$(free_port)
"$BIN/crescent-master" --port "$port" --bind 127.0.0.1 --metrics_port 0 --memory 16mb \
    --embedded_segment_protocols tcp,shm,fabric \
    > "$tmp/master.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
    redis-cli -p "$port" PING 2>/dev/null | grep -q PONG && break
    sleep 0.05
done
redis-cli -p "$port" PING | grep -q PONG || fail "master did not start"
master=127.0.0.1:$port

for proto in tcp shm fabric; do
    exec 3< <(exec "$BIN/crescent-bench" store --master "$master" --operation serve \
        --protocol $proto --segment_size 64m --duration 120 2>&1)
    pids+=($!)
    read -r -t 60 -u 3 line || fail "$proto serve peer did not start"
    case $line in
    "serving segment "*) ;;
    *"transport fabric"*) echo "skip fabric: $line"; continue ;;
    *) fail "$proto serve line: '$line'" ;;
    esac
    for op in put get mixed; do
        for b in 1 4; do
            r=$(( b == 1 ? 1 : 2 ))
            out=$("$BIN/crescent-bench" store --master "$master" --protocol $proto --operation $op \
                --object_size 64k --batch_size $b --replica_num $r --threads 2 --keys 8 \
                --duration 0.3 --verify --json) || fail "$proto $op exit $?: $out"
            python3 - "$out" "$op" <<'PY' || fail "$proto $op batch $b: $out"
import json, sys
r = json.loads(sys.argv[1].splitlines()[-1])
op = sys.argv[2]
assert r["errors"] == 0 and r["verify_failures"] == 0, r
for side in (["put"] if op == "put" else ["get"] if op == "get" else ["put", "get"]):
    assert r[side + "_ops"] > 0 and r[side + "_GBps"] > 0, r
    assert 0 < r[side + "_p50_us"] <= r[side + "_p99_us"], r
PY
        done
    done
    kill "${pids[-1]}"
    wait "${pids[-1]}" 2>/dev/null
done

# The default run removes its objects, --keep leaves them (a segment to hold them first).
exec 3< <(exec "$BIN/crescent-bench" store --master "$master" --operation serve \
    --segment_size 64m --duration 120 2>&1)
pids+=($!)
read -r -t 60 -u 3 line || fail "serve peer did not start"
"$BIN/crescent-bench" store --master "$master" --object_size 4k --keys 4 --duration 0.2 \
    --json > /dev/null || fail "put run"
[ "$(redis-cli -p "$port" MC.STATS | sed -n '2p')" = 0 ] || fail "objects left without --keep"
"$BIN/crescent-bench" store --master "$master" --object_size 4k --keys 4 --duration 0.2 \
    --keep --json > /dev/null || fail "put --keep run"
[ "$(redis-cli -p "$port" MC.STATS | sed -n '2p')" = 4 ] || fail "--keep did not keep 4 objects"

for bad in "--operation nope" "--batch_size 0" "--replica_num 9" "--object_size x" ""; do
    # shellcheck disable=SC2086
    if [ -z "$bad" ]; then args=(); else args=(--master "$master" $bad); fi
    "$BIN/crescent-bench" store "${args[@]}" > /dev/null 2>&1
    [ $? -eq 2 ] || fail "'$bad' did not exit 2"
done
echo "ok: crescent-bench store"
