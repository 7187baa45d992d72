# SPDX-License-Identifier: Apache-2.0
# Shared set-up of the bench/ scripts. Source it from the repository root:
#   . bench/lib.sh; bench_setup NAME
# bench_setup creates $TMP (/tmp/crescent-NAME.XXXXXX) and the PIDS array; on exit every pid in
# PIDS gets SIGTERM, then SIGKILL after 5 s, and $TMP is removed. free_port comes from
# tests/lib/ports.sh.
. tests/lib/ports.sh

bench_cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    rm -rf "$TMP"
}

bench_setup() {
    TMP=$(mktemp -d "/tmp/crescent-$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}
