#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Chaos run of three HA masters (not part of make test): kill -9 / SIGSTOP of the leader every
# 2-6 s for SECONDS, with the election and the op-log in BACKEND (k8s: elections on the Lease API
# double of k8s_env.sh, the op-log in a real redis-server); see store_chaos.py.
#   tests/ha/store_chaos.sh redis|etcd|k8s SECONDS [SEED]
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" != k8s ]; then
    exec python3 "$here/store_chaos.py" "$@"
fi
. "$here/k8s_env.sh"
dir=$(mktemp -d /tmp/crescent-store-chaos-k8s.XXXXXX)
trap 'k8s_env_stop; rm -rf "$dir"' EXIT
k8s_env_start "$dir" || exit $?
CRESCENT_CHAOS_K8S_URI="k8s://$K8S_BACKEND_NS/crescent-store-chaos" python3 "$here/store_chaos.py" "$@"
