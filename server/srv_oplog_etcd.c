/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The etcd op-log store (srv_oplog_int.h), over etcd's v3 JSON gateway (libcurl, jansson):
 * entry seq of epoch E is the key crescent/{<cluster>}/oplog/<E, 20 digits>/<seq, 20 digits>, so
 * key order is log order; the fence is crescent/{<cluster>}/oplog_epoch (20 digits, so that
 * etcd's byte-wise value comparison orders epochs). An append is a transaction that puts the
 * entries only if the fence equals the writer's epoch; a new leader's fence transaction raises
 * the fence unless it is already higher. etcd allows 128 operations per transaction, so larger
 * batches take several round trips (each entry is idempotent, so a partial batch retried is
 * harmless). Replay reads the prefix in key order, 1000 keys per range request. Trimming up to
 * a snapshot deletes a key range and records the trim point crescent/{<cluster>}/oplog_trimmed
 * in one transaction that compares the fence.
 */
#include "common/fmacros.h"

#include "server/srv_oplog_int.h"

#include "common/cm_buf.h"
#include "common/cm_mem.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRV_OPE_IO_MS    2000 /* bound on one request */
#define SRV_OPE_TXN_OPS  120  /* puts per transaction (etcd's default limit is 128) */
#define SRV_OPE_RANGE    1000 /* keys per range request */
#define SRV_OPE_MAX_BODY (64 << 20)

static struct {
    char endpoints[8][256];
    int n;
    char prefix[320]; /* crescent/{c}/oplog/ */
    char fence[320];  /* crescent/{c}/oplog_epoch */
    char base[320];   /* crescent/{c}/oplog_trimmed: the trim point, 20 digits */
    char desc[700];
} srv_ope;

/* A connection: one curl handle and its response buffer; cur is the endpoint in use. */
struct srv_ope_conn {
    CURL *curl;
    struct cm_buf body;
    int cur;
};

static pthread_once_t srv_ope_once = PTHREAD_ONCE_INIT;

static void srv_ope_global_init(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- base64 --------------------------------------------------------------------------------- */

static const char srv_ope_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Returns a JSON string holding base64(p[0..n)). */
static json_t *srv_ope_b64_json(const void *p, size_t n) {
    const unsigned char *in = p;
    char *out = cm_malloc((n + 2) / 3 * 4 + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = srv_ope_b64[(v >> 18) & 63];
        out[o++] = srv_ope_b64[(v >> 12) & 63];
        out[o++] = i + 1 < n ? srv_ope_b64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? srv_ope_b64[v & 63] : '=';
    }
    out[o] = '\0';
    json_t *j = json_string(out);
    cm_free(out);
    return j;
}

static json_t *srv_ope_b64_str(const char *s) {
    return srv_ope_b64_json(s, strlen(s));
}

/* Decodes base64 in into a new buffer (caller frees); *n gets the length. NULL when invalid. */
static char *srv_ope_unb64(const char *in, size_t *n) {
    size_t len = strlen(in), o = 0;
    char *out = cm_malloc(len / 4 * 3 + 3);
    uint32_t acc = 0;
    int bits = 0;
    for (; *in && *in != '='; in++) {
        const char *q = strchr(srv_ope_b64, *in);
        if (!q) {
            cm_free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)(q - srv_ope_b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    *n = o;
    return out;
}

/* ---- HTTP --------------------------------------------------------------------------------------
 */

static size_t srv_ope_on_body(char *data, size_t size, size_t nmemb, void *arg) {
    struct srv_ope_conn *c = arg;
    if (c->body.len + size * nmemb > SRV_OPE_MAX_BODY)
        return 0;
    cm_buf_append(&c->body, data, size * nmemb);
    return size * nmemb;
}

/*
 * POSTs req (taking its reference) to /v3/<path>, trying each endpoint in turn when one cannot
 * be reached. Returns the parsed response (caller json_decref's it) or NULL with err set.
 */
static json_t *srv_ope_post(struct srv_ope_conn *c, const char *path, json_t *req, char *err,
                            size_t errlen) {
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    json_t *resp = NULL;
    for (int tries = 0; tries < srv_ope.n && body; tries++) {
        const char *ep = srv_ope.endpoints[c->cur];
        char url[400];
        snprintf(url, sizeof(url), "http://%s/v3/%s", ep, path);
        struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
        cm_buf_clear(&c->body);
        curl_easy_setopt(c->curl, CURLOPT_URL, url);
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        CURLcode cc = curl_easy_perform(c->curl);
        curl_slist_free_all(hdr);
        if (cc != CURLE_OK) {
            snprintf(err, errlen, "op-log store etcd://%s: %s", ep, curl_easy_strerror(cc));
            c->cur = (c->cur + 1) % srv_ope.n;
            continue;
        }
        long code = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
        json_error_t jerr;
        resp = json_loadb(c->body.data ? c->body.data : "", c->body.len, 0, &jerr);
        const char *msg = resp ? json_string_value(json_object_get(resp, "error")) : NULL;
        if (!resp || code != 200 || msg) {
            snprintf(err, errlen, "op-log store etcd://%s: %s: HTTP %ld%s%s", ep, path, code,
                     msg ? ": " : "", msg ? msg : "");
            json_decref(resp);
            resp = NULL;
        }
        break;
    }
    free(body);
    return resp;
}

static void *srv_ope_connect(char *err, size_t errlen) {
    pthread_once(&srv_ope_once, srv_ope_global_init);
    struct srv_ope_conn *c = cm_calloc(1, sizeof(*c));
    c->curl = curl_easy_init();
    if (!c->curl) {
        snprintf(err, errlen, "op-log store: cannot create a curl handle");
        cm_free(c);
        return NULL;
    }
    cm_buf_init(&c->body);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, srv_ope_on_body);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)SRV_OPE_IO_MS);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)SRV_OPE_IO_MS);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    return c;
}

static void srv_ope_disconnect(void *conn) {
    struct srv_ope_conn *c = conn;
    if (!c)
        return;
    curl_easy_cleanup(c->curl);
    cm_buf_fini(&c->body);
    cm_free(c);
}

/* ---- the store ----------------------------------------------------------------------------------
 */

/* {"key": b64(k), "target": "VALUE", "result": result, "value": b64(v)} */
static json_t *srv_ope_cmp(const char *k, const char *result, const char *v) {
    return json_pack("{s:o, s:s, s:s, s:o}", "key", srv_ope_b64_str(k), "target", "VALUE", "result",
                     result, "value", srv_ope_b64_str(v));
}

static json_t *srv_ope_put(json_t *key_b64, json_t *value_b64) {
    return json_pack("{s:{s:o, s:o}}", "request_put", "key", key_b64, "value", value_b64);
}

/* Runs txn; returns 1 when its compare held, 0 when not, -1 on error. */
static int srv_ope_txn(struct srv_ope_conn *c, json_t *txn, char *err, size_t errlen) {
    json_t *r = srv_ope_post(c, "kv/txn", txn, err, errlen);
    if (!r)
        return -1;
    int ok = json_is_true(json_object_get(r, "succeeded"));
    json_decref(r);
    return ok;
}

static int srv_ope_append(void *conn, uint64_t epoch, uint64_t first_seq, const char *const *v,
                          const size_t *lens, size_t n, char *err, size_t errlen) {
    char ep[24];
    snprintf(ep, sizeof(ep), "%020" PRIu64, epoch);
    if (n == 0) { /* fence: raise to epoch unless already higher */
        json_t *txn = json_pack("{s:[o], s:[], s:[o]}", "compare",
                                srv_ope_cmp(srv_ope.fence, "GREATER", ep), "success", "failure",
                                srv_ope_put(srv_ope_b64_str(srv_ope.fence), srv_ope_b64_str(ep)));
        int rc = srv_ope_txn(conn, txn, err, errlen);
        if (rc == 1)
            snprintf(err, errlen, "FENCED op-log fenced above epoch %" PRIu64, epoch);
        return rc == 0 ? 0 : -1;
    }
    for (size_t from = 0; from < n; from += SRV_OPE_TXN_OPS) {
        size_t k = n - from < SRV_OPE_TXN_OPS ? n - from : SRV_OPE_TXN_OPS;
        json_t *puts = json_array();
        for (size_t i = from; i < from + k; i++) {
            char key[400];
            snprintf(key, sizeof(key), "%s%s/%020" PRIu64, srv_ope.prefix, ep, first_seq + i);
            json_array_append_new(
                puts, srv_ope_put(srv_ope_b64_str(key), srv_ope_b64_json(v[i], lens[i])));
        }
        json_t *txn =
            json_pack("{s:[o], s:o, s:[]}", "compare", srv_ope_cmp(srv_ope.fence, "EQUAL", ep),
                      "success", puts, "failure");
        int rc = srv_ope_txn(conn, txn, err, errlen);
        if (rc == 0)
            snprintf(err, errlen, "FENCED op-log fence is not epoch %" PRIu64, epoch);
        if (rc != 1)
            return -1;
    }
    return 0;
}

/* Feeds the kvs of one range response to cb; *last_key gets the last key (caller frees). */
static int srv_ope_feed(json_t *kvs, uint64_t *index, srv_oplog_scan_cb *cb, void *arg,
                        char **last_key, size_t *last_len) {
    for (size_t i = 0; i < json_array_size(kvs); i++) {
        json_t *kv = json_array_get(kvs, i);
        const char *kb = json_string_value(json_object_get(kv, "key"));
        const char *vb = json_string_value(json_object_get(kv, "value"));
        size_t klen = 0, vlen = 0;
        char *key = kb ? srv_ope_unb64(kb, &klen) : NULL;
        char *val = vb ? srv_ope_unb64(vb, &vlen) : cm_calloc(1, 1);
        char where[600], hint[700];
        snprintf(where, sizeof(where), "%" PRIu64 " of etcd %s*", *index, srv_ope.prefix);
        snprintf(hint, sizeof(hint), "inspect it with etcdctl get '%.*s'", key ? (int)klen : 0,
                 key ? key : "");
        int rc = cb(arg, val, vlen, where, hint);
        cm_free(val);
        cm_free(*last_key);
        *last_key = key;
        *last_len = klen;
        (*index)++;
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int srv_ope_scan(void *conn, srv_oplog_scan_cb *cb, void *arg, char *err, size_t errlen) {
    size_t plen = strlen(srv_ope.prefix);
    char *end = cm_malloc(plen + 1);
    memcpy(end, srv_ope.prefix, plen + 1);
    end[plen - 1]++; /* the prefix's range end: '/' + 1 */
    char *start = cm_malloc(plen + 1);
    memcpy(start, srv_ope.prefix, plen + 1);
    size_t slen = plen;
    uint64_t index = 0;
    int rc = 0;
    for (;;) {
        json_t *req =
            json_pack("{s:o, s:o, s:I}", "key", srv_ope_b64_json(start, slen), "range_end",
                      srv_ope_b64_str(end), "limit", (json_int_t)SRV_OPE_RANGE);
        json_t *r = srv_ope_post(conn, "kv/range", req, err, errlen);
        if (!r) {
            rc = -1;
            break;
        }
        json_t *kvs = json_object_get(r, "kvs");
        char *last = NULL;
        size_t last_len = 0;
        rc = srv_ope_feed(kvs, &index, cb, arg, &last, &last_len);
        int more = json_is_true(json_object_get(r, "more"));
        json_decref(r);
        if (rc != 0 || !more || !last) {
            cm_free(last);
            break;
        }
        cm_free(start); /* next range starts just after the last key */
        start = cm_malloc(last_len + 1);
        memcpy(start, last, last_len);
        start[last_len] = '\0';
        slen = last_len + 1;
        cm_free(last);
    }
    cm_free(start);
    cm_free(end);
    return rc;
}

/*
 * One transaction, if the fence equals epoch: delete the keys from the prefix up to (not
 * including) <upto_epoch>/<upto + 1>, i.e. every entry of an older epoch (all numbered below
 * upto) and those of upto_epoch up to upto, and put the trim point.
 */
static int srv_ope_trim(void *conn, uint64_t epoch, uint64_t upto, uint64_t upto_epoch, char *err,
                        size_t errlen) {
    char ep[24], to[24], end[400];
    snprintf(ep, sizeof(ep), "%020" PRIu64, epoch);
    snprintf(to, sizeof(to), "%020" PRIu64, upto);
    snprintf(end, sizeof(end), "%s%020" PRIu64 "/%020" PRIu64, srv_ope.prefix, upto_epoch,
             upto + 1);
    json_t *del = json_pack("{s:{s:o, s:o}}", "request_delete_range", "key",
                            srv_ope_b64_str(srv_ope.prefix), "range_end", srv_ope_b64_str(end));
    json_t *txn = json_pack(
        "{s:[o], s:[o, o], s:[]}", "compare", srv_ope_cmp(srv_ope.fence, "EQUAL", ep), "success",
        del, srv_ope_put(srv_ope_b64_str(srv_ope.base), srv_ope_b64_str(to)), "failure");
    int rc = srv_ope_txn(conn, txn, err, errlen);
    if (rc == 0)
        snprintf(err, errlen, "FENCED op-log fence is not epoch %" PRIu64, epoch);
    return rc == 1 ? 0 : -1;
}

/* The value of the first key in [key, range_end) (range_end NULL: key alone), decoded into a
   new string (caller frees; NULL when there is none). Returns 0 or -1 (err). */
static int srv_ope_first(void *conn, const char *key, const char *range_end, char **out, char *err,
                         size_t errlen) {
    json_t *req = range_end ? json_pack("{s:o, s:o, s:I}", "key", srv_ope_b64_str(key), "range_end",
                                        srv_ope_b64_str(range_end), "limit", (json_int_t)1)
                            : json_pack("{s:o}", "key", srv_ope_b64_str(key));
    json_t *r = srv_ope_post(conn, "kv/range", req, err, errlen);
    if (!r)
        return -1;
    json_t *kv = json_array_get(json_object_get(r, "kvs"), 0);
    const char *vb = kv ? json_string_value(json_object_get(kv, "value")) : NULL;
    size_t n = 0;
    *out = NULL;
    if (vb && (*out = srv_ope_unb64(vb, &n)) != NULL)
        (*out)[n] = '\0';
    json_decref(r);
    return 0;
}

static int srv_ope_bounds(void *conn, uint64_t *base, uint64_t *first, char *err, size_t errlen) {
    size_t plen = strlen(srv_ope.prefix);
    char end[320], *b = NULL, *f = NULL;
    memcpy(end, srv_ope.prefix, plen + 1);
    end[plen - 1]++;
    if (srv_ope_first(conn, srv_ope.base, NULL, &b, err, errlen) != 0 ||
        srv_ope_first(conn, srv_ope.prefix, end, &f, err, errlen) != 0) {
        cm_free(b);
        return -1;
    }
    unsigned long long e, q;
    *base = b ? strtoull(b, NULL, 10) : 0;
    *first = f && sscanf(f, "%llu %llu ", &e, &q) == 2 ? q : 0;
    cm_free(b);
    cm_free(f);
    return 0;
}

static long srv_ope_read_from(void *conn, uint64_t seq, uint64_t key_epoch, size_t max,
                              srv_oplog_scan_cb *cb, void *arg, uint64_t *base, uint64_t *len,
                              char *err, size_t errlen) {
    size_t plen = strlen(srv_ope.prefix);
    char start[400], end[320];
    memcpy(end, srv_ope.prefix, plen + 1);
    end[plen - 1]++;
    if (key_epoch)
        snprintf(start, sizeof(start), "%s%020" PRIu64 "/%020" PRIu64, srv_ope.prefix, key_epoch,
                 seq);
    else
        snprintf(start, sizeof(start), "%s", srv_ope.prefix);
    json_t *req = json_pack("{s:o, s:o, s:I}", "key", srv_ope_b64_str(start), "range_end",
                            srv_ope_b64_str(end), "limit", (json_int_t)max);
    json_t *r = srv_ope_post(conn, "kv/range", req, err, errlen);
    if (!r)
        return -1;
    json_t *kvs = json_object_get(r, "kvs");
    char *last = NULL, *b = NULL;
    size_t last_len = 0;
    uint64_t index = 0;
    long rc = srv_ope_feed(kvs, &index, cb, arg, &last, &last_len) == 0 ? (long)index : -1;
    cm_free(last);
    json_decref(r);
    /* the trim point after the entries: it only grows (etcd logs are never compacted) */
    if (rc >= 0 && srv_ope_first(conn, srv_ope.base, NULL, &b, err, errlen) != 0)
        rc = -1;
    *base = b ? strtoull(b, NULL, 10) : 0;
    *len = 0;
    cm_free(b);
    return rc;
}

static int srv_ope_open(const struct ha_uri *u, const char *cluster, char *err, size_t errlen) {
    if (u->user[0] || u->password[0]) {
        snprintf(err, errlen, "oplog_store: etcd with a user or password is not supported");
        return -1;
    }
    srv_ope.n = u->nhosts < 8 ? u->nhosts : 8;
    for (int i = 0; i < srv_ope.n; i++)
        snprintf(srv_ope.endpoints[i], sizeof(srv_ope.endpoints[i]), "%s", u->hosts[i]);
    snprintf(srv_ope.prefix, sizeof(srv_ope.prefix), "crescent/{%s}/oplog/", cluster);
    snprintf(srv_ope.fence, sizeof(srv_ope.fence), "crescent/{%s}/oplog_epoch", cluster);
    snprintf(srv_ope.base, sizeof(srv_ope.base), "crescent/{%s}/oplog_trimmed", cluster);
    snprintf(srv_ope.desc, sizeof(srv_ope.desc), "etcd %s %s*", srv_ope.endpoints[0],
             srv_ope.prefix);
    void *c = srv_ope_connect(err, errlen);
    if (!c)
        return -1;
    json_t *r = srv_ope_post(c, "maintenance/status", json_object(), err, errlen);
    srv_ope_disconnect(c);
    if (!r)
        return -1;
    json_decref(r);
    return 0;
}

static const char *srv_ope_describe(void) {
    return srv_ope.desc;
}

const struct srv_oplog_store srv_oplog_etcd = {
    .scheme = "etcd",
    .open = srv_ope_open,
    .connect = srv_ope_connect,
    .disconnect = srv_ope_disconnect,
    .append = srv_ope_append,
    .trim = srv_ope_trim,
    .bounds = srv_ope_bounds,
    .scan = srv_ope_scan,
    .read_from = srv_ope_read_from,
    .describe = srv_ope_describe,
};
