/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl client for the Kubernetes API: HTTPS with the cluster CA (file or inline PEM), bearer
 * token or client certificate, a deadline on every request, and one-line errors that tell an
 * unreachable API server (-CM_EUNREACHABLE) from rejected credentials (-CM_EAUTH). Streaming
 * GETs (watches) run on a second easy handle and deliver the body line by line.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "ha/k8s/ha_k8s.h"

struct ha_k8s_http {
    const struct ha_k8s_config *cfg;
    int timeout_ms;
    uint64_t deadline_ms;    /* 0 = none */
    CURL *easy;              /* plain requests */
    CURL *watch;             /* streaming requests */
    struct curl_slist *hdrs; /* Accept, Content-Type, Authorization */
    char curl_err[CURL_ERROR_SIZE];
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void) {
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void set_blob(CURL *e, CURLoption opt, char *data, size_t len) {
    struct curl_blob b = {.data = data, .len = len, .flags = CURL_BLOB_COPY};
    curl_easy_setopt(e, opt, &b);
}

/* Applies the TLS, auth and timeout options shared by both handles. */
static void setup_handle(struct ha_k8s_http *h, CURL *e) {
    const struct ha_k8s_config *c = h->cfg;
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->hdrs);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->curl_err);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)h->timeout_ms);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
    if (c->ca_data)
        set_blob(e, CURLOPT_CAINFO_BLOB, c->ca_data, c->ca_len);
    else if (c->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
    if (c->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (c->cert_data)
        set_blob(e, CURLOPT_SSLCERT_BLOB, c->cert_data, c->cert_len);
    else if (c->cert_file)
        curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
    if (c->key_data)
        set_blob(e, CURLOPT_SSLKEY_BLOB, c->key_data, c->key_len);
    else if (c->key_file)
        curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file);
}

/* Creates an HTTP client for cfg. See ha_k8s.h. */
int ha_k8s__http_create(const struct ha_k8s_config *cfg, int timeout_ms, struct ha_k8s_http **out,
                        char *err, size_t errlen) {
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK) {
        snprintf(err, errlen, "libcurl init failed: %s", curl_easy_strerror(global_rc));
        return -CM_EINTERNAL_ERROR;
    }
    struct ha_k8s_http *h = cm_calloc(1, sizeof(*h));
    h->cfg = cfg;
    h->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
    h->easy = curl_easy_init();
    h->watch = curl_easy_init();
    if (!h->easy || !h->watch) {
        ha_k8s__http_destroy(h);
        snprintf(err, errlen, "libcurl: cannot create a handle");
        return -ENOMEM;
    }
    h->hdrs = curl_slist_append(h->hdrs, "Accept: application/json");
    h->hdrs = curl_slist_append(h->hdrs, "Content-Type: application/json");
    h->hdrs = curl_slist_append(h->hdrs, "User-Agent: crescent-ha/1");
    h->hdrs = curl_slist_append(h->hdrs, "Expect:"); /* no 100-continue round trip */
    if (cfg->token) {
        size_t n = strlen(cfg->token) + 32;
        char *line = cm_malloc(n);
        snprintf(line, n, "Authorization: Bearer %s", cfg->token);
        h->hdrs = curl_slist_append(h->hdrs, line);
        cm_free(line);
    }
    setup_handle(h, h->easy);
    setup_handle(h, h->watch);
    *out = h;
    return 0;
}

/* Frees h and its handles. */
void ha_k8s__http_destroy(struct ha_k8s_http *h) {
    if (!h)
        return;
    if (h->easy)
        curl_easy_cleanup(h->easy);
    if (h->watch)
        curl_easy_cleanup(h->watch);
    curl_slist_free_all(h->hdrs);
    cm_free(h);
}

static size_t collect_cb(char *p, size_t size, size_t n, void *arg) {
    cm_buf_append(arg, p, size * n);
    return size * n;
}

/* Maps a failed transfer to a project error code with a one-line message. */
static int transport_error(struct ha_k8s_http *h, CURLcode cc, char *err, size_t errlen) {
    const char *detail = h->curl_err[0] ? h->curl_err : curl_easy_strerror(cc);
    switch (cc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
        snprintf(err, errlen, "kubernetes API %s: TLS verification failed: %s", h->cfg->server,
                 detail);
        return -CM_EAUTH;
    case CURLE_OPERATION_TIMEDOUT:
        snprintf(err, errlen, "kubernetes API %s: timed out: %s", h->cfg->server, detail);
        return -CM_EUNREACHABLE;
    default:
        snprintf(err, errlen, "kubernetes API %s unreachable: %s", h->cfg->server, detail);
        return -CM_EUNREACHABLE;
    }
}

/* Maps the HTTP statuses that no caller handles itself (auth, server trouble). */
static int status_error(long status, const struct cm_buf *body, char *err, size_t errlen) {
    char reason[64] = "", message[200] = "";
    if (body->len)
        ha_k8s__status_decode(body->data, body->len, reason, sizeof(reason), message,
                              sizeof(message));
    if (status == 401) {
        snprintf(err, errlen,
                 "kubernetes API: 401 Unauthorized: check the service-account "
                 "token (or the kubeconfig user credentials)");
        return -CM_EAUTH;
    }
    if (status == 403) {
        snprintf(err, errlen,
                 "kubernetes API: 403 Forbidden: the account needs get/create/update/watch "
                 "on leases.coordination.k8s.io: %s",
                 message);
        return -CM_EAUTH;
    }
    if (status >= 500 || status == 429) {
        snprintf(err, errlen, "kubernetes API: %ld %s%s%s", status, reason[0] ? reason : "error",
                 message[0] ? ": " : "", message);
        return -CM_EUNREACHABLE;
    }
    return 0;
}

/* Bounds the following requests by a monotonic deadline. See ha_k8s.h. */
void ha_k8s__http_set_deadline(struct ha_k8s_http *h, uint64_t deadline_ms) {
    h->deadline_ms = deadline_ms;
}

/* Performs one request with the client's deadline. See ha_k8s.h. */
int ha_k8s__http_request(struct ha_k8s_http *h, const char *method, const char *path,
                         const char *body, long *status, struct cm_buf *resp, char *err,
                         size_t errlen) {
    long timeout = h->timeout_ms;
    if (h->deadline_ms) {
        uint64_t now = cm_mono_ms();
        if (now >= h->deadline_ms) {
            snprintf(err, errlen, "kubernetes API %s: operation deadline passed before %s",
                     h->cfg->server, method);
            return -ETIMEDOUT;
        }
        if ((long)(h->deadline_ms - now) < timeout)
            timeout = (long)(h->deadline_ms - now);
    }
    size_t n = strlen(h->cfg->server) + strlen(path) + 1;
    char *url = cm_malloc(n);
    snprintf(url, n, "%s%s", h->cfg->server, path);
    cm_buf_clear(resp);
    h->curl_err[0] = '\0';
    CURL *e = h->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, resp);
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode cc = curl_easy_perform(e);
    cm_free(url);
    if (cc != CURLE_OK)
        return transport_error(h, cc, err, errlen);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
    return status_error(*status, resp, err, errlen);
}

struct stream_ctx {
    CURL *easy;
    struct cm_buf line;
    ha_k8s_line_cb *cb;
    void *arg;
    bool stopped;
    long status;
};

static size_t stream_cb(char *p, size_t size, size_t n, void *arg) {
    struct stream_ctx *s = arg;
    size_t len = size * n;
    if (s->status == 0)
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    cm_buf_append(&s->line, p, len);
    if (s->status != 200)
        return len; /* keep the error body for the message */
    char *nl;
    while ((nl = memchr(s->line.data, '\n', s->line.len)) != NULL) {
        size_t ll = (size_t)(nl - s->line.data);
        *nl = '\0';
        if (ll > 0 && s->cb(s->arg, s->line.data, ll)) {
            s->stopped = true;
            return 0; /* abort the transfer */
        }
        cm_buf_consume(&s->line, ll + 1);
    }
    return len;
}

/* Streams a watch line by line. See ha_k8s.h. */
int ha_k8s__http_stream(struct ha_k8s_http *h, const char *path, int timeout_ms,
                        ha_k8s_line_cb *line_cb, void *arg, char *err, size_t errlen) {
    size_t n = strlen(h->cfg->server) + strlen(path) + 1;
    char *url = cm_malloc(n);
    snprintf(url, n, "%s%s", h->cfg->server, path);
    struct stream_ctx s = {.easy = h->watch, .cb = line_cb, .arg = arg};
    cm_buf_init(&s.line);
    h->curl_err[0] = '\0';
    CURL *e = h->watch;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, stream_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
    CURLcode cc = curl_easy_perform(e);
    cm_free(url);
    int rc;
    if (s.stopped) {
        rc = 1;
    } else if (cc == CURLE_OPERATION_TIMEDOUT) {
        rc = -ETIMEDOUT;
    } else if (cc != CURLE_OK) {
        rc = transport_error(h, cc, err, errlen);
    } else {
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &s.status);
        rc = status_error(s.status, &s.line, err, errlen);
        if (rc == 0 && s.status == 410) {
            snprintf(err, errlen, "kubernetes API: watch answered 410 Gone (version too old)");
            rc = -ESTALE;
        } else if (rc == 0 && s.status != 200) {
            snprintf(err, errlen, "kubernetes API: watch answered %ld", s.status);
            rc = -CM_EPROTOCOL;
        }
    }
    cm_buf_fini(&s.line);
    return rc;
}
