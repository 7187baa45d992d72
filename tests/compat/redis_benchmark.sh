#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stock redis-benchmark against the server: its default test set (-q -n 2000 -c 20), pipelined
# SET/GET with 64-byte values, and RESP3 sessions. Every test must report a positive
# requests-per-second figure, and no error or warning may appear in the output.
set -u
. "$(dirname "$0")/../lib/server.sh"

start_server --memory 256mb

failures=0
# soft_fail MSG: records a failure and goes on, so one unsupported command does not hide the
# results of the other runs; the script fails at the end.
soft_fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
    return 1
}

# run_bench NAME EXPECTED_TESTS ARGS...: runs redis-benchmark and checks its -q summary.
# Returns 1 (after soft_fail) when something is wrong.
run_bench() {
    local name=$1 expected=$2 out lines got
    shift 2
    out=$(timeout 120 redis-benchmark -h 127.0.0.1 -p "$SERVER_PORT" -q "$@" 2>&1)
    local rc=$?
    # -q prints progress lines separated by CR; the final line of each test ends with LF.
    lines=$(printf '%s\n' "$out" | tr '\r' '\n' | grep 'requests per second')
    printf '%s\n' "$lines"
    [ $rc -eq 0 ] || soft_fail "$name: redis-benchmark exited with $rc; output: $(printf '%s\n' \
        "$out" | tr '\r' '\n' | grep -v 'rps=' | sed '/^ *$/d')" || return 1
    if printf '%s\n' "$out" | grep -qiE 'err|warn|could not|replied with'; then
        soft_fail "$name: error or warning in redis-benchmark output: $(printf '%s\n' "$out" |
            tr '\r' '\n' | grep -iE 'err|warn|could not|replied with' | head -5)"
        return 1
    fi
    got=$(printf '%s\n' "$lines" | sed 's/: [0-9.]* requests per second.*//' | tr '\n' '|')
    [ "$got" = "$expected" ] ||
        soft_fail "$name: tests run: expected '$expected', got '$got'" || return 1
    # Every test line must carry a positive rate.
    printf '%s\n' "$lines" | awk '{ for (i = 1; i < NF; i++) if ($(i+1) == "requests") r = $i;
        if (!(r + 0 > 0)) { print "non-positive rps: " $0; bad = 1 } } END { exit bad }' ||
        soft_fail "$name: a test reported no positive rps"
}

default_tests='PING_INLINE|PING_MBULK|SET|GET|INCR|LPUSH|RPUSH|LPOP|RPOP|SADD|HSET|SPOP|ZADD|'
default_tests+='ZPOPMIN|LPUSH (needed to benchmark LRANGE)|LRANGE_100 (first 100 elements)|'
default_tests+='LRANGE_300 (first 300 elements)|LRANGE_500 (first 500 elements)|'
default_tests+='LRANGE_600 (first 600 elements)|MSET (10 keys)|'
if run_bench "default set" "$default_tests" -n 2000 -c 20; then
    assert_eq "default set value" "3" "$(cli STRLEN key:__rand_int__)"
    assert_eq "default set counter" "2000" "$(cli GET counter:__rand_int__)"
fi

cli FLUSHALL >/dev/null
if run_bench "pipelined set,get" "SET|GET|" -n 2000 -c 20 -t set,get -P 16 -d 64; then
    assert_eq "pipelined value length" "64" "$(cli STRLEN key:__rand_int__)"
fi

cli FLUSHALL >/dev/null
if run_bench "random keys" "SET|GET|INCR|" -n 2000 -c 20 -t set,get,incr -r 1000 -d 100; then
    n=$(cli DBSIZE)
    [ "$n" -ge 100 ] && [ "$n" -le 2000 ] || fail "random keys: DBSIZE $n not in [100, 2000]"
fi

run_bench "RESP3" "PING_INLINE|PING_MBULK|SET|GET|" -3 -n 2000 -c 20 -t ping,set,get

assert_server_alive
[ $failures -eq 0 ] || fail "$failures redis-benchmark run(s) failed (see above)"
echo "redis_benchmark: all checks passed"
