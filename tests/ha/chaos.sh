#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Chaos test for leader election (not part of make test):
#   tests/ha/chaos.sh BACKEND SECONDS [chaos.py options]      BACKEND = redis | etcd | k8s
# Three crescent-elect processes at the default timings (lease 5 s, renew deadline 3 s, retry
# 1 s) suffer random kill -9, SIGSTOP/SIGCONT, SIGTERM and restarts for SECONDS; then their logs
# are checked for overlapping leader intervals and the leader share and failover times (p50,
# max) are printed. redis and etcd are started here on free loopback ports; k8s uses the Lease
# API double from tests/ha/k8s_env.sh (with a bounded watch window and background writes, see
# below; $K8S_DOUBLE_ARGS overrides). Needs a built tree (CRESCENT_BUILD, default ./build).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${CRESCENT_BUILD:=$(pwd)/build}"
export CRESCENT_BUILD
[ $# -ge 2 ] || { echo "usage: $0 redis|etcd|k8s SECONDS [options]" >&2; exit 2; }
backend=$1 seconds=$2
shift 2
if [ "$backend" = k8s ]; then
    . "$here/k8s_env.sh"
    # Like a busy cluster: another object is written every 100 ms and the watch window keeps 20
    # events, so the version of an idle Lease is too old to watch from after about 2 s.
    export K8S_DOUBLE_ARGS=${K8S_DOUBLE_ARGS:---churn-ms 100 --watch-window 20}
    dir=$(mktemp -d /tmp/crescent-chaos-k8s.XXXXXX)
    trap 'k8s_env_stop; rm -rf "$dir"' EXIT
    k8s_env_start "$dir"
    rc=$?
    [ $rc -eq 0 ] || exit $rc
    python3 "$here/chaos.py" k8s "$seconds" --uri "k8s://$K8S_BACKEND_NS/crescent-chaos" "$@"
    rc=$?
    # The double is a separate process: a run during which it died proves little.
    if ! kill -0 "$K8S_PID" 2>/dev/null; then
        echo "chaos: the Lease API double (pid $K8S_PID) died during the run; its stderr:"
        tail -20 "$dir/double.err"
        rc=1
    fi
    exit $rc
fi
exec python3 "$here/chaos.py" "$backend" "$seconds" "$@"
