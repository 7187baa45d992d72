#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# crescent-bench transfer end to end: for tcp and shm, a target and a verifying initiator for
# read and write; asserts the JSON result (throughput > 0, no errors, no verify failures), that
# the target exits 0 on SIGTERM, and that bad options exit 2. The initiator starts the moment
# the target prints its readiness line, with no retry and no sleep: by then the buffer is
# registered (and before it, the port refuses connections).
set -u
BENCH=${CRESCENT_BUILD:?}/bin/crescent-bench
tmp=$(mktemp -d /tmp/crescent-benchtest.XXXXXX)
tpid=
trap '[ -n "$tpid" ] && kill "$tpid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for proto in tcp shm; do
    # The target's stdout is a pipe we read its readiness line from (blocking read, no polling).
    exec 3< <(exec "$BENCH" transfer --mode target --protocol $proto --buffer_size 8M --verify 2>&1)
    tpid=$!
    line=
    read -r -t 60 -u 3 line || fail "$proto target did not start: $line"
    case $line in
    "ready: listening on "*", protocol $proto, buffer 8388608 bytes registered") ;;
    *) fail "$proto target readiness line: '$line'" ;;
    esac
    addr=${line#ready: listening on }
    addr=${addr%%,*}
    for op in read write; do
        out=$("$BENCH" transfer --mode initiator --protocol $proto --target "$addr" --operation $op \
            --block_size 64K --batch_size 8 --threads 2 --duration 0.3 --buffer_size 8M \
            --verify --json --report_unit MiB) || fail "$proto $op exit $?: $out"
        line=$(echo "$out" | grep '^{') || fail "$proto $op: no JSON line"
        python3 - "$line" "$proto" "$op" <<'PY' || fail "$proto $op: $line"
import json, sys
r = json.loads(sys.argv[1])
assert r["protocol"] == sys.argv[2] and r["operation"] == sys.argv[3], r
assert r["block_size"] == 65536 and r["batch_size"] == 8 and r["threads"] == 2, r
assert r["GBps"] > 0 and r["p50_us"] > 0 and r["p99_us"] >= r["p50_us"], r
assert r["errors"] == 0 and r["verify_failures"] == 0, r
PY
        echo "$out" | grep -q "MiB/s" || fail "report unit not applied: $out"
    done
    kill -TERM "$tpid"
    wait "$tpid"
    rc=$?
    exec 3<&-
    tpid=
    [ $rc -eq 0 ] || fail "$proto target exit status $rc on SIGTERM"
done

"$BENCH" transfer --mode initiator --protocol tcp >/dev/null 2>&1
[ $? -eq 2 ] || fail "missing --target should exit 2"
"$BENCH" transfer --mode target --report_unit furlongs >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --report_unit should exit 2"
"$BENCH" nosuch >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown subcommand should exit 2"
echo "crescent-bench transfer: ok"
