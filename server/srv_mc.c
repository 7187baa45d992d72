/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The master's pool instance (server/pool/) behind one mutex, its housekeeping thread, and the
 * argument parsers and reply writers shared by the MC.* command handlers (srv_cmd_mc*.c).
 */
#include "common/fmacros.h"

#include "server/srv_mc.h"
#include "server/srv_pubsub.h"

#include "server/srv_client.h"
#include "server/srv_oplog.h"
#include "server/srv_pool_kv.h"
#include "server/srv_pool_seg.h"
#include "server/srv_server.h"

#include "common/cm_atomic.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "redis-compat/resp_write.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SRV_MC_TICK_MS 100 /* housekeeping period */
/* A loop without its cron for longer than this (and than 3 cron periods) counts as stalled. */
#define SRV_MC_STALL_MS 1000

struct pool *srv_mc_pool;

/* Adaptive: spins briefly before sleeping, as pool calls are short (about a microsecond). */
static pthread_mutex_t srv_mc_mu = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t srv_mc_stop_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t srv_mc_stop_cv;
static int srv_mc_stopping;
static int srv_mc_thread_on;
static pthread_t srv_mc_thread;
static _Atomic uint64_t srv_mc_nobjects; /* published by srv_mc_unlock */

/* KV events the pool reported under srv_mc_mu, published after it is released: records of
 * (struct srv_mc_event, key bytes, NUL-terminated segment names). */
struct srv_mc_event {
    int kind; /* enum srv_kv_event */
    unsigned nsegs;
    size_t klen;
    uint64_t size;
};
static struct cm_buf srv_mc_events; /* srv_mc_mu */

static void srv_mc_on_event(void *arg, const struct pool_event *ev) {
    (void)arg;
    if (cm_atomic_load_relaxed(&srv_pubsub_nsubs) == 0)
        return; /* nobody listens */
    static const int kinds[] = {SRV_KV_STORED, SRV_KV_REMOVED, SRV_KV_EVICTED, SRV_KV_OFFLOADED};
    struct srv_mc_event e = {kinds[ev->kind], ev->nsegs, ev->klen, ev->size};
    cm_buf_append(&srv_mc_events, &e, sizeof(e));
    cm_buf_append(&srv_mc_events, ev->key, ev->klen);
    for (uint32_t i = 0; i < ev->nsegs; i++)
        cm_buf_append(&srv_mc_events, ev->segs[i], strlen(ev->segs[i]) + 1);
}

/* Publishes the events of buffer b (taken from srv_mc_events) and frees it. */
static void srv_mc_publish(struct cm_buf *b) {
    size_t off = 0;
    while (off < b->len) {
        struct srv_mc_event e;
        memcpy(&e, b->data + off, sizeof(e));
        off += sizeof(e);
        const char *key = b->data + off;
        off += e.klen;
        const char *segs[256];
        for (unsigned i = 0; i < e.nsegs && i < 256; i++) {
            segs[i] = b->data + off;
            off += strlen(segs[i]) + 1;
        }
        srv_kv_event((enum srv_kv_event)e.kind, key, e.klen, e.size, segs, e.nsegs);
    }
    cm_buf_fini(b);
}

void srv_mc_lock(void) {
    pthread_mutex_lock(&srv_mc_mu);
}

void srv_mc_unlock(void) {
    cm_atomic_store_release(&srv_mc_nobjects, srv_mc_pool ? pool_object_count(srv_mc_pool) : 0);
    srv_oplog_note_state(); /* replies wait for every entry behind what they saw */
    if (srv_mc_events.len == 0) {
        pthread_mutex_unlock(&srv_mc_mu);
        return;
    }
    struct cm_buf b = srv_mc_events;
    cm_buf_init(&srv_mc_events);
    pthread_mutex_unlock(&srv_mc_mu);
    srv_mc_publish(&b);
}

uint64_t srv_mc_object_hint(void) {
    return cm_atomic_load_acquire(&srv_mc_nobjects);
}

int64_t srv_mc_now(void) {
    return (int64_t)cm_mono_ms();
}

/* Fills cfg from srv_cfg. */
static void srv_mc_config(struct pool_config *cfg) {
    pool_config_default(cfg);
    cfg->client_live_ttl_ms = srv_cfg.client_live_ttl_sec * 1000;
    cfg->kv_lease_ttl_ms = srv_cfg.default_kv_lease_ttl;
    cfg->kv_soft_pin_ttl_ms = srv_cfg.default_kv_soft_pin_ttl;
    cfg->max_kv_soft_pin_ttl_ms = srv_cfg.max_kv_soft_pin_ttl;
    cfg->allow_evict_soft_pinned = srv_cfg.allow_evict_soft_pinned_objects;
    cfg->eviction_ratio = srv_cfg.eviction_ratio;
    cfg->eviction_high_watermark_ratio = srv_cfg.eviction_high_watermark_ratio;
    cfg->put_start_discard_timeout_ms = srv_cfg.put_start_discard_timeout_sec * 1000;
    cfg->put_start_release_timeout_ms = srv_cfg.put_start_release_timeout_sec * 1000;
    cfg->strategy = (enum pool_strategy)srv_cfg.allocation_strategy;
    cfg->view_version = (int64_t)srv_start_wall_ms;
    cfg->on_event = srv_mc_on_event;
    cfg->enable_offload = srv_cfg.enable_offload;
    cfg->offload_on_evict = srv_cfg.offload_on_evict;
    cfg->offload_force_evict = srv_cfg.offload_force_evict;
    cfg->offloading_queue_limit = (uint32_t)srv_cfg.offloading_queue_limit;
    cfg->offload_cap_ratio = srv_cfg.offload_cap_ratio;
    cfg->promotion_on_hit = srv_cfg.promotion_on_hit;
    cfg->promotion_admission_threshold = (uint32_t)srv_cfg.promotion_admission_threshold;
    if (srv_oplog_enabled()) { /* evictions and segment drops go to the op-log */
        cfg->on_evict = srv_oplog_on_evict;
        cfg->on_seg_drop = srv_oplog_on_seg_drop;
    }
}

static const char srv_mc_bad_cfg[] =
    "pool settings refused: max_kv_soft_pin_ttl must be >= default_kv_soft_pin_ttl and "
    "put_start_release_timeout_sec >= put_start_discard_timeout_sec";

/*
 * A client's ping can only be counted when an event loop reads it. While a loop is stalled (a
 * long command, an HA op-log store that does not answer, so replies wait in before-sleep) the
 * pings queue in the sockets, and expiring their senders would drop every segment and the
 * objects on them for a stall of the master's own. So while the slowest loop has gone more than
 * SRV_MC_STALL_MS without its cron, every client is marked alive: liveness restarts, with a
 * full client_live_ttl, when the loops run again (as it does for a new HA leader). Pool mutex
 * held.
 */
static void srv_mc_pause_liveness_if_stalled(void) {
    static int stalled; /* housekeeping thread only */
    uint64_t lag = srv_net_loop_lag_ms(cm_mono_ms());
    uint64_t limit = 3000 / (uint64_t)(srv_cfg.hz > 0 ? srv_cfg.hz : 10);
    if (lag <= (limit > SRV_MC_STALL_MS ? limit : SRV_MC_STALL_MS)) {
        if (stalled)
            cm_log(CM_LOG_NOTICE, "pool", "event loops running again: client liveness resumes");
        stalled = 0;
        return;
    }
    if (!stalled)
        cm_log(CM_LOG_WARNING, "pool",
               "an event loop has been stalled for %" PRIu64
               " ms: client liveness paused (no client expires until pings can be read)",
               lag);
    stalled = 1;
    pool_clients_touch(srv_mc_pool, srv_mc_now());
}

/* Housekeeping: pool_tick every SRV_MC_TICK_MS until srv_mc_stop(). */
static void *srv_mc_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&srv_mc_stop_mu);
    while (!srv_mc_stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += SRV_MC_TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&srv_mc_stop_cv, &srv_mc_stop_mu, &ts);
        if (srv_mc_stopping)
            break;
        pthread_mutex_unlock(&srv_mc_stop_mu);
        struct pool_tick_report r;
        srv_mc_lock();
        srv_mc_pause_liveness_if_stalled();
        srv_pkv_tick(srv_mc_now());
        srv_pseg_tick(srv_mc_now());
        pool_tick(srv_mc_pool, srv_mc_now(), &r);
        srv_mc_unlock();
        if (r.clients_expired || r.segments_unmounted || r.zombies_released || r.objects_evicted)
            cm_log(CM_LOG_VERBOSE, "pool",
                   "tick: %u clients expired, %u segments unmounted, %u zombie writes released, "
                   "%llu objects evicted",
                   r.clients_expired, r.segments_unmounted, r.zombies_released,
                   (unsigned long long)r.objects_evicted);
        pthread_mutex_lock(&srv_mc_stop_mu);
    }
    pthread_mutex_unlock(&srv_mc_stop_mu);
    return NULL;
}

int srv_mc_new_pool(struct pool **out) {
    struct pool_config cfg;
    srv_mc_config(&cfg);
    if (pool_create(&cfg, out) != POOL_OK) {
        cm_log(CM_LOG_WARNING, "pool", "%s", srv_mc_bad_cfg);
        return -1;
    }
    return 0;
}

void srv_mc_swap_pool(struct pool *np) {
    srv_mc_lock();
    struct pool *old = srv_mc_pool;
    srv_mc_pool = np;
    srv_mc_unlock();
    pool_destroy(old);
}

int srv_mc_start(void) {
    if (srv_mc_new_pool(&srv_mc_pool) != 0)
        return -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv_mc_stop_cv, &ca);
    pthread_condattr_destroy(&ca);
    srv_mc_stopping = 0;
    int rc = pthread_create(&srv_mc_thread, NULL, srv_mc_main, NULL);
    if (rc != 0) {
        cm_log(CM_LOG_WARNING, "pool", "cannot start the housekeeping thread: %s", strerror(rc));
        pool_destroy(srv_mc_pool);
        srv_mc_pool = NULL;
        return -1;
    }
    srv_mc_thread_on = 1;
    return 0;
}

void srv_mc_stop(void) {
    if (srv_mc_thread_on) {
        pthread_mutex_lock(&srv_mc_stop_mu);
        srv_mc_stopping = 1;
        pthread_cond_signal(&srv_mc_stop_cv);
        pthread_mutex_unlock(&srv_mc_stop_mu);
        pthread_join(srv_mc_thread, NULL);
        pthread_cond_destroy(&srv_mc_stop_cv);
        srv_mc_thread_on = 0;
    }
    srv_mc_lock();
    pool_destroy(srv_mc_pool);
    srv_mc_pool = NULL;
    srv_mc_unlock();
}

int srv_mc_restore(const void *buf, size_t len, struct pool_snap_meta *meta, char *err,
                   size_t errlen) {
    struct pool *fresh;
    if (srv_mc_new_pool(&fresh) != 0) {
        snprintf(err, errlen, "%s", srv_mc_bad_cfg);
        return -EINVAL;
    }
    int rc = pool_snapshot_load(fresh, buf, len, srv_mc_now(), meta, err, errlen);
    if (rc != 0) {
        pool_destroy(fresh);
        return rc;
    }
    srv_mc_swap_pool(fresh);
    return 0;
}

int srv_mc_reconfigure(char *err, size_t errlen) {
    struct pool_config cfg;
    srv_mc_config(&cfg);
    int rc = POOL_OK;
    srv_mc_lock();
    if (srv_mc_pool)
        rc = pool_reconfigure(srv_mc_pool, &cfg);
    srv_mc_unlock();
    if (rc != POOL_OK) {
        snprintf(err, errlen, "%s", srv_mc_bad_cfg);
        return -1;
    }
    return 0;
}

/* ---- argument parsing -------------------------------------------------------------------- */

static int srv_mc_hexval(char ch) {
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Parses 32 hex digits, with dashes allowed only at the canonical UUID positions. */
static int srv_mc_parse_uuid(const char *p, size_t len, struct pool_uuid *out) {
    int dashed = len == 36;
    if (len != 32 && !dashed)
        return -1;
    size_t nib = 0;
    for (size_t i = 0; i < len; i++) {
        if (dashed && (i == 8 || i == 13 || i == 18 || i == 23)) {
            if (p[i] != '-')
                return -1;
            continue;
        }
        int v = srv_mc_hexval(p[i]);
        if (v < 0)
            return -1;
        if (nib % 2 == 0)
            out->b[nib / 2] = (uint8_t)(v << 4);
        else
            out->b[nib / 2] |= (uint8_t)v;
        nib++;
    }
    return nib == 32 ? 0 : -1;
}

int srv_mc_arg_client(struct srv_client *c, int i, struct pool_uuid *out) {
    if (srv_mc_parse_uuid(c->argv[i].p, c->argv[i].len, out) != 0) {
        srv_reply_error(c, "INVALID_PARAMS invalid client id (32 hex digits or a UUID)");
        return -1;
    }
    return 0;
}

void srv_mc_uuid_str(const struct pool_uuid *id, char buf[33]) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        buf[2 * i] = hex[id->b[i] >> 4];
        buf[2 * i + 1] = hex[id->b[i] & 15];
    }
    buf[32] = '\0';
}

/* Parses digits of base 10 or 16 without overflow. Returns 0 or -1. */
static int srv_mc_parse_u64(const char *p, size_t len, int hex, uint64_t *out) {
    unsigned base = 10;
    if (hex && len > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
        len -= 2;
    }
    if (len == 0 || len > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        int d = base == 16 ? srv_mc_hexval(p[i]) : (p[i] >= '0' && p[i] <= '9' ? p[i] - '0' : -1);
        if (d < 0 || v > (UINT64_MAX - (uint64_t)d) / base)
            return -1;
        v = v * base + (uint64_t)d;
    }
    *out = v;
    return 0;
}

int srv_mc_arg_u64(struct srv_client *c, int i, const char *what, int hex, uint64_t lo, uint64_t hi,
                   uint64_t *out) {
    uint64_t v;
    if (srv_mc_parse_u64(c->argv[i].p, c->argv[i].len, hex, &v) != 0 || v < lo || v > hi) {
        srv_reply_errorf(c, "INVALID_PARAMS invalid %s", what);
        return -1;
    }
    *out = v;
    return 0;
}

int srv_mc_arg_str(struct srv_client *c, int i, const char *what, char *buf, size_t cap) {
    const struct srv_arg *a = &c->argv[i];
    if (a->len >= cap) {
        srv_reply_errorf(c, "INVALID_PARAMS %s too long", what);
        return -1;
    }
    if (memchr(a->p, '\0', a->len)) {
        srv_reply_errorf(c, "INVALID_PARAMS %s contains a NUL byte", what);
        return -1;
    }
    memcpy(buf, a->p, a->len);
    buf[a->len] = '\0';
    return 0;
}

static int srv_mc_word(const struct srv_client *c, int i, const char *w) {
    size_t n = strlen(w);
    return c->argv[i].len == n && strncasecmp(c->argv[i].p, w, n) == 0;
}

int srv_mc_parse_put_options(struct srv_client *c, int from, struct pool_put_config *cfg) {
    pool_put_config_default(cfg);
    for (int i = from; i < c->argc; i++) {
        int more = c->argc - i - 1;
        uint64_t v;
        if (srv_mc_word(c, i, "replicas") && more >= 1) {
            if (srv_mc_arg_u64(c, ++i, "replica count", 0, 1, POOL_MAX_REPLICAS, &v) < 0)
                goto fail;
            cfg->replica_num = (uint32_t)v;
        } else if (srv_mc_word(c, i, "softpin")) {
            cfg->with_soft_pin = 1;
        } else if (srv_mc_word(c, i, "softpin_ttl") && more >= 1) {
            if (srv_mc_arg_u64(c, ++i, "soft-pin TTL", 0, 1, INT64_MAX, &v) < 0)
                goto fail;
            cfg->with_soft_pin = 1;
            cfg->soft_pin_ttl_ms = (int64_t)v;
        } else if (srv_mc_word(c, i, "hardpin")) {
            cfg->with_hard_pin = 1;
        } else if (srv_mc_word(c, i, "prefer_same_node")) {
            cfg->prefer_same_node = 1;
        } else if (srv_mc_word(c, i, "segments") && more >= 1) {
            if (srv_mc_arg_u64(c, ++i, "segment count", 0, 1, 1024, &v) < 0)
                goto fail;
            if ((uint64_t)(c->argc - i - 1) < v || cfg->npreferred) {
                srv_reply_syntax_error(c);
                goto fail;
            }
            char **names = cm_malloc((size_t)v * sizeof(char *));
            cfg->preferred_segments = (const char *const *)names;
            for (uint64_t k = 0; k < v; k++) {
                const struct srv_arg *a = &c->argv[++i];
                names[k] = cm_malloc(a->len + 1);
                memcpy(names[k], a->p, a->len);
                names[k][a->len] = '\0';
                cfg->npreferred = (size_t)k + 1;
            }
        } else {
            srv_reply_syntax_error(c);
            goto fail;
        }
    }
    return 0;
fail:
    srv_mc_put_config_free(cfg);
    return -1;
}

void srv_mc_put_config_free(struct pool_put_config *cfg) {
    for (size_t k = 0; k < cfg->npreferred; k++)
        cm_free((void *)cfg->preferred_segments[k]);
    cm_free((void *)cfg->preferred_segments);
    cfg->preferred_segments = NULL;
    cfg->npreferred = 0;
}

/* ---- replies ----------------------------------------------------------------------------- */

void srv_mc_reply_err(struct srv_client *c, int err) {
    srv_reply_errorf(c, "%s %s", pool_err_name(err), pool_strerror(err));
}

void srv_mc_add_err(struct srv_client *c, int err) {
    resp_add_errorf(&c->out, "%s %s", pool_err_name(err), pool_strerror(err));
}

/* The status reply of a one-result MC command; see srv_mc.h. */
void srv_mc_reply_status(struct srv_client *c, int rc) {
    if (rc < 0)
        srv_mc_reply_err(c, rc);
    else
        srv_reply_ok(c);
}

/* One status element of a batch reply; see srv_mc.h. */
void srv_mc_add_status(struct srv_client *c, int rc) {
    if (rc < 0)
        srv_mc_add_err(c, rc);
    else
        srv_reply_ok(c);
}

void srv_mc_add_field(struct srv_client *c, const char *name) {
    resp_add_bulk(&c->out, name, strlen(name));
}

static const char *srv_mc_type_name(enum pool_replica_type t) {
    switch (t) {
    case POOL_REPLICA_MEMORY:
        return "MEMORY";
    case POOL_REPLICA_DISK:
        return "DISK";
    case POOL_REPLICA_LOCAL_DISK:
        return "LOCAL_DISK";
    }
    return "UNKNOWN";
}

static const char *srv_mc_seg_status(enum pool_seg_status s) {
    switch (s) {
    case POOL_SEG_OK:
        return "OK";
    case POOL_SEG_GRACEFULLY_UNMOUNTING:
        return "GRACEFULLY_UNMOUNTING";
    case POOL_SEG_UNMOUNTING:
        return "UNMOUNTING";
    }
    return "UNDEFINED";
}

static void srv_mc_add_str(struct srv_client *c, const char *s) {
    resp_add_bulk(&c->out, s ? s : "", s ? strlen(s) : 0);
}

/* Copies the literal s (a string constant) to d; returns the end. */
#define SRV_MC_LIT(d, s) ((char *)memcpy((d), (s), sizeof(s) - 1) + sizeof(s) - 1)

/* Writes a bulk string; returns the end. */
static char *srv_mc_put_bulk(char *d, const void *p, size_t n) {
    *d++ = '$';
    d += resp_ll2str(d, (long long)n);
    *d++ = '\r';
    *d++ = '\n';
    if (n)
        memcpy(d, p, n);
    d += n;
    *d++ = '\r';
    *d++ = '\n';
    return d;
}

/* Writes a RESP integer; returns the end. */
static char *srv_mc_put_int(char *d, long long v) {
    *d++ = ':';
    d += resp_ll2str(d, v);
    *d++ = '\r';
    *d++ = '\n';
    return d;
}

/* Writes the segment, endpoint, protocol and desc fields of d; returns the end. */
static char *srv_mc_put_seg_fields(char *o, const struct pool_replica_desc *d, size_t ls, size_t le,
                                   size_t lp, size_t ld) {
    o = SRV_MC_LIT(o, "$7\r\nsegment\r\n");
    o = srv_mc_put_bulk(o, d->segment ? d->segment : "", ls);
    o = SRV_MC_LIT(o, "$8\r\nendpoint\r\n");
    o = srv_mc_put_bulk(o, d->endpoint ? d->endpoint : "", le);
    o = SRV_MC_LIT(o, "$8\r\nprotocol\r\n");
    o = srv_mc_put_bulk(o, d->protocol ? d->protocol : "", lp);
    o = SRV_MC_LIT(o, "$4\r\ndesc\r\n");
    return srv_mc_put_bulk(o, d->seg_desc, ld);
}

/*
 * The segment fields of recent segments as written, per thread, keyed by pool_replica_desc.
 * seg_gen (which changes whenever any of them does): a read of one segment's objects copies
 * them with one memcpy instead of four bulk strings with their length headers.
 */
#define SRV_MC_FRAG_SLOTS 8
#define SRV_MC_FRAG_CAP   1024 /* longer ones are written each time */
struct srv_mc_frag {
    uint64_t gen; /* 0: empty */
    size_t len;
    char buf[SRV_MC_FRAG_CAP];
};
static __thread struct srv_mc_frag srv_mc_frags[SRV_MC_FRAG_SLOTS];

/* Writes the segment fields of d and keeps them in f when they fit; returns the end. */
static char *srv_mc_put_seg_keep(char *o, struct srv_mc_frag *f, const struct pool_replica_desc *d,
                                 size_t ls, size_t le, size_t lp, size_t ld) {
    char *end = srv_mc_put_seg_fields(o, d, ls, le, lp, ld);
    size_t n = (size_t)(end - o);
    if (d->seg_gen != 0 && n <= SRV_MC_FRAG_CAP) {
        memcpy(f->buf, o, n);
        f->len = n;
        f->gen = d->seg_gen;
    }
    return end;
}

/*
 * One descriptor in a single reservation: the field names and fixed values are literals and
 * the segment's fields come from srv_mc_frags, so the hot MC.GETREPLICAS path costs a few
 * memcpy calls per replica.
 */
void srv_mc_add_replica(struct srv_client *c, const struct pool_replica_desc *d) {
    struct srv_mc_frag *f = &srv_mc_frags[d->seg_gen % SRV_MC_FRAG_SLOTS];
    bool hit = d->seg_gen != 0 && f->gen == d->seg_gen;
    size_t ls = 0, le = 0, lp = 0, ld = 0;
    if (!hit) {
        ls = d->segment ? strlen(d->segment) : 0;
        le = d->endpoint ? strlen(d->endpoint) : 0;
        lp = d->protocol ? strlen(d->protocol) : 0;
        ld = d->seg_desc ? d->seg_desc_len : 0;
    }
    const char *type = srv_mc_type_name(d->type);
    size_t lt = strlen(type);
    /* literals and bulk headers take under 512 bytes */
    cm_buf_reserve(&c->out, 512 + lt + (hit ? f->len : ls + le + lp + ld));
    char *o = c->out.data + c->out.len;
    o = c->proto == 3 ? SRV_MC_LIT(o, "%8\r\n") : SRV_MC_LIT(o, "*16\r\n");
    o = SRV_MC_LIT(o, "$4\r\ntype\r\n");
    o = srv_mc_put_bulk(o, type, lt);
    o = SRV_MC_LIT(o, "$6\r\nstatus\r\n");
    o = d->status == POOL_REPLICA_COMPLETE ? SRV_MC_LIT(o, "$8\r\nCOMPLETE\r\n")
                                           : SRV_MC_LIT(o, "$10\r\nPROCESSING\r\n");
    if (hit) {
        memcpy(o, f->buf, f->len);
        o += f->len;
    } else {
        o = srv_mc_put_seg_keep(o, f, d, ls, le, lp, ld);
    }
    o = SRV_MC_LIT(o, "$4\r\naddr\r\n");
    o = srv_mc_put_int(o, (long long)d->addr);
    o = SRV_MC_LIT(o, "$4\r\nsize\r\n");
    o = srv_mc_put_int(o, (long long)d->size);
    c->out.len = (size_t)(o - c->out.data);
}

void srv_mc_add_replicas(struct srv_client *c, const struct pool_replica_desc *d, size_t n) {
    resp_add_array_hdr(&c->out, (long)n);
    for (size_t i = 0; i < n; i++)
        srv_mc_add_replica(c, &d[i]);
}

void srv_mc_add_get_reply(struct srv_client *c, int64_t lease_ttl_ms,
                          const struct pool_replica_desc *d, size_t n, int promote) {
    cm_buf_reserve(&c->out, 128);
    char *o = c->out.data + c->out.len;
    if (promote) /* the reader of a disk-only object should promote it (MC.PROMOTESTART) */
        o = c->proto == 3 ? SRV_MC_LIT(o, "%3\r\n$7\r\npromote\r\n:1\r\n")
                          : SRV_MC_LIT(o, "*6\r\n$7\r\npromote\r\n:1\r\n");
    else
        o = c->proto == 3 ? SRV_MC_LIT(o, "%2\r\n") : SRV_MC_LIT(o, "*4\r\n");
    o = SRV_MC_LIT(o, "$12\r\nlease_ttl_ms\r\n");
    o = srv_mc_put_int(o, lease_ttl_ms);
    o = SRV_MC_LIT(o, "$8\r\nreplicas\r\n*");
    o += resp_ll2str(o, (long long)n);
    o = SRV_MC_LIT(o, "\r\n");
    c->out.len = (size_t)(o - c->out.data);
    for (size_t i = 0; i < n; i++)
        srv_mc_add_replica(c, &d[i]);
}

void srv_mc_add_segment(struct srv_client *c, const struct pool_segment_info *s) {
    struct cm_buf *b = &c->out;
    char id[33];
    srv_mc_uuid_str(&s->owner, id);
    resp_add_map_hdr(b, c->proto, 9);
    srv_mc_add_field(c, "name");
    srv_mc_add_str(c, s->name);
    srv_mc_add_field(c, "owner");
    srv_mc_add_str(c, id);
    srv_mc_add_field(c, "host");
    srv_mc_add_str(c, s->owner_host);
    srv_mc_add_field(c, "base");
    resp_add_int(b, (long long)s->base);
    srv_mc_add_field(c, "size");
    resp_add_int(b, (long long)s->size);
    srv_mc_add_field(c, "used");
    resp_add_int(b, (long long)s->used);
    srv_mc_add_field(c, "status");
    srv_mc_add_field(c, srv_mc_seg_status(s->status));
    srv_mc_add_field(c, "endpoint");
    srv_mc_add_str(c, s->endpoint);
    srv_mc_add_field(c, "protocol");
    srv_mc_add_str(c, s->protocol);
}
