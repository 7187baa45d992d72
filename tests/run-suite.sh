#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test program and script given on the command line, each with a time limit,
# and prints one closing line "N passed, N failed, N skipped". Exit status 77 means skipped.
# On failure the test's output is printed; otherwise only its name and verdict.
# CRESCENT_IO_BACKEND=epoll|uring is passed on to the servers the tests start; an argument
# written BACKEND:path (epoll:build/tests/...) runs that one test with CRESCENT_IO_BACKEND=BACKEND,
# so one run covers both network backends and ends with one closing line.
set -u
: "${CRESCENT_BUILD:=$(pwd)/build}"
export CRESCENT_BUILD
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
# Known leaks of third-party code under ASan (each entry explained in the file).
LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS
pass=0 fail=0 skip=0 failed=()
logdir=$(mktemp -d /tmp/crescent-tests.XXXXXX)
if [ -n "${CRESCENT_IO_BACKEND:-}" ]; then
    echo "== crescent-master --io-backend $CRESCENT_IO_BACKEND"
fi
for t in "$@"; do
    backend=${CRESCENT_IO_BACKEND:-}
    case $t in
    epoll:* | uring:*) backend=${t%%:*}; t=${t#*:} ;;
    esac
    name=${t#"$CRESCENT_BUILD"/}
    [ "$backend" != "${CRESCENT_IO_BACKEND:-}" ] && name="$name [$backend]"
    log="$logdir/$(echo "$name" | tr '/ []' '____').log"
    start=$(date +%s.%N)
    CRESCENT_IO_BACKEND=$backend timeout -k 10 "$TEST_TIMEOUT" "$t" >"$log" 2>&1 </dev/null
    rc=$?
    secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}')
    if [ $rc -eq 0 ] && grep -qE '^(SUMMARY|==[0-9]+==ERROR): .*Sanitizer|runtime error:' "$log"; then
        rc=99 # a sanitizer report in a passing test is a failure
    fi
    case $rc in
    0) pass=$((pass + 1)); printf 'PASS  %-50s %6ss\n' "$name" "$secs" ;;
    77) skip=$((skip + 1)); printf 'SKIP  %-50s %s\n' "$name" "$(tail -1 "$log")" ;;
    *) fail=$((fail + 1)); failed+=("$name"); printf 'FAIL  %-50s rc=%s\n' "$name" "$rc"
       sed 's/^/    | /' "$log" | tail -80 ;;
    esac
done
echo
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
rm -rf "$logdir"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
