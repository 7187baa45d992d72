#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --io-backend auto falls back to epoll when io_uring cannot be set up, and --io-backend uring
# then refuses to start. io_uring_setup is made to fail with strace's fault injection (ENOSYS,
# as on a kernel without io_uring); skipped without strace.
set -u
. "$(dirname "$0")/../lib/server.sh"
server_is_redis && { echo "skip: crescent-only"; exit 77; }
command -v strace >/dev/null || { echo "skip: strace not installed"; exit 77; }
bin="$CRESCENT_BUILD/bin/crescent-master"
[ -x "$bin" ] || { echo "skip: $bin not built"; exit 77; }
# LeakSanitizer cannot run under ptrace: leaks are checked by the other tests.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
inject=(strace -f -qq -o /dev/null -e trace=io_uring_setup -e inject=io_uring_setup:error=ENOSYS)

port=$(free_port)
log="$SRV_TMP/auto.log"
"${inject[@]}" "$bin" --port "$port" --bind 127.0.0.1 --memory 16mb >"$log" 2>&1 &
pid=$! # strace's pid; the server is its child (SHUTDOWN below ends both)
SRV_LOGS+=("$log")
trap 'rc=$?; kill -KILL $(pgrep -P $pid) $pid 2>/dev/null; (exit $rc); srv_cleanup' EXIT
for _ in $(seq 100); do srv_ping "$port" && break; sleep 0.1; done
srv_ping "$port" || fail "server under strace did not start"
assert_eq "INFO io_backend" "io_backend:epoll" \
    "$(redis-cli -p "$port" INFO server | tr -d '\r' | grep '^io_backend:')"
assert_eq "SET on the fallback" "OK" "$(redis-cli -p "$port" SET k v)"
grep -q "io_uring not available (io_uring_setup failed: Function not implemented); using epoll" \
    "$log" || fail "no fallback line in the log: $(cat "$log")"
grep -q "threads, epoll)" "$log" || fail "ready line does not name epoll: $(cat "$log")"
redis-cli -p "$port" SHUTDOWN >/dev/null 2>&1
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "server did not exit on SHUTDOWN"

out=$("${inject[@]}" "$bin" --port "$(free_port)" --bind 127.0.0.1 --memory 16mb \
    --io-backend uring 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "--io-backend uring started without io_uring"
echo "$out" | grep -q "io-backend uring is not available: io_uring_setup failed" ||
    fail "no reason given: $out"
echo "ok"
