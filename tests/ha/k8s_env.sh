# SPDX-License-Identifier: Apache-2.0
# Sourced by the Kubernetes-backend tests and by tests/ha/chaos.sh: starts the Lease API double
# (tests/ha/k8s_lease_server.py) over TLS with a CA made here by the openssl CLI, and writes a
# kubeconfig for it.
#
#   . tests/ha/k8s_env.sh
#   k8s_env_start DIR [503|hang]   # ($K8S_DOUBLE_ARGS: more options for the double) exports KUBECONFIG, K8S_PORT, K8S_PID, K8S_DIR, K8S_TOKEN,
#                                  # K8S_BACKEND_NS (namespace for URIs, "crescent-test");
#                                  # $K8S_TOKEN-ro may only read (403 on writes); DIR/client.crt
#                                  # + DIR/client.key authenticate by client certificate
#   k8s_outage                     # toggle the double's outage mode (SIGUSR1)
#   k8s_env_stop                   # kill the double (call from your EXIT trap)
#   k8s_lease_json NS NAME         # print the Lease JSON (curl with the test CA)
#
# Returns 77 from k8s_env_start when openssl or python3 is missing (callers exit 77: skip).

K8S_ENV_SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

k8s_env_start() {
    local dir=$1 mode=${2:-503}
    command -v openssl >/dev/null && command -v python3 >/dev/null || return 77
    mkdir -p "$dir"
    K8S_DIR=$dir
    K8S_TOKEN=crescent-test-token-$RANDOM$RANDOM
    K8S_BACKEND_NS=crescent-test
    (
        set -e
        cd "$dir"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout ca.key -out ca.crt -days 2 -subj "/CN=crescent-test-ca" \
            -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout server.key -out server.csr -subj "/CN=127.0.0.1" 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
            -out server.crt -days 2 -extfile server.ext 2>/dev/null
        # A client certificate for kubeconfig client-certificate / client-key users.
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -keyout client.key -out client.csr -subj "/CN=crescent-client/O=crescent" 2>/dev/null
        printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n' >client.ext
        openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
            -out client.crt -days 2 -extfile client.ext 2>/dev/null
    ) || { echo "k8s_env: openssl failed" >&2; return 1; }
    rm -f "$dir/port"
    python3 "$K8S_ENV_SRC_DIR/k8s_lease_server.py" --cert "$dir/server.crt" \
        --key "$dir/server.key" --token "$K8S_TOKEN" --port-file "$dir/port" \
        --readonly-token "$K8S_TOKEN-ro" --client-ca "$dir/ca.crt" \
        --outage "$mode" ${K8S_DOUBLE_ARGS:-} >"$dir/double.out" 2>"$dir/double.err" &
    K8S_PID=$!
    local i
    for i in $(seq 100); do
        [ -s "$dir/port" ] && break
        kill -0 "$K8S_PID" 2>/dev/null || { cat "$dir/double.err" >&2; return 1; }
        sleep 0.05
    done
    [ -s "$dir/port" ] || { echo "k8s_env: double did not start" >&2; return 1; }
    K8S_PORT=$(cat "$dir/port")
    k8s_write_kubeconfig "$dir/kubeconfig" "$K8S_TOKEN"
    export KUBECONFIG=$dir/kubeconfig K8S_PORT K8S_PID K8S_DIR K8S_TOKEN K8S_BACKEND_NS
}

# k8s_write_kubeconfig PATH TOKEN: a kubeconfig for the double with the given bearer token.
k8s_write_kubeconfig() {
    cat >"$1" <<KCFG
apiVersion: v1
kind: Config
current-context: crescent-test
clusters:
- name: double
  cluster:
    server: https://127.0.0.1:$K8S_PORT
    certificate-authority: $K8S_DIR/ca.crt
contexts:
- name: crescent-test
  context:
    cluster: double
    user: tester
    namespace: $K8S_BACKEND_NS
users:
- name: tester
  user:
    token: $2
KCFG
}

k8s_outage() {
    kill -USR1 "$K8S_PID"
}

k8s_lease_json() {
    curl -s --cacert "$K8S_DIR/ca.crt" -H "Authorization: Bearer $K8S_TOKEN" \
        "https://127.0.0.1:$K8S_PORT/apis/coordination.k8s.io/v1/namespaces/$1/leases/$2"
}

k8s_env_stop() {
    if [ -n "${K8S_PID:-}" ]; then
        kill "$K8S_PID" 2>/dev/null
        wait "$K8S_PID" 2>/dev/null
        K8S_PID=
    fi
}
