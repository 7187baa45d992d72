/* SPDX-License-Identifier: Apache-2.0 */
/*
 * etcd election backend over the etcd v3 JSON gateway (/v3/..., etcd 3.4+) with libcurl and
 * jansson. Acquire = a read of both keys, a lease grant, and a transaction that, if the view key
 * crescent/<cluster>/master_view is absent and the epoch key crescent/<cluster>/epoch is unchanged
 * since the read, puts master_view = identity bound to the lease and sets the epoch key (not
 * bound to a lease) to max(epoch key, store revision, the candidate's floor) + 1: that value is
 * the epoch, so epochs grow strictly, also past an etcd that was wiped. Renew = lease keep-alive;
 * release = lease revoke (which deletes the view key). Standbys watch the view key from just
 * after their last read, so a delete (expiry or release) wakes them at once. Requests fail over
 * across the endpoints of the URI when one cannot be reached; a request that may have executed
 * (timeout after sending) is not retried elsewhere.
 */
#include "common/fmacros.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "ha/ha_int.h"

#define HA_ETCD_MAX_BODY (1 << 20) /* responses larger than this are refused */

struct ha_etcd {
    char endpoints[8][256];
    int nendpoints;
    int cur; /* endpoint in use */
    char key_b64[512];
    char epoch_key_b64[512]; /* crescent/<cluster>/epoch: the last epoch handed out */
    char value_b64[512];
    char identity[256];
    char user[128], password[256];
    char auth_header[600]; /* "Authorization: <token>" or "" */
    CURL *curl;
    int timeout_ms;
    int64_t lease;      /* our lease while we hold the key, else 0 */
    uint64_t floor;     /* an acquire takes an epoch above this */
    uint64_t watch_rev; /* watch from here: one past the revision of the last read */
    char *body;         /* response being received */
    size_t len;
    bool watching;      /* the write callback stops at the first event */
    bool watch_changed; /* it saw one */
};

static pthread_once_t ha_etcd_curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- base64 ---------------------------------------------------------------------------- */

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_encode(const char *in, size_t n, char *out, size_t cap) {
    size_t o = 0;

    if ((n + 2) / 3 * 4 + 1 > cap)
        return -1;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(unsigned char)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)(unsigned char)in[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)in[i + 2];
        out[o++] = b64_chars[(v >> 18) & 63];
        out[o++] = b64_chars[(v >> 12) & 63];
        out[o++] = i + 1 < n ? b64_chars[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? b64_chars[v & 63] : '=';
    }
    out[o] = '\0';
    return 0;
}

static int b64_val(int c) {
    const char *p = c ? strchr(b64_chars, c) : NULL;
    return p ? (int)(p - b64_chars) : -1;
}

/* Decodes into out (cap bytes, NUL-terminated); invalid input yields "". */
static void b64_decode(const char *in, char *out, size_t cap) {
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;

    for (; *in && *in != '='; in++) {
        int v = b64_val((unsigned char)*in);
        if (v < 0 || o + 1 >= cap) {
            o = 0;
            break;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[o] = '\0';
}

/* ---- HTTP ------------------------------------------------------------------------------ */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg) {
    struct ha_etcd *s = arg;
    size_t n = size * nmemb;

    if (s->len + n > HA_ETCD_MAX_BODY)
        return 0;
    s->body = cm_realloc(s->body, s->len + n + 1);
    memcpy(s->body + s->len, data, n);
    s->len += n;
    s->body[s->len] = '\0';
    if (s->watching && (strstr(s->body, "\"events\"") || strstr(s->body, "\"canceled\"") ||
                        strstr(s->body, "\"compact_revision\""))) {
        s->watch_changed = true;
        return 0; /* abort the stream: something happened */
    }
    return n;
}

static int64_t json_int64(json_t *o, const char *name) {
    json_t *v = json_object_get(o, name);

    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    return 0;
}

static int classify_etcd_error(const char *msg) {
    if (strstr(msg, "authentication failed") || strstr(msg, "invalid auth token") ||
        strstr(msg, "user name is empty") || strstr(msg, "permission denied") ||
        strstr(msg, "password"))
        return -CM_EAUTH;
    return -CM_EETCD_OPERATION_ERROR;
}

static int authenticate(struct ha_etcd *s, char *err, size_t errlen);

/*
 * POSTs body (compact JSON) to /v3/<path> on the current endpoint, failing over to the next one
 * when a connection cannot be made, all within s->timeout_ms. On success *out is the parsed
 * response (caller json_decref's it). A timeout after the request may have been sent returns
 * -ETIMEDOUT without retrying (the next call starts with the next endpoint).
 */
static int post_json(struct ha_etcd *s, const char *path, const char *body, json_t **out, char *err,
                     size_t errlen) {
    uint64_t deadline = cm_mono_ms() + (uint64_t)s->timeout_ms;
    bool reauthed = false;
    int tries = 0;

    *out = NULL;
    while (tries < s->nendpoints * 2) {
        struct curl_slist *hdr = NULL;
        uint64_t now = cm_mono_ms();
        const char *ep = s->endpoints[s->cur];
        char url[400];
        long code = 0;
        CURLcode cc;
        json_error_t jerr;
        json_t *j;

        if (now >= deadline)
            return ha__err(err, errlen, -ETIMEDOUT, "etcd://%s: %s: timed out", ep, path);
        snprintf(url, sizeof(url), "http://%s/v3/%s", ep, path);
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
        if (s->auth_header[0])
            hdr = curl_slist_append(hdr, s->auth_header);
        s->len = 0;
        curl_easy_setopt(s->curl, CURLOPT_URL, url);
        curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, (long)(deadline - now));
        curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(deadline - now));
        cc = curl_easy_perform(s->curl);
        curl_slist_free_all(hdr);
        tries++;
        if (s->watching && s->watch_changed)
            return 0;
        if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
            cc == CURLE_SEND_ERROR) {
            ha__err(err, errlen, -CM_EUNREACHABLE, "etcd://%s: %s", ep, curl_easy_strerror(cc));
            s->cur = (s->cur + 1) % s->nendpoints;
            if (tries >= s->nendpoints)
                return -CM_EUNREACHABLE;
            continue;
        }
        if (cc != CURLE_OK) {
            s->cur = (s->cur + 1) % s->nendpoints; /* try another member next time */
            return ha__err(err, errlen,
                           cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -CM_EUNREACHABLE,
                           "etcd://%s: %s: %s", ep, path, curl_easy_strerror(cc));
        }
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &code);
        j = s->len ? json_loadb(s->body, s->len, 0, &jerr) : NULL;
        if (!j && s->watching)
            return 0;
        if (!j)
            return ha__err(err, errlen, -CM_EPROTOCOL, "etcd://%s: %s: HTTP %ld, bad JSON", ep,
                           path, code);
        if (code != 200 || json_object_get(j, "error")) {
            const char *msg = json_string_value(json_object_get(j, "error"));
            int rc = classify_etcd_error(msg ? msg : "");
            if (rc == -CM_EAUTH && s->user[0] && !reauthed &&
                strstr(msg ? msg : "", "invalid auth token")) {
                json_decref(j);
                reauthed = true;
                rc = authenticate(s, err, errlen);
                if (rc)
                    return rc;
                continue;
            }
            ha__err(err, errlen, rc, "etcd://%s: %s: %s", ep, path, msg ? msg : "HTTP error");
            json_decref(j);
            return rc;
        }
        *out = j;
        return 0;
    }
    return ha__err(err, errlen, -CM_EUNREACHABLE, "etcd: no endpoint reachable");
}

/* post_json with a printf-built body. */
static int postf(struct ha_etcd *s, const char *path, json_t **out, char *err, size_t errlen,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int postf(struct ha_etcd *s, const char *path, json_t **out, char *err, size_t errlen,
                 const char *fmt, ...) {
    char body[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    return post_json(s, path, body, out, err, errlen);
}

static int authenticate(struct ha_etcd *s, char *err, size_t errlen) {
    json_t *req, *resp;
    const char *tok;
    char *body;
    int rc;

    s->auth_header[0] = '\0';
    req = json_pack("{s:s, s:s}", "name", s->user, "password", s->password);
    body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!body)
        return ha__err(err, errlen, -ENOMEM, "etcd: out of memory");
    rc = post_json(s, "auth/authenticate", body, &resp, err, errlen);
    memset(body, 0, strlen(body));
    free(body);
    if (rc)
        return rc == -CM_EETCD_OPERATION_ERROR ? -CM_EAUTH : rc;
    tok = json_string_value(json_object_get(resp, "token"));
    if (!tok) {
        json_decref(resp);
        return ha__err(err, errlen, -CM_EAUTH, "etcd: authenticate: no token in the answer");
    }
    snprintf(s->auth_header, sizeof(s->auth_header), "Authorization: %s", tok);
    json_decref(resp);
    return 0;
}

/* What one read of the two keys says. */
struct etcd_state {
    uint64_t epoch;    /* value of the epoch key, 0 when absent */
    int64_t epoch_mod; /* its mod_revision, 0 when absent */
    uint64_t revision; /* the store's revision at the read */
};

static json_t *range_kv(json_t *responses, size_t i) {
    json_t *rr = json_object_get(json_array_get(responses, i), "response_range");
    return json_array_get(json_object_get(rr, "kvs"), 0);
}

/*
 * Fills view and st from a txn answer whose responses are [range view key, range epoch key].
 * The holder's epoch is the epoch key (a view key written before the epoch key existed reads
 * as its create_revision). The backend's record of the highest epoch is the larger of the
 * epoch key and the store's revision (earlier epochs were revisions), so a wiped etcd shows.
 */
static void parse_state(struct ha_etcd *s, json_t *resp, struct ha_view *view,
                        struct etcd_state *st) {
    json_t *responses = json_object_get(resp, "responses");
    json_t *kv = range_kv(responses, 0), *ekv = range_kv(responses, 1);
    char num[32];

    memset(st, 0, sizeof(*st));
    st->revision = (uint64_t)json_int64(json_object_get(resp, "header"), "revision");
    if (ekv) {
        b64_decode(json_string_value(json_object_get(ekv, "value")) ?: "", num, sizeof(num));
        st->epoch = strtoull(num, NULL, 10);
        st->epoch_mod = json_int64(ekv, "mod_revision");
    }
    s->watch_rev = st->revision + 1;
    memset(view, 0, sizeof(*view));
    view->ttl_ms = -1;
    view->epoch = st->epoch;
    view->stored_known = true;
    view->stored_epoch = st->epoch > st->revision ? st->epoch : st->revision;
    if (!kv)
        return;
    b64_decode(json_string_value(json_object_get(kv, "value")) ?: "", view->holder,
               sizeof(view->holder));
    if (!ekv)
        view->epoch = (uint64_t)json_int64(kv, "create_revision");
}

/* Reads both keys in one transaction. */
static int read_state(struct ha_etcd *s, struct ha_view *view, struct etcd_state *st, char *err,
                      size_t errlen) {
    json_t *resp;
    int rc;

    rc = postf(s, "kv/txn", &resp, err, errlen,
               "{\"success\":[{\"request_range\":{\"key\":\"%s\"}},"
               "{\"request_range\":{\"key\":\"%s\"}}]}",
               s->key_b64, s->epoch_key_b64);
    if (rc)
        return rc;
    parse_state(s, resp, view, st);
    json_decref(resp);
    return 0;
}

static void revoke(struct ha_etcd *s, int64_t lease) {
    char err[256];
    json_t *resp;

    if (postf(s, "lease/revoke", &resp, err, sizeof(err), "{\"ID\":\"%lld\"}", (long long)lease) ==
        0)
        json_decref(resp);
}

/* ---- ops ------------------------------------------------------------------------------- */

static int ha_etcd_open(const struct ha_uri *uri, const char *cluster_id, const char *identity,
                        int timeout_ms, void **state, char *err, size_t errlen) {
    struct ha_etcd *s;
    char key[400];
    json_t *resp;
    int rc;

    *state = NULL;
    if (uri->nhosts < 1)
        return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: etcd:// needs host:port");
    if (uri->path[0])
        return ha__err(err, errlen, -CM_EBAD_URI, "bad URI: etcd:// takes no path ('/%s')",
                       uri->path);
    pthread_once(&ha_etcd_curl_once, curl_init_once);
    s = cm_calloc(1, sizeof(*s));
    s->nendpoints = uri->nhosts;
    for (int i = 0; i < uri->nhosts; i++)
        snprintf(s->endpoints[i], sizeof(s->endpoints[i]), "%s", uri->hosts[i]);
    snprintf(key, sizeof(key), "crescent/%s/master_view", cluster_id);
    b64_encode(key, strlen(key), s->key_b64, sizeof(s->key_b64));
    snprintf(key, sizeof(key), "crescent/%s/epoch", cluster_id);
    b64_encode(key, strlen(key), s->epoch_key_b64, sizeof(s->epoch_key_b64));
    b64_encode(identity, strlen(identity), s->value_b64, sizeof(s->value_b64));
    snprintf(s->identity, sizeof(s->identity), "%s", identity);
    snprintf(s->user, sizeof(s->user), "%s", uri->user);
    snprintf(s->password, sizeof(s->password), "%s", uri->password);
    s->timeout_ms = timeout_ms > 0 ? timeout_ms : 3000;
    s->curl = curl_easy_init();
    if (!s->curl) {
        cm_free(s);
        return ha__err(err, errlen, -ENOMEM, "etcd: curl_easy_init failed");
    }
    curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->curl, CURLOPT_TCP_NODELAY, 1L);
    rc = s->user[0] ? authenticate(s, err, errlen) : 0;
    if (rc == 0) /* reachability (and permission) check */
        rc = postf(s, "kv/range", &resp, err, errlen, "{\"key\":\"%s\"}", s->key_b64);
    if (rc) {
        curl_easy_cleanup(s->curl);
        memset(s->password, 0, sizeof(s->password));
        cm_free(s->body);
        cm_free(s);
        return rc;
    }
    json_decref(resp);
    *state = s;
    return 0;
}

static void ha_etcd_close(void *state) {
    struct ha_etcd *s = state;

    if (!s)
        return;
    curl_easy_cleanup(s->curl);
    memset(s->password, 0, sizeof(s->password));
    memset(s->auth_header, 0, sizeof(s->auth_header));
    cm_free(s->body);
    cm_free(s);
}

static int ha_etcd_try_acquire(void *state, uint64_t lease_ms, uint64_t *epoch,
                               struct ha_view *view, char *err, size_t errlen) {
    struct ha_etcd *s = state;
    long long ttl_s = (long long)((lease_ms + 999) / 1000);
    struct etcd_state st;
    char num[32], num_b64[64];
    json_t *resp;
    uint64_t next;
    int64_t lease;
    int rc;

    if (s->lease) { /* a lease of ours from an earlier term: give it up first */
        revoke(s, s->lease);
        s->lease = 0;
    }
    rc = read_state(s, view, &st, err, errlen);
    if (rc)
        return rc;
    if (view->holder[0])
        return -EBUSY;
    /* Above the epoch key, the store's revision and our floor. */
    next = st.epoch > st.revision ? st.epoch : st.revision;
    next = (next > s->floor ? next : s->floor) + 1;
    snprintf(num, sizeof(num), "%llu", (unsigned long long)next);
    b64_encode(num, strlen(num), num_b64, sizeof(num_b64));
    rc = postf(s, "lease/grant", &resp, err, errlen, "{\"TTL\":%lld}", ttl_s);
    if (rc)
        return rc;
    lease = json_int64(resp, "ID");
    json_decref(resp);
    if (!lease)
        return ha__err(err, errlen, -CM_EPROTOCOL, "etcd: lease grant: no ID in the answer");
    /* The epoch key must be as read (nobody acquired since) and the view key absent. */
    rc = postf(s, "kv/txn", &resp, err, errlen,
               "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"create_revision\":\"0\"},"
               "{\"key\":\"%s\",\"target\":\"MOD\",\"mod_revision\":\"%lld\"}],"
               "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\","
               "\"lease\":\"%lld\"}},{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}],"
               "\"failure\":[{\"request_range\":{\"key\":\"%s\"}},"
               "{\"request_range\":{\"key\":\"%s\"}}]}",
               s->key_b64, s->epoch_key_b64, (long long)st.epoch_mod, s->key_b64, s->value_b64,
               (long long)lease, s->epoch_key_b64, num_b64, s->key_b64, s->epoch_key_b64);
    if (rc) {
        revoke(s, lease); /* whether or not the put happened, the key goes with the lease */
        return rc;
    }
    if (json_is_true(json_object_get(resp, "succeeded"))) {
        uint64_t stored = view->stored_epoch;
        s->lease = lease;
        s->watch_rev = (uint64_t)json_int64(json_object_get(resp, "header"), "revision") + 1;
        *epoch = next;
        memset(view, 0, sizeof(*view));
        snprintf(view->holder, sizeof(view->holder), "%s", s->identity);
        view->epoch = next;
        view->ttl_ms = (int64_t)lease_ms;
        view->stored_known = true;
        view->stored_epoch = stored;
        json_decref(resp);
        return 0;
    }
    parse_state(s, resp, view, &st);
    json_decref(resp);
    revoke(s, lease);
    return -EBUSY;
}

static int ha_etcd_renew(void *state, uint64_t lease_ms, char *err, size_t errlen) {
    struct ha_etcd *s = state;
    json_t *resp;
    int64_t ttl;
    int rc;

    (void)lease_ms; /* the TTL was fixed at grant time */
    if (!s->lease)
        return ha__err(err, errlen, -CM_ENOT_LEADER, "etcd: renew: no lease held");
    rc = postf(s, "lease/keepalive", &resp, err, errlen, "{\"ID\":\"%lld\"}", (long long)s->lease);
    if (rc)
        return rc;
    ttl = json_int64(json_object_get(resp, "result"), "TTL");
    json_decref(resp);
    if (ttl <= 0) {
        s->lease = 0;
        return ha__err(err, errlen, -CM_ENOT_LEADER, "etcd: renew: the lease expired");
    }
    return 0;
}

static int ha_etcd_release(void *state, char *err, size_t errlen) {
    struct ha_etcd *s = state;
    json_t *resp;
    int rc;

    if (!s->lease)
        return 0;
    rc = postf(s, "lease/revoke", &resp, err, errlen, "{\"ID\":\"%lld\"}", (long long)s->lease);
    if (rc == 0)
        json_decref(resp);
    if (rc == 0 || strstr(err, "lease not found")) { /* gone already: nothing to give up */
        s->lease = 0;
        rc = 0;
    }
    return rc;
}

static int ha_etcd_get_holder(void *state, struct ha_view *view, char *err, size_t errlen) {
    struct etcd_state st;

    return read_state(state, view, &st, err, errlen);
}

/* Runs one watch of the key from start_rev (0 = from now) for up to timeout_ms. Returns 0 when
   an event arrived, 1 when etcd cancelled the watch (the revision was compacted), -ETIMEDOUT or
   a negative error. */
static int watch_once(struct ha_etcd *s, uint64_t start_rev, int timeout_ms) {
    int saved = s->timeout_ms;
    char err[256];
    json_t *resp = NULL;
    int rc;

    s->watching = true;
    s->watch_changed = false;
    s->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
    if (start_rev)
        rc = postf(s, "watch", &resp, err, sizeof(err),
                   "{\"create_request\":{\"key\":\"%s\",\"start_revision\":\"%llu\"}}", s->key_b64,
                   (unsigned long long)start_rev);
    else
        rc = postf(s, "watch", &resp, err, sizeof(err), "{\"create_request\":{\"key\":\"%s\"}}",
                   s->key_b64);
    s->timeout_ms = saved;
    s->watching = false;
    if (resp)
        json_decref(resp);
    if (s->watch_changed)
        return strstr(s->body, "\"events\"") ? 0 : 1;
    return rc == 0 || rc == -ETIMEDOUT ? -ETIMEDOUT : rc;
}

static int ha_etcd_wait_change(void *state, uint64_t epoch, int timeout_ms) {
    struct ha_etcd *s = state;
    uint64_t deadline = cm_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    uint64_t now;
    int rc;

    /* From just after the caller's read, so that a delete since then is not missed. */
    rc = watch_once(s, s->watch_rev ? s->watch_rev : epoch ? epoch + 1 : 0, timeout_ms);
    if (rc != 1)
        return rc;
    /* That history is compacted: watch from now for the rest of the time instead. */
    now = cm_mono_ms();
    if (now >= deadline)
        return -ETIMEDOUT;
    rc = watch_once(s, 0, (int)(deadline - now));
    return rc == 1 ? 0 : rc;
}

static void ha_etcd_set_timeout(void *state, int timeout_ms) {
    struct ha_etcd *s = state;

    s->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
}

static void ha_etcd_set_epoch_floor(void *state, uint64_t floor) {
    struct ha_etcd *s = state;

    s->floor = floor;
}

/* The etcd backend (scheme "etcd"); see the file comment. Immutable, shared by all threads. */
const struct ha_backend_ops ha_etcd_ops = {
    .size = sizeof(struct ha_backend_ops),
    .scheme = "etcd",
    .open = ha_etcd_open,
    .close = ha_etcd_close,
    .try_acquire = ha_etcd_try_acquire,
    .renew = ha_etcd_renew,
    .release = ha_etcd_release,
    .get_holder = ha_etcd_get_holder,
    .wait_change = ha_etcd_wait_change,
    .set_timeout = ha_etcd_set_timeout,
    .set_epoch_floor = ha_etcd_set_epoch_floor,
};
