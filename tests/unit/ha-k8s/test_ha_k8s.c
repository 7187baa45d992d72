/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the Kubernetes Lease backend's pure parts: Lease JSON decode/encode, Status
 * objects, MicroTime formatting and parsing, base64, kubeconfig parsing (current-context,
 * file paths, inline data, tokenFile, errors) and configuration loading from the environment.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "ha/k8s/ha_k8s.h"

/* A Lease as a real API server returns it (kubectl get lease -o json shape). */
static const char LEASE_JSON[] =
    "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
    "\"metadata\":{\"creationTimestamp\":\"2026-11-30T09:00:00Z\","
    "\"labels\":{\"app\":\"crescent\"},"
    "\"managedFields\":[{\"manager\":\"crescent\",\"operation\":\"Update\"}],"
    "\"name\":\"crescent-prod\",\"namespace\":\"kv\",\"resourceVersion\":\"48213\","
    "\"uid\":\"4b1e7a9c-0f1d-4c55-9d55-2a1d3c7e8f90\"},"
    "\"spec\":{\"acquireTime\":\"2026-11-30T10:00:00.000000Z\",\"holderIdentity\":"
    "\"10.0.0.7:50051\",\"leaseDurationSeconds\":15,\"leaseTransitions\":7,"
    "\"renewTime\":\"2026-11-30T10:00:05.250000Z\"}}";

Test(lease, decode_real_object) {
    struct ha_k8s_lease l = {0};
    char err[256];
    cr_assert_eq(ha_k8s__lease_decode(LEASE_JSON, strlen(LEASE_JSON), &l, err, sizeof(err)), 0,
                 "%s", err);
    cr_assert_str_eq(l.name, "crescent-prod");
    cr_assert_str_eq(l.namespace_, "kv");
    cr_assert_str_eq(l.resource_version, "48213");
    cr_assert_str_eq(l.uid, "4b1e7a9c-0f1d-4c55-9d55-2a1d3c7e8f90");
    cr_assert_str_eq(l.holder, "10.0.0.7:50051");
    cr_assert_eq(l.duration_s, 15);
    cr_assert_eq(l.transitions, 7);
    cr_assert_str_eq(l.acquire_time, "2026-11-30T10:00:00.000000Z");
    cr_assert_str_eq(l.renew_time, "2026-11-30T10:00:05.250000Z");
    cr_assert_not_null(l.obj);
    ha_k8s__lease_fini(&l);
    cr_assert_null(l.obj);
}

Test(lease, decode_empty_spec) {
    const char *j = "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
                    "\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"5\"},\"spec\":{}}";
    struct ha_k8s_lease l = {0};
    char err[256];
    cr_assert_eq(ha_k8s__lease_decode(j, strlen(j), &l, err, sizeof(err)), 0);
    cr_assert_str_eq(l.holder, "");
    cr_assert_eq(l.duration_s, 0);
    cr_assert_eq(l.transitions, 0);
    cr_assert_str_eq(l.renew_time, "");
    ha_k8s__lease_fini(&l);
}

Test(lease, decode_errors) {
    static const char *bad[] = {
        "not json",
        "[1,2]",
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"code\":404}",
        "{\"kind\":\"Lease\",\"metadata\":{}}",
        "{\"kind\":\"Lease\",\"metadata\":{\"name\":\"x\"},\"spec\":[]}",
        "{\"kind\":\"Lease\",\"metadata\":{\"name\":\"x\"},\"spec\":{\"leaseTransitions\":\"7\"}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ha_k8s_lease l = {0};
        char err[256] = "";
        cr_assert_eq(ha_k8s__lease_decode(bad[i], strlen(bad[i]), &l, err, sizeof(err)),
                     -CM_EPROTOCOL, "case %zu", i);
        cr_assert_neq(err[0], '\0', "case %zu has a message", i);
        cr_assert_null(l.obj);
    }
}

Test(lease, encode_preserves_unknown_fields) {
    struct ha_k8s_lease l = {0};
    char err[256];
    cr_assert_eq(ha_k8s__lease_decode(LEASE_JSON, strlen(LEASE_JSON), &l, err, sizeof(err)), 0);
    struct ha_k8s_lease m = l; /* shallow: obj stays owned by l */
    strcpy(m.holder, "10.0.0.8:50051");
    m.transitions = 8;
    strcpy(m.renew_time, "2026-11-30T10:01:00.000000Z");
    char *s = ha_k8s__lease_encode(&m);
    cr_assert_not_null(s);
    json_t *o = json_loads(s, 0, NULL);
    cr_assert_not_null(o);
    json_t *md = json_object_get(o, "metadata");
    json_t *spec = json_object_get(o, "spec");
    cr_assert_str_eq(json_string_value(json_object_get(o, "kind")), "Lease");
    cr_assert_str_eq(json_string_value(json_object_get(o, "apiVersion")), "coordination.k8s.io/v1");
    cr_assert_str_eq(json_string_value(json_object_get(md, "resourceVersion")), "48213");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(md, "labels"), "app")),
                     "crescent");
    cr_assert_null(json_object_get(md, "managedFields"));
    cr_assert_str_eq(json_string_value(json_object_get(spec, "holderIdentity")), "10.0.0.8:50051");
    cr_assert_eq(json_integer_value(json_object_get(spec, "leaseTransitions")), 8);
    cr_assert_eq(json_integer_value(json_object_get(spec, "leaseDurationSeconds")), 15);
    cr_assert_str_eq(json_string_value(json_object_get(spec, "renewTime")),
                     "2026-11-30T10:01:00.000000Z");
    json_decref(o);
    /* Round trip through the decoder. */
    struct ha_k8s_lease back = {0};
    cr_assert_eq(ha_k8s__lease_decode(s, strlen(s), &back, err, sizeof(err)), 0);
    cr_assert_str_eq(back.holder, "10.0.0.8:50051");
    cr_assert_eq(back.transitions, 8);
    free(s);
    ha_k8s__lease_fini(&back);
    ha_k8s__lease_fini(&l);
}

Test(lease, encode_fresh_and_cleared) {
    struct ha_k8s_lease l = {0};
    strcpy(l.name, "crescent-c1");
    strcpy(l.namespace_, "default");
    l.transitions = 3; /* released: no holder, duration 0 dropped */
    char *s = ha_k8s__lease_encode(&l);
    cr_assert_str_eq(s, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
                        "\"metadata\":{\"name\":\"crescent-c1\",\"namespace\":\"default\"},"
                        "\"spec\":{\"leaseTransitions\":3}}");
    free(s);
}

Test(lease, epoch_annotation) {
    /* Written next to other annotations, read back, and refused when it is not a number. */
    const char *with = "{\"kind\":\"Lease\",\"metadata\":{\"name\":\"l\",\"annotations\":"
                       "{\"team\":\"kv\",\"crescent.io/epoch\":\"41\"}},"
                       "\"spec\":{\"leaseTransitions\":3}}";
    struct ha_k8s_lease l = {0};
    char err[256];
    cr_assert_eq(ha_k8s__lease_decode(with, strlen(with), &l, err, sizeof(err)), 0);
    cr_assert_eq(l.epoch_note, 41);
    cr_assert_eq(l.transitions, 3);
    struct ha_k8s_lease m = l; /* shallow: obj stays owned by l */
    m.epoch_note = 42;
    char *s = ha_k8s__lease_encode(&m);
    json_t *o = json_loads(s, 0, NULL);
    json_t *notes = json_object_get(json_object_get(o, "metadata"), "annotations");
    cr_assert_str_eq(json_string_value(json_object_get(notes, "crescent.io/epoch")), "42");
    cr_assert_str_eq(json_string_value(json_object_get(notes, "team")), "kv");
    json_decref(o);
    free(s);
    ha_k8s__lease_fini(&l);
    struct ha_k8s_lease fresh = {0};
    strcpy(fresh.name, "l");
    fresh.transitions = 1;
    fresh.epoch_note = 7;
    s = ha_k8s__lease_encode(&fresh);
    cr_assert_str_eq(s, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
                        "\"metadata\":{\"name\":\"l\",\"annotations\":"
                        "{\"crescent.io/epoch\":\"7\"}},\"spec\":{\"leaseTransitions\":1}}");
    free(s);
    const char *bad = "{\"kind\":\"Lease\",\"metadata\":{\"name\":\"l\",\"annotations\":"
                      "{\"crescent.io/epoch\":\"seven\"}}}";
    cr_assert_eq(ha_k8s__lease_decode(bad, strlen(bad), &l, err, sizeof(err)), -CM_EPROTOCOL);
    cr_assert(strstr(err, "crescent.io/epoch") != NULL, "%s", err);
}

Test(lease, status_objects) {
    const char *st = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                     "\"Failure\",\"message\":\"Operation cannot be fulfilled on "
                     "leases.coordination.k8s.io \\\"x\\\": the object has been modified\","
                     "\"reason\":\"Conflict\",\"details\":{\"name\":\"x\",\"group\":"
                     "\"coordination.k8s.io\",\"kind\":\"leases\"},\"code\":409}";
    char reason[32], msg[200];
    cr_assert_eq(ha_k8s__status_decode(st, strlen(st), reason, sizeof(reason), msg, sizeof(msg)),
                 0);
    cr_assert_str_eq(reason, "Conflict");
    cr_assert(strstr(msg, "the object has been modified") != NULL);
    cr_assert_eq(ha_k8s__status_decode(LEASE_JSON, strlen(LEASE_JSON), reason, sizeof(reason), msg,
                                       sizeof(msg)),
                 -CM_EPROTOCOL);
    cr_assert_eq(ha_k8s__status_decode("<html>", 6, NULL, 0, NULL, 0), -CM_EPROTOCOL);
}

Test(time, micro_time_format_and_parse) {
    char buf[40];
    /* 2026-11-30T10:00:00Z = 1796032800 */
    ha_k8s__format_micro_time(1796032800ULL * 1000000 + 42, buf, sizeof(buf));
    cr_assert_str_eq(buf, "2026-11-30T10:00:00.000042Z");
    int64_t us;
    cr_assert_eq(ha_k8s__parse_time(buf, &us), 0);
    cr_assert_eq(us, 1796032800LL * 1000000 + 42);
    cr_assert_eq(ha_k8s__parse_time("2026-11-30T10:00:00Z", &us), 0);
    cr_assert_eq(us, 1796032800LL * 1000000);
    cr_assert_eq(ha_k8s__parse_time("2026-11-30T12:30:00.5+02:30", &us), 0);
    cr_assert_eq(us, 1796032800LL * 1000000 + 500000);
    cr_assert_eq(ha_k8s__parse_time("2026-11-30T10:00:00.123456789Z", &us), 0);
    cr_assert_eq(us, 1796032800LL * 1000000 + 123456);
    static const char *bad[] = {"",
                                "2026-11-30",
                                "2026-11-30T10:00:00",
                                "2026-13-01T00:00:00Z",
                                "2026-11-30T10:00:00.Z",
                                "2026-11-30T10:00:00Zjunk",
                                "2026/11/30T10:00:00Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(ha_k8s__parse_time(bad[i], &us), -EINVAL, "'%s'", bad[i]);
}

Test(base64, vectors) {
    static const struct {
        const char *in, *out;
    } v[] = {{"", ""},
             {"Zg==", "f"},
             {"Zm8=", "fo"},
             {"Zm9v", "foo"},
             {"Zm9vYg", "foob"},
             {"Zm9v\nYmFy", "foobar"},
             {"Zm9vYmE=", "fooba"}};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char *out;
        size_t len;
        cr_assert_eq(ha_k8s__base64_decode(v[i].in, strlen(v[i].in), &out, &len), 0, "%s", v[i].in);
        cr_assert_eq(len, strlen(v[i].out));
        cr_assert_str_eq(out, v[i].out);
        cm_free(out);
    }
    char *out;
    size_t len;
    cr_assert_eq(ha_k8s__base64_decode("Zm9v!", 5, &out, &len), -EINVAL);
    cr_assert_eq(ha_k8s__base64_decode("Z", 1, &out, &len), -EINVAL);
    cr_assert_eq(ha_k8s__base64_decode("Zg==Zg", 6, &out, &len), -EINVAL);
}

/* Two clusters, two users, two contexts; current-context picks the second of each. */
static const char KUBECONFIG[] = "apiVersion: v1\n"
                                 "kind: Config\n"
                                 "preferences: {}\n"
                                 "clusters:\n"
                                 "- name: dev\n"
                                 "  cluster:\n"
                                 "    server: https://dev.example:6443\n"
                                 "- name: prod\n"
                                 "  cluster:\n"
                                 "    server: https://10.0.0.1:6443/\n"
                                 "    certificate-authority: certs/ca.crt\n"
                                 "users:\n"
                                 "- name: dev-user\n"
                                 "  user:\n"
                                 "    token: devtoken\n"
                                 "- name: prod-admin\n"
                                 "  user:\n"
                                 "    client-certificate-data: Q0VSVA==\n"
                                 "    client-key: /abs/key.pem\n"
                                 "    token: prodtoken\n"
                                 "contexts:\n"
                                 "- name: dev\n"
                                 "  context: {cluster: dev, user: dev-user}\n"
                                 "- name: prod\n"
                                 "  context:\n"
                                 "    cluster: prod\n"
                                 "    user: prod-admin\n"
                                 "    namespace: kv\n"
                                 "current-context: prod\n";

Test(kubeconfig, current_context) {
    struct ha_k8s_config c = {0};
    char err[256];
    cr_assert_eq(ha_k8s__kubeconfig_parse(KUBECONFIG, strlen(KUBECONFIG), "/home/u/.kube", &c, err,
                                          sizeof(err)),
                 0, "%s", err);
    cr_assert_str_eq(c.server, "https://10.0.0.1:6443");
    cr_assert_str_eq(c.ca_file, "/home/u/.kube/certs/ca.crt");
    cr_assert_null(c.ca_data);
    cr_assert_eq(c.cert_len, 4);
    cr_assert_str_eq(c.cert_data, "CERT");
    cr_assert_null(c.cert_file);
    cr_assert_str_eq(c.key_file, "/abs/key.pem");
    cr_assert_str_eq(c.token, "prodtoken");
    cr_assert_str_eq(c.namespace_, "kv");
    cr_assert_eq(c.insecure, false);
    ha_k8s__config_fini(&c);
    cr_assert_null(c.server);
}

Test(kubeconfig, inline_ca_insecure_and_flow_style) {
    const char *y = "{current-context: a, clusters: [{name: c, cluster: {server: 'https://h:1',"
                    " certificate-authority-data: UEVN, insecure-skip-tls-verify: true}}],"
                    " contexts: [{name: a, context: {cluster: c, user: u}}],"
                    " users: [{name: u, user: {token: t}}]}";
    struct ha_k8s_config c = {0};
    char err[256];
    cr_assert_eq(ha_k8s__kubeconfig_parse(y, strlen(y), NULL, &c, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(c.ca_data, "PEM");
    cr_assert_eq(c.ca_len, 3);
    cr_assert_eq(c.insecure, true);
    cr_assert_null(c.namespace_);
    cr_assert_str_eq(c.token, "t");
    ha_k8s__config_fini(&c);
}

Test(kubeconfig, token_file_relative) {
    char dir[] = "/tmp/crescent-kc.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof(path), "%s/tok", dir);
    FILE *f = fopen(path, "w");
    fputs("filetoken\n", f);
    fclose(f);
    const char *y = "current-context: a\n"
                    "clusters: [{name: c, cluster: {server: https://h:1}}]\n"
                    "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
                    "users: [{name: u, user: {tokenFile: tok}}]\n";
    struct ha_k8s_config c = {0};
    char err[256];
    cr_assert_eq(ha_k8s__kubeconfig_parse(y, strlen(y), dir, &c, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(c.token, "filetoken");
    ha_k8s__config_fini(&c);
    unlink(path);
    rmdir(dir);
}

Test(kubeconfig, errors) {
    static const struct {
        const char *yaml, *msg;
    } v[] = {
        {"clusters: []\n", "no current-context"},
        {"current-context: x\ncontexts: []\n", "context \"x\" not found"},
        {"current-context: a\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n",
         "has no server"},
        {"current-context: a\nclusters: [{name: c, cluster: {server: https://h:1}}]\n"
         "contexts: [{name: a, context: {cluster: c, user: u}}]\n",
         "user \"u\" not found"},
        {"current-context: a\nclusters: [{name: c, cluster: {server: https://h:1, "
         "certificate-authority-data: '***'}}]\n"
         "contexts: [{name: a, context: {cluster: c}}]\n",
         "not valid base64"},
        {"current-context: a\nclusters: [{name: c, cluster: {server: https://h:1}}]\n"
         "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
         "users: [{name: u, user: {exec: {command: aws}}}]\n",
         "exec/auth-provider plugins are not supported"},
        {"current-context: [unclosed\n", "YAML error"},
        {"- just\n- a list\n", "not a YAML mapping"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        struct ha_k8s_config c = {0};
        char err[256] = "";
        int rc = ha_k8s__kubeconfig_parse(v[i].yaml, strlen(v[i].yaml), NULL, &c, err, sizeof(err));
        cr_assert_lt(rc, 0, "case %zu", i);
        cr_assert(strstr(err, v[i].msg) != NULL, "case %zu: '%s' lacks '%s'", i, err, v[i].msg);
        cr_assert_null(c.server, "case %zu: finalized on error", i);
    }
}

static void write_file(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

Test(config_load, kubeconfig_env) {
    char dir[] = "/tmp/crescent-kc.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    write_file(dir, "config", KUBECONFIG);
    char env[600];
    snprintf(env, sizeof(env), "%s/config:/nonexistent/other", dir);
    setenv("KUBECONFIG", env, 1);
    struct ha_k8s_config c = {0};
    char err[256];
    cr_assert_eq(ha_k8s__config_load(&c, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(c.server, "https://10.0.0.1:6443");
    char want[600];
    snprintf(want, sizeof(want), "%s/certs/ca.crt", dir);
    cr_assert_str_eq(c.ca_file, want);
    cr_assert(strstr(c.source, "kubeconfig") != NULL);
    ha_k8s__config_fini(&c);
    snprintf(want, sizeof(want), "%s/config", dir);
    unlink(want);
    rmdir(dir);
}

Test(config_load, in_cluster) {
    char dir[] = "/tmp/crescent-sa.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    write_file(dir, "token", "sa-token\n");
    write_file(dir, "ca.crt", "PEM\n");
    write_file(dir, "namespace", "prod-ns\n");
    unsetenv("KUBECONFIG");
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    setenv("CRESCENT_K8S_SA_DIR", dir, 1);
    struct ha_k8s_config c = {0};
    char err[256];
    cr_assert_eq(ha_k8s__config_load(&c, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(c.server, "https://10.96.0.1:443");
    cr_assert_str_eq(c.token, "sa-token");
    cr_assert_str_eq(c.namespace_, "prod-ns");
    char want[600];
    snprintf(want, sizeof(want), "%s/ca.crt", dir);
    cr_assert_str_eq(c.ca_file, want);
    ha_k8s__config_fini(&c);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    cr_assert_eq(ha_k8s__config_load(&c, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(c.server, "https://[fd00::1]:443");
    ha_k8s__config_fini(&c);
    /* No token file: not in-cluster; no ~/.kube/config either: a clear error. */
    const char *names[] = {"token", "ca.crt", "namespace"};
    for (int i = 0; i < 3; i++) {
        snprintf(want, sizeof(want), "%s/%s", dir, names[i]);
        unlink(want);
    }
    setenv("HOME", dir, 1);
    cr_assert_eq(ha_k8s__config_load(&c, err, sizeof(err)), -CM_EBAD_URI);
    cr_assert(strstr(err, "no configuration") != NULL, "%s", err);
    rmdir(dir);
}
