#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The single-process master with the SSD tier through stock tools: start-up errors of the
# offload flags, a data set four times --memory loaded with redis-cli --pipe and read back with
# redis-cli, redis-benchmark GET and SET/GET over it with no error and no miss, the INFO offload
# section and the crescent_offload_* metrics, DEL of an offloaded key, and a restart that
# brings the offloaded keys back. Crescent only (redis-server has no SSD tier).
set -u
. "$(dirname "$0")/../lib/server.sh"

if server_is_redis; then
    echo "skip: crescent-only (the SSD tier)"
    exit 77
fi
bin="$CRESCENT_BUILD/bin/crescent-master"
[ -x "$bin" ] || { echo "skip: $bin not built"; exit 77; }
disk="$SRV_TMP/ssd"
mkdir -p "$disk"
NKEYS=4096

# info FIELD: one INFO field of the last started server.
info() {
    cli INFO everything | tr -d '\r' | sed -n "s/^$1://p"
}

# start_fails WHAT EXPECTED-TEXT ARGS...: the master must exit 1 at start-up with the text.
start_fails() {
    local what=$1 want=$2 out rc
    shift 2
    out=$(timeout 30 "$bin" --port "$(free_port)" --bind 127.0.0.1 --metrics_port 0 "$@" 2>&1)
    rc=$?
    [ $rc -eq 1 ] || fail "$what: exit status $rc, want 1 (output: $out)"
    [[ "$out" == *"$want"* ]] || fail "$what: output lacks '$want': $out"
}

# --- start-up errors ---
# --enable_offload alone is the pool's tier only (clients' local-disk segments): it starts.
start_server --memory 4mb --enable_offload
grep -q "enable_offload without ssd_offload_path" "$SERVER_LOG" || fail "no pool-only offload line"
stop_server "$SERVER_PID"
start_fails "flag without enable" "ssd_offload_path needs enable_offload" \
    --ssd_offload_path "$disk"
start_fails "no such directory" "ssd_offload_path $disk/nope" \
    --enable_offload --ssd_offload_path "$disk/nope"
start_fails "relative path" "ssd_offload_path ssd" --enable_offload --ssd_offload_path ssd
MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT=ten start_fails "bad variable" \
    "MOONCAKE_OFFLOAD_TOTAL_KEYS_LIMIT" --enable_offload --ssd_offload_path "$disk"
CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES=-1 start_fails "bad write queue bound" \
    'CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES: invalid value "-1"' \
    --memory 4mb --enable_offload --ssd_offload_path "$disk"

# --- a data set 4x --memory through redis-cli ---
mport=$(free_port)
# Two event loops: eviction, read-back and promotion race between them under redis-benchmark.
start_server --memory 4mb --threads 2 --enable_offload --ssd_offload_path "$disk" \
    --metrics_port "$mport"
assert_eq "CONFIG GET enable_offload" "enable_offload
yes" "$(cli CONFIG GET enable_offload)"
assert_eq "CONFIG GET ssd_offload_path" "ssd_offload_path
$disk" "$(cli CONFIG GET ssd_offload_path)"
# key:%012d as redis-benchmark's key:__rand_int__; 4,000 bytes that name the key.
python3 - "$NKEYS" >"$SRV_TMP/load.resp" <<'EOF'
import sys
for i in range(int(sys.argv[1])):
    k = b"key:%012d" % i
    v = (b"<%d>" % i * 1000)[:4000]
    sys.stdout.buffer.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
EOF
out=$(cli --pipe <"$SRV_TMP/load.resp" 2>&1) || fail "redis-cli --pipe: $out"
[[ "$out" == *"errors: 0, replies: $NKEYS"* ]] || fail "redis-cli --pipe: $out"
assert_eq "DBSIZE" "$NKEYS" "$(cli DBSIZE)"
assert_eq "evicted_keys" 0 "$(info evicted_keys)"
offloaded=$(info offloaded_keys)
[ "$offloaded" -ge $((NKEYS / 2)) ] || fail "only $offloaded of $NKEYS keys offloaded"
# wait_queue: waits until the offload write queue is empty (every queued write on disk).
wait_queue() {
    local i
    for ((i = 0; i < 1200; i++)); do
        [ "$(info offload_write_queue_keys)" = 0 ] && return 0
        sleep 0.1
    done
    fail "the offload write queue did not drain"
}
# read_back: GETs every key of the load with one redis-cli and compares the values (a key that
# is gone must answer an empty line, the nil of --raw output).
read_back() {
    python3 - "$NKEYS" >"$SRV_TMP/keys.txt" 3>"$SRV_TMP/want.txt" <<'EOF'
import os, sys
want = os.fdopen(3, "w")
for i in range(int(sys.argv[1])):
    print("GET key:%012d" % i)
    want.write(("<%d>" % i * 1000)[:4000] + "\n")
EOF
    cli <"$SRV_TMP/keys.txt" >"$SRV_TMP/got.txt" || fail "redis-cli GET batch failed"
    cmp -s "$SRV_TMP/want.txt" "$SRV_TMP/got.txt" || fail "GET read back wrong values"
}
read_back
[ "$(info offload_reads)" -gt 0 ] || fail "no value was read back from disk"

# --- DEL of an offloaded key removes its disk copy ---
victim=""
for ((i = 0; i < NKEYS; i++)); do
    k=$(printf 'key:%012d' $i)
    if [ "$(cli MEMORY USAGE "$k")" -le 200 ]; then
        victim=$k
        break
    fi
done
[ -n "$victim" ] || fail "no offloaded key found"
wait_queue
objs=$(info offload_disk_objects)
removes=$(info offload_removes)
assert_eq "DEL offloaded" 1 "$(cli DEL "$victim")"
assert_eq "disk objects after DEL" $((objs - 1)) "$(info offload_disk_objects)"
assert_eq "offload_removes after DEL" $((removes + 1)) "$(info offload_removes)"
assert_eq "EXISTS after DEL" 0 "$(cli EXISTS "$victim")"
cli SET "$victim" "$(python3 -c "import sys; sys.stdout.write(('<%d>' % $i * 1000)[:4000])")" \
    >/dev/null

# --- redis-benchmark over the 4x data set: no error, no miss ---
misses=$(info keyspace_misses)
reads=$(info offload_reads)
out=$(redis-benchmark -h 127.0.0.1 -p "$SERVER_PORT" -t get -n 20000 -r "$NKEYS" -c 16 -q 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "redis-benchmark GET: exit $rc: $out"
[[ "$out" == *"GET:"*"requests per second"* ]] || fail "redis-benchmark GET: $out"
[[ "$out" != *rror* ]] || fail "redis-benchmark GET reported errors: $out"
assert_eq "no GET missed" "$misses" "$(info keyspace_misses)"
[ "$(info offload_reads)" -gt "$reads" ] || fail "redis-benchmark read nothing from disk"
# SETs of 4,000 bytes on keys of their own (bench:N) push more of the data set to disk.
out=$(redis-benchmark -h 127.0.0.1 -p "$SERVER_PORT" -n 20000 -r $((NKEYS * 4)) -c 16 -q \
    SET bench:__rand_int__ "$(printf 'y%.0s' {1..4000})" 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "redis-benchmark SET: exit $rc: $out"
[[ "$out" != *rror* ]] || fail "redis-benchmark SET reported errors: $out"
assert_eq "offload_read_failures" 0 "$(info offload_read_failures)"
assert_eq "offload_write_failures" 0 "$(info offload_write_failures)"
assert_eq "nothing dropped" 0 "$(info evicted_keys)"
assert_server_alive

# --- /metrics ---
metrics=$(curl -sf "http://127.0.0.1:$mport/metrics") || fail "GET /metrics failed"
writes=$(sed -n 's/^crescent_offload_writes_total //p' <<<"$metrics")
[ -n "$writes" ] && [ "$writes" -gt 0 ] || fail "crescent_offload_writes_total: '$writes'"
assert_eq "crescent_offload_keys" "$(info offloaded_keys)" \
    "$(sed -n 's/^crescent_offload_keys //p' <<<"$metrics")"
for m in reads_total read_failures_total write_failures_total promotions_total \
    buffered_reads_total removes_total disk_used_bytes disk_quota_bytes bytes \
    write_queue_bytes queued_writes_total sync_writes_total cancelled_writes_total \
    queue_reads_total; do
    grep -q "^crescent_offload_$m " <<<"$metrics" || fail "no crescent_offload_$m"
done

# --- restart: the keys on disk come back ---
k=$(printf 'key:%012d' 5)
cli GET "$k" >/dev/null
offloaded=$(info offloaded_keys)
stop_server "$SERVER_PID" || fail "the master did not stop cleanly"
SRV_PIDS=()
start_server --memory 4mb --enable_offload --ssd_offload_path "$disk"
assert_eq "DBSIZE after restart" "$offloaded" "$(cli DBSIZE)"
assert_eq "offload_recovered_keys" "$offloaded" "$(info offload_recovered_keys)"
cli <"$SRV_TMP/keys.txt" >"$SRV_TMP/got.txt" || fail "redis-cli GET batch failed"
# Each key of the load is back with its value, or gone (resident at the stop): an empty line.
paste -d'\n' "$SRV_TMP/want.txt" "$SRV_TMP/got.txt" | awk 'NR % 2 { w = $0; next }
    $0 != "" { back++; if ($0 != w) bad++ } END { exit !(back > 0 && bad == 0) }' ||
    fail "GET after restart: wrong values or none back"
echo "ok: offload_cli ($offloaded keys restored)"
