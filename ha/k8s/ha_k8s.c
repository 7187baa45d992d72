/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes Lease election backend (ha_k8s_ops): one coordination.k8s.io/v1 Lease per HA group,
 * updated with optimistic concurrency on metadata.resourceVersion, with the semantics of
 * client-go's leader election.
 *
 * DESIGN. A Lease is free when spec.holderIdentity is empty or when it has not changed for
 * leaseDurationSeconds as measured by OUR monotonic clock since we first saw its current
 * resourceVersion (client-go's "observed time"), so clock skew between hosts does not matter;
 * renewTime is written for humans and other tools but never trusted. Acquiring writes our
 * identity, leaseTransitions + 1 and the epoch annotation crescent.io/epoch =
 * max(annotation, leaseTransitions, floor) + 1, which is the epoch (strictly increasing, also
 * when the same identity re-acquires after a release, and past a deleted Lease as long as the
 * candidate's floor remembers); a 409 Conflict means another candidate wrote
 * first: re-read and try once more, then report -EBUSY. Renew and release are PUTs against the
 * resourceVersion of our own last write, re-read once on 409 to check we still hold the lease.
 *
 * The expiry clock is tied to what we observed of the Lease (its resourceVersion and renewTime)
 * and nothing else: watch errors, reconnects and re-reads never restart it. wait_change watches
 * the Lease (fieldSelector on the name) from the last resourceVersion seen; when the API server
 * says that version left its watch window (410 Expired, as an ERROR event in a 200 answer or as
 * a plain 410), the caller re-reads at once and, while the Lease keeps that version (an idle
 * Lease: its holder is dead or nobody holds it), we poll instead of watching, so a dead holder
 * is detected one lease duration after the last change we saw, as client-go does.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cm_buf.h"
#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "ha/ha_backend.h"
#include "ha/k8s/ha_k8s.h"

#define LEASE_API     "/apis/coordination.k8s.io/v1/namespaces/"
#define DEFAULT_LEASE 15000 /* ms, when neither the record nor a caller says */

struct ha_k8s {
    struct ha_k8s_config cfg;
    struct ha_k8s_http *http;
    char ns[64];
    char name[254];
    char identity[256];
    char item_path[400]; /* .../namespaces/NS/leases/NAME */
    char coll_path[400]; /* .../namespaces/NS/leases */
    struct cm_buf resp;
    uint64_t lease_ms; /* last lease length asked for */
    int op_timeout_ms; /* budget of one operation (open's timeout, or set_timeout's) */
    /* Observation (client-go observedTime): the last resourceVersion read and when. */
    struct ha_k8s_lease last; /* the last Lease read or written (obj owned) */
    bool seen;
    uint64_t seen_mono_ms;
    char expired_rv[64];    /* a version the API server called too old to watch from */
    uint64_t write_sent_ms; /* CLOCK_MONOTONIC just before the last POST/PUT was sent */
    /* Leadership. */
    bool leading;
    uint64_t epoch;
    uint64_t floor; /* an acquire takes an epoch above this */
};

/* ---------------------------------------------------------------------------------------- */
/* Names                                                                                     */
/* ---------------------------------------------------------------------------------------- */

static bool valid_dns(const char *s, size_t max) {
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return false;
    }
    return s[0] != '-' && s[0] != '.' && s[n - 1] != '-' && s[n - 1] != '.';
}

/* "crescent-<cluster_id>" lower-cased, with characters a Lease name cannot hold as '-'. */
static void default_lease_name(const char *cluster_id, char *out, size_t outlen) {
    snprintf(out, outlen, "crescent-%s", cluster_id && cluster_id[0] ? cluster_id : "default");
    for (char *p = out; *p; p++) {
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
        else if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.'))
            *p = '-';
    }
    size_t n = strlen(out);
    while (n > 0 && (out[n - 1] == '-' || out[n - 1] == '.'))
        out[--n] = '\0';
}

/* Copies src into dst (dstlen bytes); returns false when it does not fit. */
static bool copy_fits(char *dst, size_t dstlen, const char *src) {
    size_t n = strlen(src);
    if (n >= dstlen)
        return false;
    memcpy(dst, src, n + 1);
    return true;
}

/*
 * Splits the URI into namespace and lease name. URI parsers put "k8s://ns/lease" either as
 * host "ns" + path "lease" or as path "ns/lease"; both read the same. "k8s://lease" names the
 * lease only; "k8s:///ns/" the namespace only.
 */
static int split_uri(const struct ha_uri *uri, char *ns, size_t nslen, char *name, size_t namelen,
                     char *err, size_t errlen) {
    char buf[800];
    const char *host = uri->nhosts > 0 ? uri->hosts[0] : "";
    const char *path = uri->path[0] == '/' ? uri->path + 1 : uri->path;
    bool trailing = false;
    if (host[0]) {
        trailing = path[0] == '\0' && strchr(uri->path, '/') != NULL;
        snprintf(buf, sizeof(buf), "%s%s%s", host, path[0] ? "/" : "", path);
    } else {
        snprintf(buf, sizeof(buf), "%s", path);
    }
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] == '/') {
        trailing = true;
        buf[--n] = '\0';
    }
    ns[0] = name[0] = '\0';
    char *slash = strchr(buf, '/');
    bool fits = true;
    if (slash) {
        *slash = '\0';
        fits = copy_fits(ns, nslen, buf) && copy_fits(name, namelen, slash + 1);
    } else if (trailing) {
        fits = copy_fits(ns, nslen, buf);
    } else {
        fits = copy_fits(name, namelen, buf);
    }
    if (!fits || (ns[0] && !valid_dns(ns, 63)) || (name[0] && !valid_dns(name, 253)) ||
        strchr(name, '/')) {
        snprintf(err, errlen,
                 "k8s URI: expected k8s://[namespace/]lease-name with lower-case DNS names, "
                 "got namespace \"%s\" lease \"%s\"",
                 ns, name);
        return -CM_EBAD_URI;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Reads and writes                                                                          */
/* ---------------------------------------------------------------------------------------- */

static void now_micro(char *buf, size_t len) {
    ha_k8s__format_micro_time(cm_wall_us(), buf, len);
}

static int64_t duration_s_of(uint64_t lease_ms) {
    int64_t s = (int64_t)((lease_ms + 999) / 1000);
    return s < 1 ? 1 : s;
}

/* Records l as the latest version seen; only a new resourceVersion or renewTime restarts the
   expiry clock. */
static void observe(struct ha_k8s *st, struct ha_k8s_lease *l) {
    if (!st->seen || strcmp(st->last.resource_version, l->resource_version) != 0 ||
        strcmp(st->last.renew_time, l->renew_time) != 0) {
        st->seen = true;
        st->seen_mono_ms = cm_mono_ms();
    }
    ha_k8s__lease_fini(&st->last);
    st->last = *l; /* takes l's object reference */
    memset(l, 0, sizeof(*l));
}

/* Reason of a Status body, for messages. */
static void status_text(const struct cm_buf *b, char *msg, size_t len) {
    msg[0] = '\0';
    if (b->len)
        ha_k8s__status_decode(b->data, b->len, NULL, 0, msg, len);
}

/* GETs the Lease into st->last. 0, -ENOENT (404), or a negative error with err filled. */
static int read_lease(struct ha_k8s *st, char *err, size_t errlen) {
    long status = 0;
    int rc =
        ha_k8s__http_request(st->http, "GET", st->item_path, NULL, &status, &st->resp, err, errlen);
    if (rc < 0)
        return rc;
    if (status == 404)
        return -ENOENT;
    if (status != 200) {
        char msg[200];
        status_text(&st->resp, msg, sizeof(msg));
        snprintf(err, errlen, "kubernetes API: GET lease %s/%s: %ld %s", st->ns, st->name, status,
                 msg);
        return -CM_EK8S_LEASE_OPERATION_ERROR;
    }
    struct ha_k8s_lease l = {0};
    rc = ha_k8s__lease_decode(st->resp.data, st->resp.len, &l, err, errlen);
    if (rc < 0)
        return rc;
    observe(st, &l);
    return 0;
}

/*
 * POSTs (create) or PUTs (update) l. On success the answer becomes st->last (our own write
 * counts as an observation). Returns 0, -EAGAIN on 409 (conflict or already exists), -ENOENT on
 * 404, or a negative error.
 */
static int write_lease(struct ha_k8s *st, bool create, const struct ha_k8s_lease *l, char *err,
                       size_t errlen) {
    char *body = ha_k8s__lease_encode(l);
    if (!body) {
        snprintf(err, errlen, "cannot encode the Lease");
        return -ENOMEM;
    }
    long status = 0;
    st->write_sent_ms = cm_mono_ms();
    int rc = ha_k8s__http_request(st->http, create ? "POST" : "PUT",
                                  create ? st->coll_path : st->item_path, body, &status, &st->resp,
                                  err, errlen);
    free(body);
    if (rc < 0)
        return rc;
    if (status == 409)
        return -EAGAIN;
    if (status == 404)
        return -ENOENT;
    if (status != 200 && status != 201) {
        char msg[200];
        status_text(&st->resp, msg, sizeof(msg));
        snprintf(err, errlen, "kubernetes API: %s lease %s/%s: %ld %s", create ? "POST" : "PUT",
                 st->ns, st->name, status, msg);
        return -CM_EK8S_LEASE_OPERATION_ERROR;
    }
    struct ha_k8s_lease out = {0};
    rc = ha_k8s__lease_decode(st->resp.data, st->resp.len, &out, err, errlen);
    if (rc < 0)
        return rc;
    observe(st, &out);
    return 0;
}

/* The epoch of l's current (or last) holder: the annotation, or leaseTransitions when that is
   higher (a Lease written by a tool that does not know the annotation). */
static uint64_t epoch_of(const struct ha_k8s_lease *l) {
    int64_t e = l->epoch_note > l->transitions ? l->epoch_note : l->transitions;
    return e > 0 ? (uint64_t)e : 0;
}

/* The epoch a new acquisition of l (NULL: a new Lease) takes. */
static uint64_t next_epoch(const struct ha_k8s *st, const struct ha_k8s_lease *l) {
    uint64_t e = l ? epoch_of(l) : 0;
    return (e > st->floor ? e : st->floor) + 1;
}

static void set_stored(struct ha_view *view, uint64_t stored) {
    if (view) {
        view->stored_known = true;
        view->stored_epoch = stored;
    }
}

/* The lease length others must wait for: the record's, else ours. */
static uint64_t record_ms(const struct ha_k8s *st) {
    if (st->last.duration_s > 0)
        return (uint64_t)st->last.duration_s * 1000;
    return st->lease_ms ? st->lease_ms : DEFAULT_LEASE;
}

/* Milliseconds left before st->last expires by our observation; 0 when expired or free. */
static int64_t remaining_ms(const struct ha_k8s *st) {
    if (!st->last.holder[0])
        return 0;
    uint64_t age = cm_mono_ms() - st->seen_mono_ms;
    uint64_t dur = record_ms(st);
    return age >= dur ? 0 : (int64_t)(dur - age);
}

static void fill_view(const struct ha_k8s *st, struct ha_view *view) {
    if (!view)
        return;
    int64_t left = remaining_ms(st);
    snprintf(view->holder, sizeof(view->holder), "%s", left > 0 ? st->last.holder : "");
    view->epoch = epoch_of(&st->last);
    view->ttl_ms = left > 0 ? left : -1;
    set_stored(view, epoch_of(&st->last));
}

/* Starts an operation: all its requests together get op_timeout_ms. */
static void begin_op(struct ha_k8s *st) {
    ha_k8s__http_set_deadline(st->http, cm_mono_ms() + (uint64_t)st->op_timeout_ms);
}

/* ---------------------------------------------------------------------------------------- */
/* Operations                                                                                */
/* ---------------------------------------------------------------------------------------- */

static int k8s_open(const struct ha_uri *uri, const char *cluster_id, const char *identity,
                    int timeout_ms, void **state, char *err, size_t errlen) {
    char ns[64], name[254];
    int rc = split_uri(uri, ns, sizeof(ns), name, sizeof(name), err, errlen);
    if (rc < 0)
        return rc;
    if (!identity || !identity[0] || strlen(identity) >= sizeof(((struct ha_k8s *)0)->identity)) {
        snprintf(err, errlen, "k8s backend: identity must be 1..255 bytes");
        return -CM_EINVALID_PARAMS;
    }
    struct ha_k8s *st = cm_calloc(1, sizeof(*st));
    cm_buf_init(&st->resp);
    rc = ha_k8s__config_load(&st->cfg, err, errlen);
    if (rc < 0) {
        cm_free(st);
        return rc;
    }
    snprintf(st->ns, sizeof(st->ns), "%s",
             ns[0] ? ns : (st->cfg.namespace_ ? st->cfg.namespace_ : "default"));
    if (name[0])
        snprintf(st->name, sizeof(st->name), "%s", name);
    else
        default_lease_name(cluster_id, st->name, sizeof(st->name));
    snprintf(st->identity, sizeof(st->identity), "%s", identity);
    snprintf(st->coll_path, sizeof(st->coll_path), LEASE_API "%s/leases", st->ns);
    snprintf(st->item_path, sizeof(st->item_path), LEASE_API "%s/leases/%s", st->ns, st->name);
    st->op_timeout_ms = timeout_ms > 0 ? timeout_ms : 3000;
    rc = ha_k8s__http_create(&st->cfg, st->op_timeout_ms, &st->http, err, errlen);
    if (rc == 0) {
        /* Check reachability and credentials now: a wrong token is one clear error at
           start-up. A missing Lease is fine (the first candidate creates it). */
        begin_op(st);
        rc = read_lease(st, err, errlen);
        if (rc == -ENOENT)
            rc = 0;
    }
    if (rc < 0) {
        ha_k8s__http_destroy(st->http);
        ha_k8s__config_fini(&st->cfg);
        cm_buf_fini(&st->resp);
        ha_k8s__lease_fini(&st->last);
        cm_free(st);
        return rc;
    }
    cm_log(CM_LOG_VERBOSE, "ha-k8s", "lease %s/%s via %s (%s)", st->ns, st->name, st->cfg.server,
           st->cfg.source);
    *state = st;
    return 0;
}

static void k8s_close(void *state) {
    struct ha_k8s *st = state;
    if (!st)
        return;
    ha_k8s__http_destroy(st->http);
    ha_k8s__config_fini(&st->cfg);
    ha_k8s__lease_fini(&st->last);
    cm_buf_fini(&st->resp);
    cm_free(st);
}

/* Fills l with a fresh Lease held by us (for POST). */
static void new_lease(const struct ha_k8s *st, uint64_t lease_ms, struct ha_k8s_lease *l) {
    memset(l, 0, sizeof(*l));
    snprintf(l->name, sizeof(l->name), "%s", st->name);
    snprintf(l->namespace_, sizeof(l->namespace_), "%s", st->ns);
    snprintf(l->holder, sizeof(l->holder), "%s", st->identity);
    l->duration_s = duration_s_of(lease_ms);
    l->transitions = 1;
    l->epoch_note = (int64_t)next_epoch(st, NULL);
    now_micro(l->acquire_time, sizeof(l->acquire_time));
    snprintf(l->renew_time, sizeof(l->renew_time), "%s", l->acquire_time);
}

static int acquired(struct ha_k8s *st, uint64_t *epoch, struct ha_view *view) {
    st->leading = true;
    st->epoch = epoch_of(&st->last);
    if (epoch)
        *epoch = st->epoch;
    if (view) /* observers start their clocks after this write: the lease counts from it */
        view->sent_ms = st->write_sent_ms;
    cm_log(CM_LOG_VERBOSE, "ha-k8s", "acquired %s/%s epoch %llu rv %s", st->ns, st->name,
           (unsigned long long)st->epoch, st->last.resource_version);
    return 0;
}

static int k8s_try_acquire(void *state, uint64_t lease_ms, uint64_t *epoch, struct ha_view *view,
                           char *err, size_t errlen) {
    struct ha_k8s *st = state;
    st->lease_ms = lease_ms;
    st->leading = false;
    begin_op(st);
    int rc = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = read_lease(st, err, errlen);
        struct ha_k8s_lease l;
        if (rc == -ENOENT) {
            set_stored(view, 0); /* no Lease: no record of any epoch */
            new_lease(st, lease_ms, &l);
            rc = write_lease(st, true, &l, err, errlen);
            if (rc == 0)
                return acquired(st, epoch, view);
            if (rc == -EAGAIN || rc == -ENOENT)
                continue; /* created by someone else meanwhile */
            return rc;
        }
        if (rc < 0)
            return rc;
        if (remaining_ms(st) > 0) {
            fill_view(st, view);
            return -EBUSY;
        }
        set_stored(view, epoch_of(&st->last));
        l = st->last; /* shallow: obj stays owned by st->last */
        snprintf(l.holder, sizeof(l.holder), "%s", st->identity);
        l.duration_s = duration_s_of(lease_ms);
        l.transitions = st->last.transitions + 1;
        l.epoch_note = (int64_t)next_epoch(st, &st->last);
        now_micro(l.acquire_time, sizeof(l.acquire_time));
        snprintf(l.renew_time, sizeof(l.renew_time), "%s", l.acquire_time);
        rc = write_lease(st, false, &l, err, errlen);
        if (rc == 0)
            return acquired(st, epoch, view);
        if (rc != -EAGAIN && rc != -ENOENT)
            return rc;
    }
    /* Lost two races in a row: somebody else is writing the Lease. */
    if (read_lease(st, err, errlen) == 0 && remaining_ms(st) > 0) {
        fill_view(st, view);
        return -EBUSY;
    }
    if (view) {
        view->holder[0] = '\0';
        view->epoch = epoch_of(&st->last);
        view->ttl_ms = -1;
    }
    return -EBUSY;
}

/* True when st->last still names us at our epoch. */
static bool still_ours(const struct ha_k8s *st) {
    return strcmp(st->last.holder, st->identity) == 0 && epoch_of(&st->last) == st->epoch;
}

/*
 * PUTs st->last modified by `release` (clear the holder) or renewal, re-reading once on a 409.
 * Returns 0, -CM_ENOT_LEADER when the Lease is no longer ours, or an error.
 */
static int update_own(struct ha_k8s *st, bool release, char *err, size_t errlen) {
    for (int attempt = 0; attempt < 2; attempt++) {
        struct ha_k8s_lease l = st->last; /* shallow: obj stays owned by st->last */
        if (release) {
            l.holder[0] = '\0';
            l.duration_s = 1;
        } else {
            l.duration_s = duration_s_of(st->lease_ms);
        }
        now_micro(l.renew_time, sizeof(l.renew_time));
        int rc = write_lease(st, false, &l, err, errlen);
        if (rc == 0)
            return 0;
        if (rc != -EAGAIN && rc != -ENOENT)
            return rc;
        rc = read_lease(st, err, errlen);
        if (rc == -ENOENT || (rc == 0 && !still_ours(st))) {
            snprintf(err, errlen, "kubernetes lease %s/%s now held by \"%s\" (epoch %llu)", st->ns,
                     st->name, rc == 0 ? st->last.holder : "",
                     rc == 0 ? (unsigned long long)epoch_of(&st->last) : 0ULL);
            return -CM_ENOT_LEADER;
        }
        if (rc < 0)
            return rc;
    }
    snprintf(err, errlen, "kubernetes lease %s/%s: repeated update conflicts", st->ns, st->name);
    return -CM_EK8S_LEASE_OPERATION_ERROR;
}

static int k8s_renew(void *state, uint64_t lease_ms, char *err, size_t errlen) {
    struct ha_k8s *st = state;
    if (!st->leading) {
        snprintf(err, errlen, "kubernetes lease %s/%s: not the holder", st->ns, st->name);
        return -CM_ENOT_LEADER;
    }
    st->lease_ms = lease_ms;
    begin_op(st);
    int rc = update_own(st, false, err, errlen);
    if (rc == -CM_ENOT_LEADER)
        st->leading = false;
    return rc;
}

static int k8s_release(void *state, char *err, size_t errlen) {
    struct ha_k8s *st = state;
    if (!st->leading)
        return 0;
    begin_op(st);
    int rc = update_own(st, true, err, errlen);
    st->leading = false;
    return rc == -CM_ENOT_LEADER ? 0 : rc;
}

static int k8s_get_holder(void *state, struct ha_view *view, char *err, size_t errlen) {
    struct ha_k8s *st = state;
    begin_op(st);
    int rc = read_lease(st, err, errlen);
    if (rc == -ENOENT) {
        memset(view, 0, sizeof(*view));
        view->ttl_ms = -1;
        set_stored(view, 0);
        return 0;
    }
    if (rc < 0)
        return rc;
    fill_view(st, view);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Watch                                                                                     */
/* ---------------------------------------------------------------------------------------- */

struct watch_ctx {
    bool expired_rv; /* 410 Expired: our resourceVersion left the watch window */
    bool error;      /* another ERROR event */
};

static bool watch_line(void *arg, const char *line, size_t len) {
    struct watch_ctx *w = arg;
    json_t *ev = json_loadb(line, len, 0, NULL);
    if (!ev)
        return true; /* garbage: let the caller re-read */
    const char *type = json_string_value(json_object_get(ev, "type"));
    bool stop = !type || strcmp(type, "BOOKMARK") != 0;
    if (type && strcmp(type, "ERROR") == 0) {
        json_t *code = json_object_get(json_object_get(ev, "object"), "code");
        w->expired_rv = json_integer_value(code) == 410;
        w->error = !w->expired_rv;
    }
    json_decref(ev);
    return stop;
}

static int k8s_wait_change(void *state, uint64_t epoch, int timeout_ms) {
    struct ha_k8s *st = state;
    (void)epoch; /* we watch from the last version read, which is what the caller saw */
    char err[256];
    uint64_t deadline = cm_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    /* That version is too old to watch from and nothing newer was read: poll (the caller
       sleeps until its deadline, and re-reads then). */
    if (st->seen && st->expired_rv[0] && strcmp(st->expired_rv, st->last.resource_version) == 0)
        return -EAGAIN;
    for (;;) {
        uint64_t now = cm_mono_ms();
        if (now >= deadline)
            return -ETIMEDOUT;
        int left = (int)(deadline - now);
        char path[700];
        int n = snprintf(path, sizeof(path),
                         "%s?watch=true&fieldSelector=metadata.name%%3D%s&timeoutSeconds=%d",
                         st->coll_path, st->name, left / 1000 + 1);
        if (st->seen && st->last.resource_version[0])
            snprintf(path + n, sizeof(path) - (size_t)n, "&resourceVersion=%s",
                     st->last.resource_version);
        struct watch_ctx w = {0};
        int rc = ha_k8s__http_stream(st->http, path, left, watch_line, &w, err, sizeof(err));
        if ((rc == 1 && w.expired_rv) || rc == -ESTALE) {
            /* Re-read now (the caller's next operation) and poll while the version stays. */
            cm_log(CM_LOG_VERBOSE, "ha-k8s", "watch from %s: version too old, polling",
                   st->last.resource_version);
            snprintf(st->expired_rv, sizeof(st->expired_rv), "%s", st->last.resource_version);
            return 0;
        }
        if (rc == 1 && !w.error)
            return 0;
        if (rc == -ETIMEDOUT)
            return -ETIMEDOUT;
        if (rc < 0 || w.error) {
            /* API trouble: behave like a poll so the caller does not spin. */
            cm_log(CM_LOG_VERBOSE, "ha-k8s", "watch failed: %s", w.error ? "ERROR event" : err);
            return -EAGAIN;
        }
        cm_sleep_ms(20); /* the server closed the stream early: reconnect */
    }
}

static void k8s_set_timeout(void *state, int timeout_ms) {
    struct ha_k8s *st = state;
    st->op_timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
}

static void k8s_set_epoch_floor(void *state, uint64_t floor) {
    struct ha_k8s *st = state;
    st->floor = floor;
}

/* The Kubernetes Lease backend (scheme "k8s"); see the DESIGN note at the top of this file. */
const struct ha_backend_ops ha_k8s_ops = {
    .size = sizeof(struct ha_backend_ops),
    .scheme = "k8s",
    .open = k8s_open,
    .close = k8s_close,
    .try_acquire = k8s_try_acquire,
    .renew = k8s_renew,
    .release = k8s_release,
    .get_holder = k8s_get_holder,
    .wait_change = k8s_wait_change,
    .set_timeout = k8s_set_timeout,
    .set_epoch_floor = k8s_set_epoch_floor,
};
