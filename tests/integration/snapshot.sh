#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Snapshots of the pool metadata (docs/ha.md, "Snapshots"): MC.SNAPSHOT writes one under
# <dir>/mooncake_master_snapshot/<cluster>/<id>/, retention keeps the newest N, a master killed
# with -9 and restarted with --enable_snapshot_restore serves the same objects at the same
# addresses, a corrupt latest snapshot is refused with a reason and the previous one is loaded,
# the Redis catalog (a real redis-server) can be read with redis-cli, and bad settings stop the
# start with a clear message.
# The made-up segments are the pool's only ones: the embedded segment stays out of it
# (embedded_segment_in_pool no; snapshots leave it out anyway, tests/unit/pool/test_pool_shared.c).
set -u
. "$(dirname "$0")/../lib/server.sh"

if server_is_redis; then
    echo "skip: snapshots are crescent-master's own"
    exit 77
fi
C1=11111111111111111111111111111111
C2=22222222222222222222222222222222
SNAP=$SRV_TMP/snapshots

# forget_server PID: a server this test killed on purpose (kill -9) is not a crash.
forget_server() {
    local i
    for i in "${!SRV_PIDS[@]}"; do
        [ "${SRV_PIDS[$i]}" = "$1" ] && unset 'SRV_PIDS[i]' 'SRV_LOGS[i]'
    done
    wait "$1" 2>/dev/null
}

# wait_snapshots N: waits until INFO snapshot says snapshot_ok:N.
wait_snapshots() {
    local i
    for ((i = 0; i < 300; i++)); do
        [ "$(cli INFO snapshot | tr -d '\r' | sed -n 's/^snapshot_ok://p')" = "$1" ] && return 0
        sleep 0.05
    done
    fail "snapshot $1 not done: $(cli INFO snapshot | tr -d '\r' | tr '\n' ' ')"
}

info_field() {
    cli INFO snapshot | tr -d '\r' | sed -n "s/^$1://p"
}

# Two clients, two segments, 40 objects (two replicas each), a hard-pinned one, a write left in
# flight (not durable: never restored).
fill() {
    assert_eq "register c1" OK "$(cli MC.REGISTER $C1 hostA)"
    assert_eq "register c2" OK "$(cli MC.REGISTER $C2 hostB)"
    assert_eq "mount a" OK "$(cli MC.MOUNT $C1 seg-a 268435456 16777216 ENDPOINT 127.0.0.1:7001)"
    assert_eq "mount b" OK "$(cli MC.MOUNT $C2 seg-b 536870912 16777216 ENDPOINT 127.0.0.1:7002)"
    for i in $(seq 1 40); do
        cli MC.PUTSTART $C1 "key-$i" $((i * 1000 + 7)) REPLICAS 2 >/dev/null
        assert_eq "putend key-$i" OK "$(cli MC.PUTEND $C1 "key-$i")"
    done
    cli MC.PUTSTART $C2 pinned 5000 HARDPIN >/dev/null
    assert_eq "putend pinned" OK "$(cli MC.PUTEND $C2 pinned)"
    cli MC.PUTSTART $C1 pending 4096 >/dev/null
}

# The admin view of every object, with the lease field dropped (reads are not leases here).
dump_keys() {
    local k
    for k in $(seq -f 'key-%g' 1 40) pinned "$@"; do
        echo "== $k"
        cli MC.QUERYKEY "$k"
    done
}

# ---- embedded catalog: write, retention, kill -9, restore --------------------------------
http=$(free_port)
start_server --memory 16mb --embedded_segment_in_pool no --enable_snapshot yes --snapshot_local_path "$SNAP" \
    --snapshot_retention_count 2 --cluster_id emb --metrics_host 127.0.0.1 --metrics_port "$http"
fill
before=$(dump_keys)
assert_eq "MC.SNAPSHOT" "Snapshot started" "$(cli MC.SNAPSHOT)"
wait_snapshots 1
DIR=$SNAP/mooncake_master_snapshot/emb
first=$(info_field snapshot_last_id)
[ -s "$DIR/$first/metadata" ] || fail "no metadata file in $DIR/$first"
assert_eq "descriptor" "0|0|" "$(cut -d'|' -f1-2 "$DIR/$first/descriptor.txt")|"
assert_eq "latest.txt" "$first" "$(cat "$DIR/latest.txt")"
assert_eq "objects in the snapshot" 41 "$(info_field snapshot_last_objects)"
cli MC.SNAPSHOT >/dev/null
wait_snapshots 2
second=$(info_field snapshot_last_id)
# a key the newest snapshot has and the previous one does not
cli MC.PUTSTART $C1 late 100 >/dev/null
assert_eq "putend late" OK "$(cli MC.PUTEND $C1 late)"
cli MC.SNAPSHOT >/dev/null
wait_snapshots 3
third=$(info_field snapshot_last_id)
assert_eq "retention keeps 2" "$second $third" "$(ls "$DIR" | grep -v latest | sort | tr '\n' ' ' | sed 's/ $//')"
assert_eq "latest is the newest" "$third" "$(cat "$DIR/latest.txt")"
[ ! -e "$DIR/$first" ] || fail "the oldest snapshot was not deleted"
assert_eq "/metrics snapshots" 'crescent_snapshots_total{result="ok"} 3' \
    "$(curl -s "http://127.0.0.1:$http/metrics" | grep '^crescent_snapshots_total{result="ok"}')"
late_before=$(cli MC.QUERYKEY late)
kill -9 "$SERVER_PID"
forget_server "$SERVER_PID"

start_server --memory 16mb --embedded_segment_in_pool no --enable_snapshot_restore yes --snapshot_local_path "$SNAP" \
    --cluster_id emb
grep -q "restored snapshot $third: 42 objects" "$SERVER_LOG" || fail "no restore line in the log"
assert_eq "restored id" "$third" "$(info_field snapshot_restored_id)"
assert_eq "same objects at the same addresses" "$before" "$(dump_keys)"
assert_eq "late key" "$late_before" "$(cli MC.QUERYKEY late)"
assert_eq "write in flight not restored" "OBJECT_NOT_FOUND object not found" "$(cli MC.QUERYKEY pending)"
cli MC.QUERYKEY pinned | tr '\n' ' ' | grep -q "hard_pin 1 " || fail "hard pin lost"
assert_eq "segments" "seg-a seg-b" "$(cli MC.SEGMENTS | grep -x 'seg-[ab]' | sort | tr '\n' ' ' | sed 's/ $//')"
cli MC.PING $C1 | grep -qx OK || fail "restored client does not ping OK"
# the restored allocator knows the used buffers: a new put lands elsewhere
cli MC.PUTSTART $C1 after 4096 >/dev/null
assert_eq "putend after restore" OK "$(cli MC.PUTEND $C1 after)"
new_addr=$(cli MC.QUERYKEY after | grep -A1 -x addr | tail -1)
if dump_keys | grep -A1 -x addr | grep -qx "$new_addr"; then
    fail "a new buffer at $new_addr overlaps a restored one"
fi
assert_eq "MC.SNAPSHOT when disabled" "ERR snapshots are not enabled (start with --enable_snapshot yes)" \
    "$(cli MC.SNAPSHOT)"
stop_server "$SERVER_PID"

# ---- a corrupt latest snapshot: refused with a reason, the previous one is loaded ---------
/usr/bin/python3 - "$DIR/$third/metadata" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x55
open(p, "wb").write(b)
PY
start_server --memory 16mb --embedded_segment_in_pool no --enable_snapshot_restore yes --snapshot_local_path "$SNAP" \
    --cluster_id emb
grep -q "snapshot $third refused: snapshot checksum mismatch" "$SERVER_LOG" ||
    fail "corrupt snapshot not reported"
assert_eq "fell back to the previous snapshot" "$second" "$(info_field snapshot_restored_id)"
assert_eq "refused count" 1 "$(info_field snapshot_restore_refused)"
assert_eq "objects of the previous snapshot" "$before" "$(dump_keys)"
assert_eq "late is not in the previous snapshot" "OBJECT_NOT_FOUND object not found" "$(cli MC.QUERYKEY late)"
# truncated too
truncate -s 100 "$DIR/$second/metadata"
start_server --memory 16mb --embedded_segment_in_pool no --enable_snapshot_restore yes --snapshot_local_path "$SNAP" \
    --cluster_id emb
grep -q "snapshot $second refused: not a Crescent snapshot\|snapshot $second refused: snapshot truncated" "$SERVER_LOG" ||
    fail "truncated snapshot not reported"
grep -q "none of the 2 snapshots .* is valid: starting empty" "$SERVER_LOG" || fail "no starting-empty line"
assert_eq "empty pool" "OBJECT_NOT_FOUND object not found" "$(cli MC.QUERYKEY key-1)"

# ---- Redis catalog (a real redis-server) -------------------------------------------------
rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    >"$SRV_TMP/redis.log" 2>&1 &
rpid=$!
trap 'kill $rpid 2>/dev/null; srv_cleanup' EXIT
for ((i = 0; i < 100; i++)); do srv_ping "$rport" && break; sleep 0.1; done
start_server --memory 16mb --embedded_segment_in_pool no --enable_snapshot yes --snapshot_local_path "$SNAP" \
    --snapshot_catalog_store_type redis --snapshot_catalog_store_connstring "redis://127.0.0.1:$rport" \
    --cluster_id red --snapshot_retention_count 2
fill
before=$(dump_keys)
for n in 1 2 3; do
    cli MC.SNAPSHOT >/dev/null
    wait_snapshots $n
done
newest=$(info_field snapshot_last_id)
R="redis-cli -h 127.0.0.1 -p $rport"
assert_eq "catalog latest" "$newest" "$($R GET 'mooncake-store/{red}/snapshot/latest')"
assert_eq "catalog index keeps 2" 2 "$($R ZCARD 'mooncake-store/{red}/snapshot/index')"
assert_eq "newest in the index" "$newest" "$($R ZREVRANGE 'mooncake-store/{red}/snapshot/index' 0 0)"
assert_eq "2 directories" 2 "$(ls "$SNAP/mooncake_master_snapshot/red" | grep -c '^[0-9]')"
kill -9 "$SERVER_PID"
forget_server "$SERVER_PID"
start_server --memory 16mb --embedded_segment_in_pool no --enable_snapshot_restore yes --snapshot_local_path "$SNAP" \
    --snapshot_catalog_store_type redis --snapshot_catalog_store_connstring "127.0.0.1:$rport" \
    --cluster_id red
assert_eq "restored from the Redis catalog" "$newest" "$(info_field snapshot_restored_id)"
assert_eq "same objects (redis catalog)" "$before" "$(dump_keys)"

# ---- bad settings stop the start with a message ------------------------------------------
bin=$CRESCENT_BUILD/bin/crescent-master
expect_refused() { # expect_refused MESSAGE ARGS...
    local msg=$1 out
    shift
    out=$(MOONCAKE_SNAPSHOT_LOCAL_PATH= timeout 20 "$bin" --port "$(free_port)" --metrics_port 0 "$@" 2>&1)
    [ $? -eq 1 ] || fail "start with $* did not exit 1: $out"
    grep -q "$msg" <<<"$out" || fail "start with $*: no '$msg' in: $out"
}
expect_refused "snapshots need an absolute directory" --enable_snapshot yes
expect_refused "snapshots need an absolute directory" --enable_snapshot yes --snapshot_local_path rel/dir
expect_refused "snapshot_object_store_type 's3' is not supported" --enable_snapshot yes \
    --snapshot_local_path "$SNAP" --snapshot_object_store_type s3
expect_refused "unknown snapshot_catalog_store_type 'zk'" --enable_snapshot yes \
    --snapshot_local_path "$SNAP" --snapshot_catalog_store_type zk
expect_refused "cannot connect to Redis at 127.0.0.1:$(free_port)\|cannot connect to Redis" --enable_snapshot yes \
    --snapshot_local_path "$SNAP" --snapshot_catalog_store_type redis \
    --snapshot_catalog_store_connstring "redis://127.0.0.1:1"
expect_refused "snapshot_catalog_store_connstring: bad URI: '127.0.0.1' is not host:port" \
    --enable_snapshot yes --snapshot_local_path "$SNAP" --snapshot_catalog_store_type redis \
    --snapshot_catalog_store_connstring 127.0.0.1
expect_refused "snapshot_catalog_store_connstring: Redis db 'x' is not a number" --enable_snapshot yes \
    --snapshot_local_path "$SNAP" --snapshot_catalog_store_type redis \
    --snapshot_catalog_store_connstring "127.0.0.1:$rport/x"
expect_refused "snapshot catalog: Redis AUTH at 127.0.0.1:$rport failed" --enable_snapshot yes \
    --snapshot_local_path "$SNAP" --snapshot_catalog_store_type redis \
    --snapshot_catalog_store_connstring "redis://:wrong@127.0.0.1:$rport"
expect_refused "cluster_id 'a/b' is not a valid name" --enable_snapshot yes \
    --snapshot_local_path "$SNAP" --cluster_id a/b
# the path from the environment works
out=$(MOONCAKE_SNAPSHOT_LOCAL_PATH=$SNAP timeout 5 "$bin" --port "$(free_port)" --metrics_port 0 \
    --enable_snapshot yes --cluster_id env 2>&1 & sleep 1; kill %1)
[ -d "$SNAP/mooncake_master_snapshot/env" ] || fail "MOONCAKE_SNAPSHOT_LOCAL_PATH not used"
echo "snapshot.sh: ok"
