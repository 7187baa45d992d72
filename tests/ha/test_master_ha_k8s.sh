#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# HA mode of crescent-master with Kubernetes Lease elections (the TLS Lease API double of
# tests/ha/k8s_env.sh) and the op-log in a real redis-server (see test_master_ha.py), then
# libcrescent given k8s://namespace/lease as its master address (test_client_follow.py).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/k8s_env.sh"
dir=$(mktemp -d /tmp/crescent-ha-master-k8s.XXXXXX)
trap 'k8s_env_stop; rm -rf "$dir"' EXIT
k8s_env_start "$dir" || exit $?
python3 "$here/test_master_ha.py" k8s "k8s://$K8S_BACKEND_NS/crescent-master-test" || exit $?
python3 "$here/test_client_follow.py" k8s "k8s://$K8S_BACKEND_NS/crescent-client-follow"
