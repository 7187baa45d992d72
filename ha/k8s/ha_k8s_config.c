/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the Kubernetes API is and how to authenticate: the in-cluster service account
 * (KUBERNETES_SERVICE_HOST/PORT plus the token, ca.crt and namespace files) or a kubeconfig
 * file ($KUBECONFIG or ~/.kube/config) read with libyaml: current-context selects the cluster
 * (server, certificate-authority[-data], insecure-skip-tls-verify), the user (token, tokenFile,
 * client-certificate[-data], client-key[-data]) and the namespace.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "ha/k8s/ha_k8s.h"

#define SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"
#define FILE_MAX       (4 << 20) /* credentials and kubeconfigs are small */

/* Frees every owned string of c and zeroes it. */
void ha_k8s__config_fini(struct ha_k8s_config *c) {
    cm_free(c->server);
    cm_free(c->ca_file);
    cm_free(c->ca_data);
    cm_free(c->cert_file);
    cm_free(c->cert_data);
    cm_free(c->key_file);
    cm_free(c->key_data);
    cm_free(c->token);
    cm_free(c->namespace_);
    memset(c, 0, sizeof(*c));
}

/* Reads a whole small file into a NUL-terminated cm_malloc'd buffer. Returns 0 or -errno. */
static int read_file(const char *path, char **out, size_t *outlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t cap = 4096, len = 0;
    char *buf = cm_malloc(cap);
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= FILE_MAX) {
                close(fd);
                cm_free(buf);
                return -EFBIG;
            }
            cap *= 2;
            buf = cm_realloc(buf, cap);
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int rc = -errno;
            close(fd);
            cm_free(buf);
            return rc;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    *out = buf;
    if (outlen)
        *outlen = len;
    return 0;
}

/* Strips trailing whitespace (token and namespace files end with a newline). */
static void rstrip(char *s) {
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

static int b64_val(unsigned char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

/* Decodes base64 into a new NUL-terminated buffer. See ha_k8s.h. */
int ha_k8s__base64_decode(const char *in, size_t len, char **out, size_t *outlen) {
    char *buf = cm_malloc(len / 4 * 3 + 4);
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64_val(c);
        if (v < 0 || pad > 0) {
            cm_free(buf);
            return -EINVAL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (bits >= 6 || pad > 2) { /* a lone sextet cannot encode a byte */
        cm_free(buf);
        return -EINVAL;
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* YAML document navigation                                                                  */
/* ---------------------------------------------------------------------------------------- */

static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key) {
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp((char *)k->data.scalar.value, key) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

/* The scalar value of map[key], or NULL when absent or not a scalar. */
static const char *map_str(yaml_document_t *doc, yaml_node_t *map, const char *key) {
    yaml_node_t *v = map_get(doc, map, key);
    if (!v || v->type != YAML_SCALAR_NODE)
        return NULL;
    return (const char *)v->data.scalar.value;
}

/* In the sequence top[list], the item whose name is `name`; returns its `field` mapping. */
static yaml_node_t *named_entry(yaml_document_t *doc, yaml_node_t *top, const char *list,
                                const char *name, const char *field) {
    yaml_node_t *seq = map_get(doc, top, list);
    if (!seq || seq->type != YAML_SEQUENCE_NODE)
        return NULL;
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++) {
        yaml_node_t *item = yaml_document_get_node(doc, *it);
        const char *n = map_str(doc, item, "name");
        if (n && strcmp(n, name) == 0)
            return map_get(doc, item, field);
    }
    return NULL;
}

static char *resolve_path(const char *base_dir, const char *p) {
    if (p[0] == '/' || !base_dir || !base_dir[0])
        return cm_strdup(p);
    size_t n = strlen(base_dir) + strlen(p) + 2;
    char *s = cm_malloc(n);
    snprintf(s, n, "%s/%s", base_dir, p);
    return s;
}

/* Sets *file or *data from node[file_key] / node[data_key]; data wins as in kubectl. */
static int take_cred(yaml_document_t *doc, yaml_node_t *node, const char *file_key,
                     const char *data_key, const char *base_dir, char **file, char **data,
                     size_t *datalen, char *err, size_t errlen) {
    const char *d = map_str(doc, node, data_key);
    const char *f = map_str(doc, node, file_key);
    if (d && d[0]) {
        if (ha_k8s__base64_decode(d, strlen(d), data, datalen) < 0) {
            snprintf(err, errlen, "kubeconfig: %s is not valid base64", data_key);
            return -CM_EPROTOCOL;
        }
    } else if (f && f[0]) {
        *file = resolve_path(base_dir, f);
    }
    return 0;
}

static int parse_user(yaml_document_t *doc, yaml_node_t *user, const char *base_dir,
                      struct ha_k8s_config *out, char *err, size_t errlen) {
    if (!user)
        return 0; /* anonymous: the API server decides */
    int rc = take_cred(doc, user, "client-certificate", "client-certificate-data", base_dir,
                       &out->cert_file, &out->cert_data, &out->cert_len, err, errlen);
    if (rc == 0)
        rc = take_cred(doc, user, "client-key", "client-key-data", base_dir, &out->key_file,
                       &out->key_data, &out->key_len, err, errlen);
    if (rc < 0)
        return rc;
    const char *tok = map_str(doc, user, "token");
    const char *tok_file = map_str(doc, user, "tokenFile");
    if (tok && tok[0]) {
        out->token = cm_strdup(tok);
    } else if (tok_file && tok_file[0]) {
        char *path = resolve_path(base_dir, tok_file);
        rc = read_file(path, &out->token, NULL);
        if (rc < 0) {
            snprintf(err, errlen, "kubeconfig: cannot read tokenFile %s: %s", path,
                     cm_strerror(rc));
            cm_free(path);
            return rc;
        }
        cm_free(path);
        rstrip(out->token);
    }
    if (map_get(doc, user, "exec") || map_get(doc, user, "auth-provider")) {
        if (!out->token && !out->cert_file && !out->cert_data) {
            snprintf(err, errlen,
                     "kubeconfig: user exec/auth-provider plugins are not "
                     "supported; use a token or client certificate");
            return -CM_ENOT_SUPPORTED;
        }
    }
    return 0;
}

static int parse_doc(yaml_document_t *doc, const char *base_dir, struct ha_k8s_config *out,
                     char *err, size_t errlen) {
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        snprintf(err, errlen, "kubeconfig: not a YAML mapping");
        return -CM_EPROTOCOL;
    }
    const char *cur = map_str(doc, root, "current-context");
    if (!cur || !cur[0]) {
        snprintf(err, errlen, "kubeconfig: no current-context");
        return -CM_EBAD_URI;
    }
    yaml_node_t *ctx = named_entry(doc, root, "contexts", cur, "context");
    if (!ctx) {
        snprintf(err, errlen, "kubeconfig: context \"%s\" not found", cur);
        return -CM_EBAD_URI;
    }
    const char *cluster_name = map_str(doc, ctx, "cluster");
    const char *user_name = map_str(doc, ctx, "user");
    const char *ns = map_str(doc, ctx, "namespace");
    yaml_node_t *cluster =
        cluster_name ? named_entry(doc, root, "clusters", cluster_name, "cluster") : NULL;
    const char *server = map_str(doc, cluster, "server");
    if (!server || !server[0]) {
        snprintf(err, errlen, "kubeconfig: cluster \"%s\" of context \"%s\" has no server",
                 cluster_name ? cluster_name : "", cur);
        return -CM_EBAD_URI;
    }
    out->server = cm_strdup(server);
    size_t n = strlen(out->server);
    while (n > 0 && out->server[n - 1] == '/')
        out->server[--n] = '\0';
    const char *insecure = map_str(doc, cluster, "insecure-skip-tls-verify");
    out->insecure = insecure && strcmp(insecure, "true") == 0;
    int rc = take_cred(doc, cluster, "certificate-authority", "certificate-authority-data",
                       base_dir, &out->ca_file, &out->ca_data, &out->ca_len, err, errlen);
    if (rc < 0)
        return rc;
    if (ns && ns[0])
        out->namespace_ = cm_strdup(ns);
    yaml_node_t *user = user_name ? named_entry(doc, root, "users", user_name, "user") : NULL;
    if (user_name && !user) {
        snprintf(err, errlen, "kubeconfig: user \"%s\" not found", user_name);
        return -CM_EBAD_URI;
    }
    return parse_user(doc, user, base_dir, out, err, errlen);
}

/* Parses kubeconfig text using its current-context. See ha_k8s.h. */
int ha_k8s__kubeconfig_parse(const char *text, size_t len, const char *base_dir,
                             struct ha_k8s_config *out, char *err, size_t errlen) {
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, errlen, "kubeconfig: cannot initialize the YAML parser");
        return -ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "kubeconfig: YAML error at line %zu: %s",
                 parser.problem_mark.line + 1, parser.problem ? parser.problem : "?");
        yaml_parser_delete(&parser);
        return -CM_EPROTOCOL;
    }
    int rc = parse_doc(&doc, base_dir, out, err, errlen);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc < 0)
        ha_k8s__config_fini(out);
    return rc;
}

static int load_kubeconfig(const char *path, struct ha_k8s_config *out, char *err, size_t errlen) {
    char *text;
    size_t len;
    int rc = read_file(path, &text, &len);
    if (rc < 0) {
        snprintf(err, errlen, "kubeconfig %s: %s", path, cm_strerror(rc));
        return rc;
    }
    char *dir = cm_strdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    rc = ha_k8s__kubeconfig_parse(text, len, dir, out, err, errlen);
    cm_free(dir);
    cm_free(text);
    if (rc == 0)
        snprintf(out->source, sizeof(out->source), "kubeconfig %s", path);
    return rc;
}

static int load_in_cluster(const char *sa_dir, struct ha_k8s_config *out, char *err,
                           size_t errlen) {
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    char path[1024];
    size_t n = strlen(host) + 32;
    out->server = cm_malloc(n);
    if (strchr(host, ':') && host[0] != '[') /* IPv6 literal, not yet bracketed */
        snprintf(out->server, n, "https://[%s]:%s", host, port && port[0] ? port : "443");
    else
        snprintf(out->server, n, "https://%s:%s", host, port && port[0] ? port : "443");
    snprintf(path, sizeof(path), "%s/token", sa_dir);
    int rc = read_file(path, &out->token, NULL);
    if (rc < 0) {
        snprintf(err, errlen, "in-cluster config: cannot read %s: %s", path, cm_strerror(rc));
        ha_k8s__config_fini(out);
        return rc;
    }
    rstrip(out->token);
    snprintf(path, sizeof(path), "%s/ca.crt", sa_dir);
    if (access(path, R_OK) == 0)
        out->ca_file = cm_strdup(path);
    snprintf(path, sizeof(path), "%s/namespace", sa_dir);
    if (read_file(path, &out->namespace_, NULL) == 0) {
        rstrip(out->namespace_);
        if (!out->namespace_[0]) {
            cm_free(out->namespace_);
            out->namespace_ = NULL;
        }
    }
    snprintf(out->source, sizeof(out->source), "in-cluster service account %s", sa_dir);
    return 0;
}

/* Loads the API configuration from the environment. See ha_k8s.h. */
int ha_k8s__config_load(struct ha_k8s_config *out, char *err, size_t errlen) {
    const char *kc = getenv("KUBECONFIG");
    if (kc && kc[0]) {
        char *first = cm_strdup(kc);
        char *colon = strchr(first, ':');
        if (colon)
            *colon = '\0';
        int rc = load_kubeconfig(first, out, err, errlen);
        cm_free(first);
        return rc;
    }
    const char *sa_dir = getenv("CRESCENT_K8S_SA_DIR");
    if (!sa_dir || !sa_dir[0])
        sa_dir = SA_DIR_DEFAULT;
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    char tok[1024];
    snprintf(tok, sizeof(tok), "%s/token", sa_dir);
    if (host && host[0] && access(tok, R_OK) == 0)
        return load_in_cluster(sa_dir, out, err, errlen);
    const char *home = getenv("HOME");
    if (home && home[0]) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/.kube/config", home);
        if (access(path, R_OK) == 0)
            return load_kubeconfig(path, out, err, errlen);
    }
    snprintf(err, errlen,
             "kubernetes API: no configuration: set KUBECONFIG, run in a pod with a service "
             "account, or create ~/.kube/config");
    return -CM_EBAD_URI;
}
