#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/k8s against what the Kubernetes Lease backend really does: the Lease API double
# (tests/ha/k8s_lease_server.py) logs every request while the backend (tests/ha/k8s_driver:
# acquire, renew, holder, watch, release, a create race, a busy acquire) and crescent-elect
# (two candidates, a hand-over on SIGTERM: the elector crescent-master runs with --enable_ha)
# work on the Lease the master StatefulSet names; tests/deploy/check_k8s.py then checks that
# the Role grants exactly the verbs of those requests, in the right namespace, and that the
# manifests' flags and probes fit the programs (crescent-master --help; crescent-client --help
# when that program is built). Exit 77 when python3-yaml, openssl or the driver is missing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${CRESCENT_BUILD:=$root/build}"
D=$CRESCENT_BUILD/tests/ha/k8s_driver
E=$CRESCENT_BUILD/bin/crescent-elect
[ -x "$D" ] && [ -x "$E" ] || { echo "skip: k8s_driver or crescent-elect not built"; exit 77; }
/usr/bin/python3 -c 'import yaml' 2>/dev/null ||
    { echo "skip: /usr/bin/python3 has no yaml module (apt-get install python3-yaml)"; exit 77; }
. "$root/tests/ha/k8s_env.sh"
TMP=$(mktemp -d /tmp/crescent-k8s-rbac.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    k8s_env_stop
    rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

read -r ns lease cluster < <(/usr/bin/python3 "$here/check_k8s.py" lease "$root/deploy/k8s") ||
    fail "manifests"
if [ -z "$lease" ]; then
    /usr/bin/python3 "$here/check_k8s.py" lease "$root/deploy/k8s"
    fail "manifests"
fi
U=k8s://$ns/$lease
K8S_DOUBLE_ARGS="--request-log $TMP/requests.log" k8s_env_start "$TMP/env" || exit $?

# The backend alone: three candidates create the Lease at once (409 AlreadyExists for two),
# then every operation of the ops table once a has seen the winner's 1 s lease run out.
for i in 1 2 3; do
    $D "$U" "$cluster" "n$i" acquire:1000 >"$TMP/race$i" &
    pids+=($!)
done
wait "${pids[@]}"
pids=()
[ "$(cat "$TMP"/race? | grep -c 'acquire rc=OK')" = 1 ] || fail "create race: $(cat "$TMP"/race?)"
out=$($D "$U" "$cluster" a holder sleep:1100 acquire:2000 renew:2000 holder release acquire:2000)
echo "$out" | grep -q '^renew rc=OK' || fail "driver a: $out"
out=$($D "$U" "$cluster" b acquire:2000 holder wait:300)
echo "$out" | grep -q '^acquire rc=EBUSY' || fail "driver b: $out"
$D "$U" "$cluster" a release >/dev/null
# Two crescent-elect candidates; the leader steps down on SIGTERM and the other takes over.
timings=(--lease-ms 2000 --renew-ms 1200 --retry-ms 300 --timeout-ms 500)
"$E" --backend "$U" --cluster "$cluster" --identity 10.0.0.1:50051 "${timings[@]}" \
    >"$TMP/e1.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q LEADER "$TMP/e1.out" && break; sleep 0.05; done
"$E" --backend "$U" --cluster "$cluster" --identity 10.0.0.2:50051 "${timings[@]}" \
    >"$TMP/e2.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q FOLLOWER "$TMP/e2.out" && break; sleep 0.05; done
sleep 1 # a few renews
kill -TERM "${pids[0]}"
for _ in $(seq 200); do grep -q ' LEADER ' "$TMP/e2.out" && break; sleep 0.05; done
grep -q ' LEADER ' "$TMP/e1.out" || fail "first candidate never led: $(cat "$TMP/e1.out")"
grep -q ' LEADER ' "$TMP/e2.out" || fail "second candidate did not take over: $(cat "$TMP/e2.out")"
kill -TERM "${pids[1]}"
wait "${pids[@]}" 2>/dev/null
pids=()

"$E" --help >"$TMP/elect.help" 2>&1
"$CRESCENT_BUILD/bin/crescent-master" --help >"$TMP/master.help" 2>&1
client=()
if [ -x "$CRESCENT_BUILD/bin/crescent-client" ]; then
    "$CRESCENT_BUILD/bin/crescent-client" --help >"$TMP/client.help" 2>&1
    client=("$TMP/client.help")
else
    echo "note: crescent-client not built; its flags are checked against the documented list only"
fi
/usr/bin/python3 "$here/check_k8s.py" check "$root/deploy/k8s" "$TMP/requests.log" \
    "$TMP/master.help" "${client[@]}" || { sort "$TMP/requests.log" | uniq -c; exit 1; }
