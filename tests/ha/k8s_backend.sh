#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Kubernetes Lease backend alone (tests/ha/k8s_driver, no elector) against the Lease API
# double: create, renew, release, epochs after re-acquire, busy views, expiry by observation,
# a stale holder losing its renew, a three-way create race, watch wake-up and reconnect, the
# double's API answers (versions, 400/409/410/422), a dead holder's Lease whose version left the
# watch window (410 as an ERROR event and as plain HTTP), wrong token, read-only account (403), client certificates, wrong CA, outage (503 and hanging API),
# in-cluster service-account config and inline CA data.
set -u
D=$CRESCENT_BUILD/tests/ha/k8s_driver
[ -x "$D" ] || { echo "k8s_driver not built"; exit 77; }
. "$(dirname "$0")/k8s_env.sh"
TMP=$(mktemp -d /tmp/crescent-k8s-backend.XXXXXX)
cleanup() { k8s_env_stop; rm -rf "$TMP"; }
trap cleanup EXIT
k8s_env_start "$TMP/env" || exit $?
fails=0
# expect LABEL OUTPUT REGEX...: every regex must match a line of OUTPUT, in order.
expect() {
    local label=$1 out=$2 line=1
    shift 2
    for re in "$@"; do
        local got
        got=$(printf '%s\n' "$out" | sed -n "${line}p")
        if ! [[ $got =~ $re ]]; then
            echo "FAIL $label: line $line: '$got' !~ /$re/"
            printf '%s\n' "$out" | sed 's/^/    /'
            fails=$((fails + 1))
            return
        fi
        line=$((line + 1))
    done
    echo "ok   $label"
}
U=k8s://ns1/lease1
# set_holder NS NAME HOLDER: an outside write to the Lease (as kubectl edit would do).
set_holder() {
    curl -s --cacert "$K8S_DIR/ca.crt" -H "Authorization: Bearer $K8S_TOKEN" -X PUT \
        -d "$(k8s_lease_json "$1" "$2" | python3 -c 'import json,sys; l=json.load(sys.stdin); l["spec"]["holderIdentity"]=sys.argv[1]; print(json.dumps(l))' "$3")" \
        "https://127.0.0.1:$K8S_PORT/apis/coordination.k8s.io/v1/namespaces/$1/leases/$2" >/dev/null
}
# wait_line FILE REGEX: wait up to 5 s for a line of FILE to match.
wait_line() {
    for _ in $(seq 250); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.02
    done
    return 1
}

out=$($D $U c a acquire:2000 renew:2000 holder release holder acquire:2000 release)
expect "acquire/renew/release, epoch grows on re-acquire by the same identity" "$out" \
    '^open rc=OK$' '^acquire rc=OK epoch=1 ' '^renew rc=OK' '^holder rc=OK holder=a epoch=1 ttl=(19|20)[0-9]{2} ' \
    '^release rc=OK' '^holder rc=OK holder=- epoch=1 ttl=-1' '^acquire rc=OK epoch=2 ' '^release rc=OK'
lease=$(k8s_lease_json ns1 lease1)
python3 - "$lease" <<'PY' && echo "ok   released Lease JSON" || { echo "FAIL released Lease JSON: $lease"; exit 1; }
import json, re, sys
l = json.loads(sys.argv[1])
assert l["kind"] == "Lease" and l["apiVersion"] == "coordination.k8s.io/v1", l
s = l["spec"]
assert "holderIdentity" not in s and s["leaseDurationSeconds"] == 1 and s["leaseTransitions"] == 2, s
assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$", s["renewTime"]), s
PY

# a holds a 1 s lease and never renews; b must see it busy, then free after 1 s of no change.
out=$($D $U c a acquire:1000)
expect "a acquires" "$out" '^open rc=OK' '^acquire rc=OK epoch=3 '
out=$($D $U c b acquire:1000 holder sleep:1100 holder acquire:1000)
expect "b: busy, then expired by observation, then acquires epoch 4" "$out" '^open rc=OK' \
    '^acquire rc=EBUSY holder=a epoch=3 ttl=(9[0-9]{2}|1000) ' '^holder rc=OK holder=a epoch=3' \
    '^sleep' '^holder rc=OK holder=- epoch=3 ttl=-1' '^acquire rc=OK epoch=4 '

# Stale leader: a leads, stalls past its lease, c takes over; a's renew must say NOT_LEADER.
$D k8s://ns1/lease2 c a acquire:1000 sleep:2500 renew:1000 >"$TMP/a.out" &
apid=$!
wait_line "$TMP/a.out" '^acquire rc=OK'
out=$($D k8s://ns1/lease2 c c acquire:1000 sleep:1200 acquire:1000)
wait $apid
expect "c takes over an expired lease" "$out" '^open' '^acquire rc=EBUSY holder=a epoch=1' '^sleep' \
    '^acquire rc=OK epoch=2 '
expect "stale a: renew -> NOT_LEADER" "$(cat "$TMP/a.out")" '^open' '^acquire rc=OK epoch=1' '^sleep' \
    '^renew rc=NOT_LEADER .*held by "c" \(epoch 2\)'

# Three candidates create the same Lease at once: exactly one wins.
pids=()
for i in 1 2 3; do
    $D k8s://ns1/race c n$i acquire:2000 >"$TMP/race$i" &
    pids+=($!)
done
wait "${pids[@]}"
wins=$(cat "$TMP"/race? | grep -c 'acquire rc=OK epoch=1 ')
busy=$(cat "$TMP"/race? | grep -c 'acquire rc=EBUSY holder=n[123] epoch=1')
[ "$wins" = 1 ] && [ "$busy" = 2 ] && echo "ok   create race: 1 winner, 2 busy" ||
    { echo "FAIL create race: wins=$wins busy=$busy"; cat "$TMP"/race?; fails=$((fails + 1)); }

# Watch: a waits up to 10 s; the Lease changes after ~0.3 s; a must wake on the change (rc=OK:
# the wait's own deadline would give ETIMEDOUT), whenever the slow outside write lands.
$D k8s://ns1/w c b acquire:2000 >/dev/null
$D k8s://ns1/w c a holder wait:10000 >"$TMP/w.out" &
wpid=$!
wait_line "$TMP/w.out" '^holder rc=OK'
sleep 0.3
set_holder ns1 w z
wait $wpid
wms=$(sed -n 's/^wait rc=OK ms=\([0-9]*\).*/\1/p' "$TMP/w.out")
[ -n "$wms" ] && echo "ok   watch wakes on change (${wms} ms)" ||
    { echo "FAIL watch: $(cat "$TMP/w.out")"; fails=$((fails + 1)); }

# Watch reconnect: the API drops every watch (SIGUSR2) at ~0.3 s; the waiter must reconnect
# from the same resourceVersion and still wake on a change made at ~0.8 s, not before.
$D k8s://ns1/w2 c b acquire:2000 >/dev/null
$D k8s://ns1/w2 c a holder wait:10000 >"$TMP/w2.out" &
wpid=$!
wait_line "$TMP/w2.out" '^holder rc=OK'
sleep 0.3
kill -USR2 "$K8S_PID"
sleep 0.5
set_holder ns1 w2 z
wait $wpid
wms=$(sed -n 's/^wait rc=OK ms=\([0-9]*\).*/\1/p' "$TMP/w2.out")
[ -n "$wms" ] && [ "$wms" -ge 700 ] &&
    echo "ok   watch survives a dropped stream and wakes on the change (${wms} ms)" ||
    { echo "FAIL watch reconnect: $(cat "$TMP/w2.out")"; fails=$((fails + 1)); }

# The double answers like an API server: versions past 2^31 and not contiguous, 422 for an
# update without resourceVersion, 400 for malformed JSON or MicroTime, 422 for semantic errors,
# and a watch from a version older than the window gets 200 + one ERROR event (410 Expired).
$D k8s://ns1/shape c a acquire:2000 >/dev/null
$D k8s://ns1/shape2 c a acquire:2000 >/dev/null
kill -HUP "$K8S_PID" # empty the watch window: every earlier version is too old
sleep 0.2
python3 - "$K8S_PORT" "$K8S_DIR/ca.crt" "$K8S_TOKEN" <<'PY' && echo "ok   Lease API double: versions, 400/409/410/422 answers" || { echo "FAIL Lease API double shapes"; fails=$((fails + 1)); }
import http.client, json, ssl, sys
port, ca, tok = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
base = "/apis/coordination.k8s.io/v1/namespaces/ns1/leases"
def req(method, path, body=None):
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
    c.request(method, path, body=body, headers={"Authorization": "Bearer " + tok})
    r = c.getresponse()
    return r.status, r.read().decode()
st, a = req("GET", base + "/shape")
st2, b = req("GET", base + "/shape2")
a, b = json.loads(a), json.loads(b)
ra, rb = int(a["metadata"]["resourceVersion"]), int(b["metadata"]["resourceVersion"])
assert ra > 2**31 and rb > ra, (ra, rb)
def put(obj):
    return req("PUT", base + "/shape", json.dumps(obj))
o = json.loads(json.dumps(a)); del o["metadata"]["resourceVersion"]; o["spec"]["holderIdentity"] = "x"
code, body = put(o)
assert code == 422 and json.loads(body)["reason"] == "Invalid" and "must be specified for an update" in body, (code, body)
o = json.loads(json.dumps(a)); o["metadata"]["name"] = "shape3"
code, body = req("POST", base, json.dumps(o))
assert code == 400 and "should not be set on objects to be created" in body, (code, body)
code, body = req("PUT", base + "/shape", "{not json")
assert code == 400 and json.loads(body)["reason"] == "BadRequest", (code, body)
o = json.loads(json.dumps(a)); o["spec"]["renewTime"] = "yesterday"
code, body = put(o)
assert code == 400, (code, body)
o = json.loads(json.dumps(a)); o["spec"]["leaseDurationSeconds"] = 0
code, body = put(o)
assert code == 422 and json.loads(body)["reason"] == "Invalid", (code, body)
o = json.loads(json.dumps(a)); o["metadata"]["resourceVersion"] = str(ra - 1)
code, body = put(o)
assert code == 409 and json.loads(body)["reason"] == "Conflict", (code, body)
code, body = req("GET", base + "?watch=true&fieldSelector=metadata.name%3Dshape&resourceVersion=" + str(ra))
ev = json.loads(body.splitlines()[0])
assert code == 200 and ev["type"] == "ERROR", (code, body)
o = ev["object"]
assert o == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": o["message"], "reason": "Expired", "code": 410}, o
assert o["message"].startswith("too old resource version: %d (" % ra), o
PY

# A holder that died, whose version then left the watch window: the expiry clock of a watcher
# must keep running across the 410 (it is tied to the Lease's version and renewTime only: the
# remaining time read after the 410 is below the 3 s lease less the 0.3 s slept, where a clock
# restarted by the 410 would read about 3 s), the watcher must poll (EAGAIN) rather than watch
# again, and take the Lease once a lease has passed since its first read.
$D k8s://ns1/gone c a acquire:3000 >/dev/null
$D k8s://ns1/other c z acquire:1000 >/dev/null
kill -HUP "$K8S_PID"
sleep 0.2
out=$($D k8s://ns1/gone c b holder sleep:300 wait:3000 holder wait:800 sleep:3000 acquire:3000)
expect "410 Expired (ERROR event): clock keeps running, then poll, then acquire" "$out" '^open rc=OK' \
    '^holder rc=OK holder=a epoch=1 ttl=[0-9]+ ' '^sleep' '^wait rc=OK ' \
    '^holder rc=OK holder=a epoch=1 ttl=([0-9]{1,3}|1[0-9]{3}|2[0-7][0-9]{2}) ' '^wait rc=EAGAIN ' \
    '^sleep' '^acquire rc=OK epoch=2 '

# Default lease name from the cluster id when the URI names none.
out=$($D k8s:// My_Cluster a acquire:2000)
expect "k8s:// -> crescent-<cluster> in the kubeconfig namespace" "$out" '^open rc=OK' '^acquire rc=OK epoch=1'
k8s_lease_json crescent-test crescent-my-cluster | grep -q '"holderIdentity": "a"' &&
    echo "ok   lease crescent-test/crescent-my-cluster" || { echo "FAIL default lease name"; fails=$((fails + 1)); }

# Wrong token: one clear error at open.
k8s_write_kubeconfig "$TMP/bad.kc" wrong-token
out=$(KUBECONFIG=$TMP/bad.kc $D $U c a acquire:2000; echo "exit=$?")
expect "wrong token" "$out" '^open rc=AUTH err=kubernetes API: 401 Unauthorized: check the service-account token' '^exit=2$'

# Read-only account: open works (GET), acquiring is refused with 403 naming the verbs.
k8s_write_kubeconfig "$TMP/ro.kc" "$K8S_TOKEN-ro"
out=$(KUBECONFIG=$TMP/ro.kc $D k8s://ns1/ro c a holder acquire:2000)
expect "403 Forbidden on writes" "$out" '^open rc=OK' '^holder rc=OK holder=- epoch=0' \
    '^acquire rc=AUTH .*err=kubernetes API: 403 Forbidden: the account needs get/create/update/watch.*cannot create resource "leases"'

# Client certificate instead of a token: key and certificate as files, then inline (-data).
sed -e '/^    token:/d' -e "s|^  user:\$|  user:\n    client-certificate: client.crt\n    client-key: client.key|" \
    "$KUBECONFIG" >"$K8S_DIR/cert.kc"
out=$(KUBECONFIG=$K8S_DIR/cert.kc $D k8s://ns1/cert c a acquire:2000 release)
expect "client certificate files (relative to the kubeconfig)" "$out" '^open rc=OK' '^acquire rc=OK epoch=1' '^release rc=OK'
sed -e '/^    token:/d' -e "s|^  user:\$|  user:\n    client-certificate-data: $(base64 -w0 "$K8S_DIR/client.crt")\n    client-key-data: $(base64 -w0 "$K8S_DIR/client.key")|" \
    "$KUBECONFIG" >"$TMP/certdata.kc"
out=$(KUBECONFIG=$TMP/certdata.kc $D k8s://ns1/cert c b acquire:2000)
expect "client certificate inline data" "$out" '^open rc=OK' '^acquire rc=OK epoch=2'
sed -e '/^    token:/d' "$KUBECONFIG" >"$TMP/anon.kc"
out=$(KUBECONFIG=$TMP/anon.kc $D k8s://ns1/cert c b holder)
expect "no credentials at all: 401" "$out" '^open rc=AUTH err=kubernetes API: 401 Unauthorized'

# In-cluster service account (token, ca.crt, namespace files) instead of a kubeconfig.
mkdir -p "$TMP/sa"
printf '%s\n' "$K8S_TOKEN" >"$TMP/sa/token"
cp "$K8S_DIR/ca.crt" "$TMP/sa/ca.crt"
printf 'sa-ns\n' >"$TMP/sa/namespace"
out=$(env -u KUBECONFIG HOME=$TMP KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$K8S_PORT \
    CRESCENT_K8S_SA_DIR=$TMP/sa $D k8s://salease c a acquire:2000)
expect "in-cluster service account" "$out" '^open rc=OK' '^acquire rc=OK epoch=1'
k8s_lease_json sa-ns salease | grep -q '"namespace": "sa-ns"' && echo "ok   namespace from the service account" ||
    { echo "FAIL in-cluster namespace"; fails=$((fails + 1)); }

# Inline certificate-authority-data instead of a CA file.
sed "s|certificate-authority: .*|certificate-authority-data: $(base64 -w0 "$K8S_DIR/ca.crt")|" \
    "$KUBECONFIG" >"$TMP/inline.kc"
out=$(KUBECONFIG=$TMP/inline.kc $D k8s://ns1/inl c a acquire:2000)
expect "certificate-authority-data" "$out" '^open rc=OK' '^acquire rc=OK epoch=1'

# A CA that did not sign the server certificate: TLS verification error, not a hang.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$TMP/o.key" \
    -out "$TMP/other.crt" -days 1 -subj /CN=other 2>/dev/null
sed "s|certificate-authority: .*|certificate-authority: $TMP/other.crt|" "$KUBECONFIG" >"$TMP/other.kc"
out=$(KUBECONFIG=$TMP/other.kc $D $U c a holder)
expect "wrong CA" "$out" '^open rc=AUTH err=.*TLS verification failed'

# Outage (503): the holder's renew fails fast with UNREACHABLE; after it, b sees the lease.
$D k8s://ns1/out c a acquire:2000 sleep:400 renew:2000 sleep:600 renew:2000 >"$TMP/o.out" &
opid=$!
wait_line "$TMP/o.out" '^acquire rc=OK'
sleep 0.1
k8s_outage
sleep 0.5
k8s_outage
wait $opid
expect "503 outage: renew UNREACHABLE, then OK" "$(cat "$TMP/o.out")" '^open' '^acquire rc=OK' '^sleep' \
    '^renew rc=UNREACHABLE .*err=kubernetes API: 503' '^sleep' '^renew rc=OK'

# Hanging API server: every call returns within the 2 s operation budget.
k8s_env_stop
k8s_env_start "$TMP/env2" hang || exit 1
$D k8s://ns1/hang c a acquire:2000 sleep:300 renew:2000 >"$TMP/h.out" &
hpid=$!
wait_line "$TMP/h.out" '^acquire rc=OK'
k8s_outage
wait $hpid
k8s_outage
hms=$(sed -n 's/^renew rc=UNREACHABLE ms=\([0-9]*\).*/\1/p' "$TMP/h.out")
[ -n "$hms" ] && [ "$hms" -ge 1900 ] && [ "$hms" -le 2600 ] && echo "ok   hanging API: renew gives up after ${hms} ms" ||
    { echo "FAIL hang: $(cat "$TMP/h.out")"; fails=$((fails + 1)); }

# An acquire whose read waits out a hanging API reports when its write was sent, so that the
# elector dates the lease from the write rather than from the start of the attempt.
$D k8s://ns1/hang2 c a sleep:1500 acquire:2000 >"$TMP/h2.out" &
hpid=$!
wait_line "$TMP/h2.out" '^open rc=OK'
k8s_outage
sleep 2
k8s_outage
wait $hpid
wat=$(sed -n 's/^acquire rc=OK epoch=1 wrote_at=\([0-9]*\) .*/\1/p' "$TMP/h2.out")
# The acquire starts about 1.5 s into the outage and its read hangs until the outage ends at
# about 2 s, so its write goes out about 0.5 s into the call (at least 0.3 s is asserted).
[ -n "$wat" ] && [ "$wat" -ge 300 ] && echo "ok   acquire after a hang dated from its write (${wat} ms into the call)" ||
    { echo "FAIL acquire write time: $(cat "$TMP/h2.out")"; fails=$((fails + 1)); }

# The plain HTTP 410 form of "too old resource version" is handled the same way.
k8s_env_stop
K8S_DOUBLE_ARGS="--expired http" k8s_env_start "$TMP/env3" || exit 1
$D k8s://ns1/gone c a acquire:3000 >/dev/null
$D k8s://ns1/other c z acquire:1000 >/dev/null
kill -HUP "$K8S_PID"
sleep 0.2
out=$($D k8s://ns1/gone c b holder sleep:300 wait:3000 holder wait:800 sleep:3000 acquire:3000)
expect "410 Gone (plain HTTP): clock keeps running, then poll, then acquire" "$out" '^open rc=OK' \
    '^holder rc=OK holder=a epoch=1 ttl=[0-9]+ ' '^sleep' '^wait rc=OK ' \
    '^holder rc=OK holder=a epoch=1 ttl=([0-9]{1,3}|1[0-9]{3}|2[0-7][0-9]{2}) ' '^wait rc=EAGAIN ' \
    '^sleep' '^acquire rc=OK epoch=2 '

[ $fails -eq 0 ] && echo "k8s backend: all checks passed" || echo "k8s backend: $fails checks failed"
[ $fails -eq 0 ]
