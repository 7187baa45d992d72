#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The store on two "hosts": two network namespaces joined by a veth pair, each with its own
# address and so its own host identity (the transfer engine's same-host id includes the
# network namespace). crescent-master runs in the first; one `crescent-bench store --operation
# serve` client holds a segment in each (protocol shm, which also installs tcp); library
# clients (crescent-bench store) run in either namespace with --local_hostname set to their
# namespace's address. Checks, from the clients' per-interface byte counts and MC.SEGMENTS:
#   - PREFER_SAME_NODE puts land on the writer's host and move over shm only, from either host;
#   - without it (random strategy) objects land on both hosts: those on the other host go over
#     tcp, those on the same host over shm (shm is chosen only on the same host);
#   - a master with --allocation_strategy local_first places on the writer's host unasked.
# Skips (exit 77) with a message where network namespaces cannot be created (needs root).
set -u
BIN=${CRESCENT_BUILD:?}/bin
tag=cs$$
ns1=${tag}a ns2=${tag}b
ip1=10.213.$(($$ % 200)).1 ip2=10.213.$(($$ % 200)).2
port=50051
tmp=$(mktemp -d /tmp/crescent-netns.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    ip netns del "$ns1" 2>/dev/null
    ip netns del "$ns2" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -5 "$tmp"/*.log 2>/dev/null; exit 1; }

if ! ip netns add "$ns1" 2>"$tmp/netns.err"; then
    echo "SKIP: cannot create network namespaces ($(head -1 "$tmp/netns.err"))"
    exit 77
fi
ip netns add "$ns2" || fail "ip netns add $ns2"
ip link add "${tag}0" type veth peer name "${tag}1" || fail "veth pair"
ip link set "${tag}0" netns "$ns1" && ip link set "${tag}1" netns "$ns2" || fail "veth move"
ip -n "$ns1" addr add "$ip1/24" dev "${tag}0" && ip -n "$ns2" addr add "$ip2/24" dev "${tag}1" ||
    fail "addresses"
ip -n "$ns1" link set lo up && ip -n "$ns1" link set "${tag}0" up || fail "links up in $ns1"
ip -n "$ns2" link set lo up && ip -n "$ns2" link set "${tag}1" up || fail "links up in $ns2"
in1() { ip netns exec "$ns1" "$@"; }
in2() { ip netns exec "$ns2" "$@"; }
cli() { in1 redis-cli -h "$ip1" -p "$port" "$@"; }

# pool_up [master flags...]: the master in ns1, a serve client with a 64 MiB segment in each
# namespace; sets SEG1 and SEG2 (segment names).
pool_up() {
    # not loopback: protected mode would refuse the clients (no password on a test master)
    ip netns exec "$ns1" "$BIN/crescent-master" --port "$port" --bind "$ip1" --metrics_port 0 \
        --memory 1mb --protected-mode no "$@" >"$tmp/master.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        [ "$(cli PING 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    [ "$(cli PING 2>/dev/null)" = PONG ] || fail "master did not start in $ns1"
    local i ns ip
    for i in 1 2; do
        ns=$([ $i = 1 ] && echo "$ns1" || echo "$ns2")
        ip=$([ $i = 1 ] && echo "$ip1" || echo "$ip2")
        ip netns exec "$ns" "$BIN/crescent-bench" store --master "$ip1:$port" --operation serve \
            --protocol shm --local_hostname "$ip" --segment_size 64m --duration 300 \
            >"$tmp/serve$i.log" 2>&1 &
        pids+=($!)
        for _ in $(seq 300); do
            grep -qs "^serving segment" "$tmp/serve$i.log" && break
            sleep 0.1
        done
        local seg
        seg=$(sed -n 's/^serving segment \([^ ]*\) .*/\1/p' "$tmp/serve$i.log")
        [ -n "$seg" ] || fail "serve client $i did not start"
        eval "SEG$i=$seg"
    done
}

pool_down() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    pids=()
}

# used SEGMENT -> its used bytes (MC.SEGMENTS)
used() {
    cli MC.SEGMENTS | awk -v s="$1" 'f == 2 { print; exit } f == 1 && $0 == "used" { f = 2 }
        $0 == s { f = 1 }'
}

# run NS IP args... -> the bench client's JSON line in $OUT (fails on errors)
run() {
    local ns=$1 ip=$2
    shift 2
    OUT=$(ip netns exec "$ns" "$BIN/crescent-bench" store --master "$ip1:$port" --protocol shm \
        --local_hostname "$ip" --duration 0.4 --verify --json "$@" 2>"$tmp/client.log") ||
        fail "client in $ns ($*): $OUT $(cat "$tmp/client.log")"
    OUT=$(tail -1 <<<"$OUT")
}

# expect "python condition on r" description
expect() {
    python3 - "$OUT" "$1" <<'PY' || fail "$2: $OUT"
import json, sys
r = json.loads(sys.argv[1])
assert r["errors"] == 0 and r["verify_failures"] == 0, r
assert eval(sys.argv[2]), sys.argv[2]
PY
}

pool_up
for side in 1 2; do
    ns=$([ $side = 1 ] && echo "$ns1" || echo "$ns2")
    ip=$([ $side = 1 ] && echo "$ip1" || echo "$ip2")
    run "$ns" "$ip" --operation mixed --object_size 64k --keys 16 --prefer_same_node --keep
    expect 'r["shm_bytes"] > 0 and r["tcp_bytes"] == 0 and r["put_ops"] > 0 and r["get_ops"] > 0' \
        "host $side: prefer_same_node moves bytes over shm only"
    own=$([ $side = 1 ] && echo "$SEG1" || echo "$SEG2")
    other=$([ $side = 1 ] && echo "$SEG2" || echo "$SEG1")
    [ "$(used "$own")" -gt 0 ] && [ "$(used "$other")" = 0 ] ||
        fail "host $side: prefer_same_node placed on $own $(used "$own") B, $other $(used "$other") B"
    [ "$(cli MC.REMOVEALL FORCE)" -gt 0 ] || fail "nothing to remove after host $side"
done
# Random placement from host 1: 64 objects land on both segments (all on one: 2^-63).
run "$ns1" "$ip1" --operation mixed --object_size 4k --keys 64 --keep
expect 'r["shm_bytes"] > 0 and r["tcp_bytes"] > 0' "random placement: shm to host 1, tcp to host 2"
[ "$(used "$SEG1")" -gt 0 ] && [ "$(used "$SEG2")" -gt 0 ] || fail "random placement used one segment"
cli MC.REMOVEALL FORCE >/dev/null
pool_down

pool_up --allocation_strategy local_first
[ "$(cli CONFIG GET allocation_strategy | tail -1)" = local_first ] || fail "not a local_first master"
run "$ns2" "$ip2" --operation mixed --object_size 64k --keys 16 --keep
[ "$(used "$SEG2")" -gt 0 ] && [ "$(used "$SEG1")" = 0 ] ||
    fail "local_first placed $(used "$SEG1") B on host 1's segment, $(used "$SEG2") B on host 2's"
expect 'r["shm_bytes"] > 0 and r["tcp_bytes"] == 0' "local_first: host 2 writes stay on host 2"
echo "ok: store on two network namespaces (prefer_same_node, local_first, shm only on the same host)"
