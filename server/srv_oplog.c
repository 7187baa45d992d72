/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HA master's metadata op-log (see srv_oplog.h): entry encoding, the pending queue and its
 * writer thread (group appends), and the replay of a new leader. The stores that keep the
 * entries are srv_oplog_redis.c and srv_oplog_etcd.c (srv_oplog_int.h).
 *
 * Entry format (one list element, printable ASCII, fields separated by one space):
 *   <epoch> <seq> R <client> <host>                 client registered
 *   <epoch> <seq> M <client> <segment> <base> <size> <endpoint> <protocol> <desc>
 *   <epoch> <seq> G <segment> <grace_ms>            graceful unmount started
 *   <epoch> <seq> U <segment>                       segment dropped (unmount, expiry)
 *   <epoch> <seq> P <key> <size> <hard> <soft_ms> <nrep> <segment> <addr> [<segment> <addr>...]
 *   <epoch> <seq> D <key>                           object no longer readable
 * Strings are %-escaped (bytes outside '!'..'~' and '%' as %XX); an empty string is a lone '%'.
 * A P entry is the whole readable state of the object, so replaying an entry twice is harmless.
 * Sequence numbers grow along the whole log, across leaders (a new leader continues after the
 * highest number it read): a snapshot with last_seq S plus every entry above S is the state,
 * and the store's trim point says which entries are gone (docs/ha.md, "Snapshots and the
 * op-log").
 */
#include "common/fmacros.h"

#include "server/srv_oplog.h"

#include "server/srv_ha.h"
#include "server/srv_mc.h"
#include "server/srv_oplog_int.h"

#include "common/cm_buf.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "ha/ha_backend.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRV_OPLOG_RETRY_MS    50   /* pause before retrying a failed append */
#define SRV_OPLOG_MAX_BATCH   8192 /* entries per store append call */
#define SRV_OPLOG_COMPACT_MIN 1000 /* replays shorter than this are not compacted */
#define SRV_OPLOG_MAX_FIELDS  (6 + 2 * POOL_MAX_REPLICAS)

/* Entries waiting for the writer: bytes in data, entry i at off[i] with len[i]. */
struct srv_oplog_batch {
    struct cm_buf data;
    size_t *off, *len;
    size_t n, cap;
};

static struct {
    int enabled;
    const struct srv_oplog_store *store;

    pthread_mutex_t mu;
    pthread_cond_t cv;      /* writer: work arrived / stop */
    pthread_cond_t done_cv; /* waiters: durable or failed moved */
    pthread_t thread;
    int thread_on, stopping;
    int active;
    uint64_t epoch;
    _Atomic uint64_t next_seq;  /* last assigned sequence number (written under mu) */
    _Atomic uint64_t term_base; /* next_seq when this leadership began: older entries are not
                                   in the current pool (it was replayed from the store) */
    uint64_t durable;           /* every entry <= durable is stored (or was before a failure) */
    uint64_t failed_through;    /* entries <= this that are not durable were dropped */
    struct srv_oplog_batch pending, inflight;
    struct srv_oplog_stats st;
    void (*progress_hook)(void); /* wakes the event loops holding replies */
} srv_oplog = {.mu = PTHREAD_MUTEX_INITIALIZER};

static __thread uint64_t srv_oplog_tl_seq; /* last entry produced by this thread */
static __thread int srv_oplog_tl_fail;     /* produced while inactive: fail the next take */

/* ---- encoding ------------------------------------------------------------------------------ */

static void srv_oplog_esc(struct cm_buf *b, const void *p, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *s = p;
    cm_buf_append(b, " ", 1);
    if (n == 0) {
        cm_buf_append(b, "%", 1);
        return;
    }
    cm_buf_reserve(b, 3 * n);
    char *o = b->data + b->len;
    for (size_t i = 0; i < n; i++) {
        if (s[i] > ' ' && s[i] < 0x7f && s[i] != '%') {
            *o++ = (char)s[i];
        } else {
            *o++ = '%';
            *o++ = hex[s[i] >> 4];
            *o++ = hex[s[i] & 15];
        }
    }
    b->len = (size_t)(o - b->data);
}

static void srv_oplog_esc_str(struct cm_buf *b, const char *s) {
    srv_oplog_esc(b, s ? s : "", s ? strlen(s) : 0);
}

static int srv_oplog_hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes field f (len n) in place; returns the decoded length or -1. */
static long srv_oplog_unesc(char *f, size_t n) {
    if (n == 1 && f[0] == '%')
        return 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (f[i] != '%') {
            f[o++] = f[i];
            continue;
        }
        if (i + 2 >= n)
            return -1;
        int hi = srv_oplog_hexval(f[i + 1]), lo = srv_oplog_hexval(f[i + 2]);
        if (hi < 0 || lo < 0)
            return -1;
        f[o++] = (char)(hi << 4 | lo);
        i += 2;
    }
    return (long)o;
}

/* ---- the pending queue ----------------------------------------------------------------------- */

static void srv_oplog_batch_push(struct srv_oplog_batch *b, size_t off, size_t len) {
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->off = cm_realloc(b->off, b->cap * sizeof(size_t));
        b->len = cm_realloc(b->len, b->cap * sizeof(size_t));
    }
    b->off[b->n] = off;
    b->len[b->n] = len;
    b->n++;
}

static void srv_oplog_batch_clear(struct srv_oplog_batch *b) {
    cm_buf_clear(&b->data);
    b->n = 0;
}

static void srv_oplog_batch_fini(struct srv_oplog_batch *b) {
    cm_buf_fini(&b->data);
    cm_free(b->off);
    cm_free(b->len);
    memset(b, 0, sizeof(*b));
}

/* Starts an entry "<epoch> <seq> <op>" in q (the next sequence number). */
static void srv_oplog_head(struct srv_oplog_batch *q, uint64_t epoch, char op) {
    srv_oplog_batch_push(q, q->data.len, 0);
    cm_buf_appendf(&q->data, "%" PRIu64 " %" PRIu64 " %c", epoch,
                   atomic_fetch_add(&srv_oplog.next_seq, 1) + 1, op);
}

/* Ends the entry started last in q. */
static void srv_oplog_tail(struct srv_oplog_batch *q) {
    q->len[q->n - 1] = q->data.len - q->off[q->n - 1];
}

/*
 * Starts an entry of type op in the pending batch: takes the queue mutex, which the matching
 * srv_oplog_end() releases. Returns NULL (mutex not held) when entries are not being taken.
 */
static struct cm_buf *srv_oplog_begin(char op) {
    if (!srv_oplog.enabled)
        return NULL;
    pthread_mutex_lock(&srv_oplog.mu);
    if (!srv_oplog.active) {
        pthread_mutex_unlock(&srv_oplog.mu);
        srv_oplog_tl_fail = 1;
        return NULL;
    }
    srv_oplog_head(&srv_oplog.pending, srv_oplog.epoch, op);
    return &srv_oplog.pending.data;
}

static void srv_oplog_end(void) {
    srv_oplog_tail(&srv_oplog.pending);
    srv_oplog_tl_seq = atomic_load(&srv_oplog.next_seq);
    pthread_cond_signal(&srv_oplog.cv);
    pthread_mutex_unlock(&srv_oplog.mu);
}

/* ---- producers --------------------------------------------------------------------------- */

/* Readable replicas of key in p (0 when it is missing or being written); fills *info. */
static uint32_t srv_oplog_readable(struct pool *p, const void *key, size_t klen,
                                   struct pool_object_info *info) {
    uint32_t complete = 0;
    if (pool_object_query(p, key, klen, info) == 0 && !info->inflight)
        for (uint32_t i = 0; i < info->nreplicas; i++)
            complete += info->replicas[i].status == POOL_REPLICA_COMPLETE;
    return complete;
}

/* The fields of a P entry after its head. */
static void srv_oplog_body_put(struct cm_buf *b, const void *key, size_t klen,
                               const struct pool_object_info *info, uint32_t complete) {
    int64_t now = srv_mc_now();
    int64_t soft = info->soft_pin_until > now ? info->soft_pin_until - now : 0;
    srv_oplog_esc(b, key, klen);
    cm_buf_appendf(b, " %" PRIu64 " %d %" PRId64 " %u", info->size, info->hard_pinned ? 1 : 0, soft,
                   complete);
    for (uint32_t i = 0; i < info->nreplicas; i++) {
        if (info->replicas[i].status != POOL_REPLICA_COMPLETE)
            continue;
        srv_oplog_esc_str(b, info->replicas[i].segment);
        cm_buf_appendf(b, " %" PRIu64, info->replicas[i].addr);
    }
}

/* The fields of an R entry. */
static void srv_oplog_body_register(struct cm_buf *b, const struct pool_uuid *id,
                                    const char *host) {
    char hex[33];
    srv_mc_uuid_str(id, hex);
    cm_buf_appendf(b, " %s", hex);
    srv_oplog_esc_str(b, host);
}

/* The fields of an M entry. */
static void srv_oplog_body_mount(struct cm_buf *b, const struct pool_segment_info *s) {
    char hex[33];
    srv_mc_uuid_str(&s->owner, hex);
    cm_buf_appendf(b, " %s", hex);
    srv_oplog_esc_str(b, s->name);
    cm_buf_appendf(b, " %" PRIu64 " %" PRIu64, s->base, s->size);
    srv_oplog_esc_str(b, s->endpoint);
    srv_oplog_esc_str(b, s->protocol);
    srv_oplog_esc(b, s->desc, s->desc ? s->desc_len : 0);
}

void srv_oplog_log_key(struct pool *p, const void *key, size_t klen) {
    if (!srv_oplog.enabled)
        return;
    struct pool_object_info info;
    uint32_t complete = srv_oplog_readable(p, key, klen, &info);
    struct cm_buf *b = srv_oplog_begin(complete ? 'P' : 'D');
    if (!b)
        return;
    if (complete)
        srv_oplog_body_put(b, key, klen, &info, complete);
    else
        srv_oplog_esc(b, key, klen);
    srv_oplog_end();
}

void srv_oplog_log_register(const struct pool_uuid *id, const char *host) {
    struct cm_buf *b = srv_oplog_begin('R');
    if (!b)
        return;
    srv_oplog_body_register(b, id, host);
    srv_oplog_end();
}

void srv_oplog_log_mount(struct pool *p, const char *segment) {
    struct pool_segment_info s;
    if (!srv_oplog.enabled || pool_segment_query(p, segment, &s) != 0)
        return;
    struct cm_buf *b = srv_oplog_begin('M');
    if (!b)
        return;
    srv_oplog_body_mount(b, &s);
    srv_oplog_end();
}

void srv_oplog_log_graceful(const char *segment, int64_t grace_ms) {
    struct cm_buf *b = srv_oplog_begin('G');
    if (!b)
        return;
    srv_oplog_esc_str(b, segment);
    cm_buf_appendf(b, " %" PRId64, grace_ms);
    srv_oplog_end();
}

void srv_oplog_on_seg_drop(void *arg, const char *name) {
    (void)arg;
    struct cm_buf *b = srv_oplog_begin('U');
    if (!b)
        return;
    srv_oplog_esc_str(b, name);
    srv_oplog_end();
}

int srv_oplog_on_evict(void *arg, const struct pool_evict_event *ev) {
    (void)arg;
    struct cm_buf *b = srv_oplog_begin('D');
    if (b) {
        srv_oplog_esc(b, ev->key, ev->klen);
        srv_oplog_end();
    }
    return POOL_EVICT_DROP;
}

struct srv_oplog_keys {
    struct cm_buf data;
    size_t *len;
    size_t n, cap;
};

static void srv_oplog_keys_add(void *arg, const char *key, size_t klen) {
    struct srv_oplog_keys *ks = arg;
    if (ks->n == ks->cap) {
        ks->cap = ks->cap ? 2 * ks->cap : 64;
        ks->len = cm_realloc(ks->len, ks->cap * sizeof(size_t));
    }
    ks->len[ks->n++] = klen;
    cm_buf_append(&ks->data, key, klen);
}

struct srv_oplog_keys *srv_oplog_collect(struct pool *p, const char *pattern) {
    if (!srv_oplog.enabled)
        return NULL;
    struct srv_oplog_keys *ks = cm_calloc(1, sizeof(*ks));
    cm_buf_init(&ks->data);
    pool_keys_regex(p, pattern ? pattern : "^", srv_oplog_keys_add, ks);
    return ks;
}

void srv_oplog_log_keys(struct pool *p, struct srv_oplog_keys *ks) {
    if (!ks)
        return;
    size_t off = 0;
    for (size_t i = 0; i < ks->n; i++) {
        srv_oplog_log_key(p, ks->data.data + off, ks->len[i]);
        off += ks->len[i];
    }
    cm_buf_fini(&ks->data);
    cm_free(ks->len);
    cm_free(ks);
}

/* ---- the writer ---------------------------------------------------------------------------- */

/*
 * Appends the in-flight batch (sequence numbers from first), retrying transient failures while
 * this master still holds the lease of epoch. Returns 0, or -1 when the batch cannot be stored
 * by this leader.
 */
static int srv_oplog_append(void **cp, uint64_t epoch, uint64_t first) {
    const struct srv_oplog_store *st = srv_oplog.store;
    const struct srv_oplog_batch *b = &srv_oplog.inflight;
    const char **v = cm_malloc((b->n ? b->n : 1) * sizeof(char *));
    for (size_t i = 0; i < b->n; i++)
        v[i] = b->data.data + b->off[i];
    char err[512];
    int logged = 0, rc = 0;
    for (size_t from = 0; from < b->n;) {
        size_t n = b->n - from < SRV_OPLOG_MAX_BATCH ? b->n - from : SRV_OPLOG_MAX_BATCH;
        if (!srv_ha_lease_valid(epoch)) {
            cm_log(CM_LOG_WARNING, "oplog",
                   "%zu entries dropped: no longer leader of epoch %" PRIu64, b->n - from, epoch);
            rc = -1;
            break;
        }
        if (!*cp)
            *cp = st->connect(err, sizeof(err));
        if (*cp && st->append(*cp, epoch, first + from, v + from, b->len + from, n, err,
                              sizeof(err)) == 0) {
            from += n;
            continue;
        }
        if (strstr(err, "FENCED")) {
            cm_log(CM_LOG_WARNING, "oplog", "append refused at epoch %" PRIu64 ": %s", epoch, err);
            rc = -1;
            break;
        }
        if (!logged++)
            cm_log(CM_LOG_WARNING, "oplog", "append failed, retrying: %s", err);
        st->disconnect(*cp);
        *cp = NULL;
        srv_oplog.st.connected = 0;
        cm_sleep_ms(SRV_OPLOG_RETRY_MS);
    }
    cm_free(v);
    if (rc == 0)
        srv_oplog.st.connected = 1;
    return rc;
}

static void srv_oplog_moved(void);

static void *srv_oplog_main(void *arg) {
    (void)arg;
    void *c = NULL;
    pthread_mutex_lock(&srv_oplog.mu);
    for (;;) {
        while (!srv_oplog.stopping && srv_oplog.pending.n == 0)
            pthread_cond_wait(&srv_oplog.cv, &srv_oplog.mu);
        if (srv_oplog.stopping)
            break;
        struct srv_oplog_batch t = srv_oplog.inflight;
        srv_oplog.inflight = srv_oplog.pending;
        srv_oplog.pending = t;
        srv_oplog_batch_clear(&srv_oplog.pending);
        uint64_t last = atomic_load(&srv_oplog.next_seq), epoch = srv_oplog.epoch;
        size_t n = srv_oplog.inflight.n;
        pthread_mutex_unlock(&srv_oplog.mu);
        int rc = srv_oplog_append(&c, epoch, last - n + 1);
        pthread_mutex_lock(&srv_oplog.mu);
        if (rc == 0) {
            srv_oplog.durable = last;
            srv_oplog.st.appended += n;
            srv_oplog.st.batches++;
            if (n > srv_oplog.st.max_batch)
                srv_oplog.st.max_batch = n;
        } else {
            srv_oplog.failed_through = last;
            srv_oplog.st.failed += n;
        }
        srv_oplog_batch_clear(&srv_oplog.inflight);
        srv_oplog_moved();
    }
    pthread_mutex_unlock(&srv_oplog.mu);
    srv_oplog.store->disconnect(c);
    return NULL;
}

void srv_oplog_note_state(void) {
    if (!srv_oplog.enabled)
        return;
    uint64_t s = atomic_load_explicit(&srv_oplog.next_seq, memory_order_relaxed);
    if (s > atomic_load_explicit(&srv_oplog.term_base, memory_order_relaxed) &&
        s > srv_oplog_tl_seq)
        srv_oplog_tl_seq = s;
}

int srv_oplog_take_need(uint64_t *need) {
    *need = srv_oplog_tl_seq;
    srv_oplog_tl_seq = 0;
    if (srv_oplog_tl_fail) {
        srv_oplog_tl_fail = 0;
        *need = 0;
        return -1;
    }
    return 0;
}

void srv_oplog_progress(uint64_t *durable, uint64_t *failed_through) {
    pthread_mutex_lock(&srv_oplog.mu);
    *durable = srv_oplog.durable;
    *failed_through = srv_oplog.failed_through;
    pthread_mutex_unlock(&srv_oplog.mu);
}

void srv_oplog_set_progress_hook(void (*fn)(void)) {
    pthread_mutex_lock(&srv_oplog.mu);
    srv_oplog.progress_hook = fn;
    pthread_mutex_unlock(&srv_oplog.mu);
}

/* durable or failed_through moved (caller holds mu): wakes the waiters and the event loops. */
static void srv_oplog_moved(void) {
    pthread_cond_broadcast(&srv_oplog.done_cv);
    if (srv_oplog.progress_hook)
        srv_oplog.progress_hook();
}

void srv_oplog_activate(uint64_t epoch) {
    if (!srv_oplog.enabled)
        return;
    pthread_mutex_lock(&srv_oplog.mu);
    srv_oplog.epoch = epoch;
    srv_oplog.active = 1;
    atomic_store(&srv_oplog.term_base, atomic_load(&srv_oplog.next_seq));
    pthread_mutex_unlock(&srv_oplog.mu);
}

void srv_oplog_deactivate(void) {
    if (!srv_oplog.enabled)
        return;
    pthread_mutex_lock(&srv_oplog.mu);
    srv_oplog.active = 0;
    srv_oplog.st.failed += srv_oplog.pending.n;
    srv_oplog_batch_clear(&srv_oplog.pending);
    srv_oplog.failed_through = atomic_load(&srv_oplog.next_seq);
    srv_oplog_moved();
    pthread_mutex_unlock(&srv_oplog.mu);
}

/* ---- open / close ---------------------------------------------------------------------------- */

int srv_oplog_open(const char *uri, const char *cluster, char *err, size_t errlen) {
    static const struct srv_oplog_store *const stores[] = {&srv_oplog_redis, &srv_oplog_etcd};
    struct ha_uri u;
    if (ha_uri_parse(uri, &u, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < sizeof(stores) / sizeof(stores[0]); i++)
        if (strcmp(u.scheme, stores[i]->scheme) == 0)
            srv_oplog.store = stores[i];
    if (!srv_oplog.store) {
        snprintf(err, errlen,
                 "oplog_store: '%s' is not supported (redis://[user:password@]host:port[/db] or "
                 "etcd://host:port[,host:port...])",
                 uri);
        return -1;
    }
    if (srv_oplog.store->open(&u, cluster, err, errlen) != 0)
        return -1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv_oplog.cv, &ca);
    pthread_cond_init(&srv_oplog.done_cv, &ca);
    pthread_condattr_destroy(&ca);
    cm_buf_init(&srv_oplog.pending.data);
    cm_buf_init(&srv_oplog.inflight.data);
    int rc = pthread_create(&srv_oplog.thread, NULL, srv_oplog_main, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the op-log writer: %s", strerror(rc));
        return -1;
    }
    srv_oplog.thread_on = 1;
    srv_oplog.enabled = 1;
    return 0;
}

void srv_oplog_close(void) {
    if (!srv_oplog.thread_on)
        return;
    pthread_mutex_lock(&srv_oplog.mu);
    srv_oplog.stopping = 1;
    srv_oplog.active = 0;
    pthread_cond_broadcast(&srv_oplog.cv);
    pthread_mutex_unlock(&srv_oplog.mu);
    pthread_join(srv_oplog.thread, NULL);
    srv_oplog.thread_on = 0;
    srv_oplog.enabled = 0;
    srv_oplog_batch_fini(&srv_oplog.pending);
    srv_oplog_batch_fini(&srv_oplog.inflight);
}

int srv_oplog_enabled(void) {
    return srv_oplog.enabled;
}

void srv_oplog_get_stats(struct srv_oplog_stats *st) {
    pthread_mutex_lock(&srv_oplog.mu);
    *st = srv_oplog.st;
    st->durable = srv_oplog.durable;
    pthread_mutex_unlock(&srv_oplog.mu);
}

/* ---- fence and replay ------------------------------------------------------------------------ */

int srv_oplog_fence(uint64_t epoch, char *err, size_t errlen) {
    void *c = srv_oplog.store->connect(err, errlen);
    if (!c)
        return -1;
    int rc = srv_oplog.store->append(c, epoch, 0, NULL, NULL, 0, err, errlen);
    srv_oplog.store->disconnect(c);
    return rc;
}

/* One entry split into fields (decoded in place). */
struct srv_oplog_entry {
    char *f[SRV_OPLOG_MAX_FIELDS];
    size_t len[SRV_OPLOG_MAX_FIELDS];
    int n;
};

/* Splits and unescapes s (NUL-terminated, modified). Returns 0 or -1. */
static int srv_oplog_split(char *s, struct srv_oplog_entry *e) {
    e->n = 0;
    for (char *p = s; *p;) {
        char *sp = strchr(p, ' ');
        size_t n = sp ? (size_t)(sp - p) : strlen(p);
        if (n == 0 || e->n == SRV_OPLOG_MAX_FIELDS)
            return -1;
        long d = e->n >= 3 ? srv_oplog_unesc(p, n) : (long)n;
        if (d < 0)
            return -1;
        e->f[e->n] = p;
        e->len[e->n] = (size_t)d;
        p[d] = '\0';
        e->n++;
        p = sp ? sp + 1 : p + n;
    }
    return e->n >= 3 && e->len[2] == 1 ? 0 : -1;
}

static int srv_oplog_u64(const struct srv_oplog_entry *e, int i, uint64_t *out) {
    char *end;
    if (i >= e->n || e->len[i] == 0)
        return -1;
    errno = 0;
    *out = strtoull(e->f[i], &end, 10);
    return *end || errno ? -1 : 0;
}

/* Parses a 32-hex-digit client id. */
static int srv_oplog_uuid(const struct srv_oplog_entry *e, int i, struct pool_uuid *id) {
    if (i >= e->n || e->len[i] != 32)
        return -1;
    for (int k = 0; k < 16; k++) {
        int hi = srv_oplog_hexval(e->f[i][2 * k]), lo = srv_oplog_hexval(e->f[i][2 * k + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        id->b[k] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int srv_oplog_apply_mount(struct pool *p, const struct srv_oplog_entry *e, int64_t now) {
    struct pool_uuid id;
    struct pool_segment_spec spec = {0};
    if (e->n != 10 || srv_oplog_uuid(e, 3, &id) || srv_oplog_u64(e, 5, &spec.base) ||
        srv_oplog_u64(e, 6, &spec.size))
        return -1;
    spec.name = e->f[4];
    spec.endpoint = e->len[7] ? e->f[7] : NULL;
    spec.protocol = e->len[8] ? e->f[8] : NULL;
    spec.desc = e->len[9] ? e->f[9] : NULL;
    spec.desc_len = e->len[9];
    return pool_segment_mount(p, &id, &spec, now) == 0 ? 0 : -1;
}

/* U / G: the segment's owner, found in p; a segment already gone is not an error. */
static int srv_oplog_apply_unmount(struct pool *p, const struct srv_oplog_entry *e, int64_t now) {
    struct pool_segment_info s;
    uint64_t grace = 0;
    if ((e->f[2][0] == 'U' && e->n != 4) ||
        (e->f[2][0] == 'G' && (e->n != 5 || srv_oplog_u64(e, 4, &grace))))
        return -1;
    if (pool_segment_query(p, e->f[3], &s) != 0)
        return 0;
    struct pool_uuid owner = s.owner;
    if (e->f[2][0] == 'U')
        return pool_segment_unmount(p, &owner, e->f[3], now) == 0 ? 0 : -1;
    pool_segment_unmount_graceful(p, &owner, e->f[3], (int64_t)grace, now);
    return 0;
}

static int srv_oplog_apply_put(struct pool *p, const struct srv_oplog_entry *e, int64_t now) {
    uint64_t size, hard, soft, nrep;
    if (srv_oplog_u64(e, 4, &size) || srv_oplog_u64(e, 5, &hard) || srv_oplog_u64(e, 6, &soft) ||
        srv_oplog_u64(e, 7, &nrep) || nrep == 0 || nrep > POOL_MAX_REPLICAS ||
        e->n != 8 + 2 * (int)nrep)
        return -1;
    struct pool_restore_replica reps[POOL_MAX_REPLICAS];
    for (uint64_t i = 0; i < nrep; i++) {
        reps[i].segment = e->f[8 + 2 * i];
        if (srv_oplog_u64(e, 9 + 2 * (int)i, &reps[i].addr))
            return -1;
    }
    return pool_object_restore(p, e->f[3], e->len[3], size, hard != 0, (int64_t)soft, reps,
                               (size_t)nrep, now) == 0
               ? 0
               : -1;
}

/* Applies one entry to p. Returns 0 or -1. */
static int srv_oplog_apply(struct pool *p, const struct srv_oplog_entry *e, int64_t now) {
    struct pool_uuid id;
    switch (e->f[2][0]) {
    case 'R':
        if (e->n != 5 || srv_oplog_uuid(e, 3, &id))
            return -1;
        return pool_client_register(p, &id, e->f[4], now) == 0 ? 0 : -1;
    case 'M':
        return srv_oplog_apply_mount(p, e, now);
    case 'U':
    case 'G':
        return srv_oplog_apply_unmount(p, e, now);
    case 'P':
        return srv_oplog_apply_put(p, e, now);
    case 'D':
        if (e->n != 4)
            return -1;
        pool_remove(p, e->f[3], e->len[3], 1, now); /* a key already gone is fine */
        return 0;
    default:
        return -1;
    }
}

/* State of one replay. */
struct srv_oplog_replay_ctx {
    struct pool *p;
    int64_t now;
    uint64_t after;   /* entries <= after are in the snapshot p was loaded from: skipped */
    uint64_t max_seq; /* highest sequence number read */
    uint64_t last_epoch, n, skipped;
    char *err;
    size_t errlen;
};

/* Checks and applies one entry (data NULL: not a string); returns NULL or what went wrong. */
static const char *srv_oplog_apply_one(struct srv_oplog_replay_ctx *x, const char *data,
                                       size_t len) {
    struct srv_oplog_entry e;
    uint64_t epoch = 0, seq = 0;
    if (!data)
        return "is not a string";
    char *s = cm_malloc(len + 1);
    memcpy(s, data, len);
    s[len] = '\0';
    const char *why = NULL;
    if (strlen(s) != len || srv_oplog_split(s, &e) != 0 || srv_oplog_u64(&e, 0, &epoch) != 0 ||
        srv_oplog_u64(&e, 1, &seq) != 0)
        why = "cannot be parsed";
    else if (epoch < x->last_epoch)
        why = "has an epoch below the entry before it";
    else if (seq <= x->after)
        x->skipped++;
    else if (srv_oplog_apply(x->p, &e, x->now) != 0)
        why = "cannot be applied";
    else
        x->n++;
    if (!why) {
        x->last_epoch = epoch;
        if (seq > x->max_seq)
            x->max_seq = seq;
    }
    cm_free(s);
    return why;
}

static int srv_oplog_replay_cb(void *arg, const char *data, size_t len, const char *where,
                               const char *hint) {
    struct srv_oplog_replay_ctx *x = arg;
    const char *why = srv_oplog_apply_one(x, data, len);
    if (why) {
        snprintf(x->err, x->errlen, "op-log entry %s %s: '%.*s'; refusing to serve (%s)", where,
                 why, data ? (int)(len < 120 ? len : 120) : 0, data ? data : "", hint);
        return -1;
    }
    return 0;
}

int srv_oplog_replay(struct pool *p, int64_t now, uint64_t after_seq, uint64_t *n, char *err,
                     size_t errlen) {
    void *c = srv_oplog.store->connect(err, errlen);
    if (!c)
        return -1;
    struct srv_oplog_replay_ctx x = {
        .p = p, .now = now, .after = after_seq, .err = err, .errlen = errlen};
    int rc = srv_oplog.store->scan(c, srv_oplog_replay_cb, &x, err, errlen);
    srv_oplog.store->disconnect(c);
    *n = x.n;
    if (rc == 0) {
        pthread_mutex_lock(&srv_oplog.mu);
        srv_oplog.st.replayed = x.n;
        srv_oplog.st.skipped = x.skipped;
        uint64_t next = x.max_seq > after_seq ? x.max_seq : after_seq;
        if (next > atomic_load(&srv_oplog.next_seq))
            atomic_store(&srv_oplog.next_seq, next);
        pthread_mutex_unlock(&srv_oplog.mu);
    }
    return rc;
}

int srv_oplog_bounds(uint64_t *base, uint64_t *first, char *err, size_t errlen) {
    *base = *first = 0;
    if (!srv_oplog.store->bounds)
        return 0;
    void *c = srv_oplog.store->connect(err, errlen);
    if (!c)
        return -1;
    int rc = srv_oplog.store->bounds(c, base, first, err, errlen);
    srv_oplog.store->disconnect(c);
    if (rc == 0) {
        pthread_mutex_lock(&srv_oplog.mu);
        srv_oplog.st.trimmed_to = *base;
        pthread_mutex_unlock(&srv_oplog.mu);
    }
    return rc;
}

/* ---- hot standby ----------------------------------------------------------------------------- */

#define SRV_OPLOG_WARM_CHUNK 10000 /* entries per hot-standby read */

/* One hot-standby read: the warm state, the read's first entry, what went wrong. */
struct srv_oplog_warm_ctx {
    struct srv_oplog_warm *w;
    int64_t now;
    int initial;        /* the first read after loading: the snapshot check, not the boundary's */
    long fed;           /* entries seen in this read */
    int unusable;       /* a check failed: w cannot follow the log */
    int found;          /* the read began with the entry read last */
    uint64_t first_seq; /* sequence number of the read's first entry */
    uint64_t n;         /* entries applied */
    char *err;
    size_t errlen;
};

/* Records data as the last entry read (seq, epoch). */
static void srv_oplog_warm_keep(struct srv_oplog_warm *w, const char *data, size_t len,
                                uint64_t seq, uint64_t epoch) {
    if (w->last_len != len || !w->last || memcmp(w->last, data, len) != 0) {
        cm_free(w->last);
        w->last = cm_malloc(len + 1);
        memcpy(w->last, data, len);
        w->last[len] = '\0';
        w->last_len = len;
    }
    w->key_seq = seq;
    w->key_epoch = epoch;
    if (seq > w->seq)
        w->seq = seq;
}

/* Checks and applies one entry of a hot-standby read; returns NULL or what went wrong. */
static const char *srv_oplog_warm_one(struct srv_oplog_warm_ctx *x, const char *data, size_t len) {
    struct srv_oplog_warm *w = x->w;
    struct srv_oplog_entry e;
    uint64_t epoch = 0, seq = 0;
    int first = x->fed++ == 0;
    if (!data)
        return "is not a string";
    if (first && !x->initial && w->last && len == w->last_len && memcmp(data, w->last, len) == 0) {
        x->found = 1; /* the entry read last: the log goes on from it */
        return NULL;
    }
    char *s = cm_malloc(len + 1);
    memcpy(s, data, len);
    s[len] = '\0';
    const char *why = NULL;
    if (strlen(s) != len || srv_oplog_split(s, &e) != 0 || srv_oplog_u64(&e, 0, &epoch) != 0 ||
        srv_oplog_u64(&e, 1, &seq) != 0)
        why = "cannot be parsed";
    else if (first && (x->first_seq = seq) <= w->seq && !x->initial)
        why = "is not the entry read last (the log was rewritten)";
    else if (epoch < w->key_epoch)
        why = "has an epoch below the entry before it";
    else if (seq > w->seq && srv_oplog_apply(w->p, &e, x->now) != 0)
        why = "cannot be applied";
    else if (seq > w->seq)
        x->n++;
    cm_free(s);
    if (!why)
        srv_oplog_warm_keep(w, data, len, seq, epoch);
    return why;
}

static int srv_oplog_warm_cb(void *arg, const char *data, size_t len, const char *where,
                             const char *hint) {
    struct srv_oplog_warm_ctx *x = arg;
    const char *why = srv_oplog_warm_one(x, data, len);
    if (!why)
        return 0;
    x->unusable = 1;
    snprintf(x->err, x->errlen, "op-log entry %s %s: '%.*s' (%s)", where, why,
             data ? (int)(len < 120 ? len : 120) : 0, data ? data : "", hint);
    return -1;
}

/* One read of up to SRV_OPLOG_WARM_CHUNK entries; returns the count fed, -1 or -2. */
static long srv_oplog_warm_read(void *c, struct srv_oplog_warm_ctx *x) {
    struct srv_oplog_warm *w = x->w;
    uint64_t base = 0, len = 0, had = w->seq;
    x->fed = 0;
    x->found = 0;
    long got = srv_oplog.store->read_from(c, w->last ? w->key_seq : w->seq,
                                          w->last ? w->key_epoch : 0, SRV_OPLOG_WARM_CHUNK,
                                          srv_oplog_warm_cb, x, &base, &len, x->err, x->errlen);
    if (got < 0)
        return x->unusable ? -2 : -1;
    w->log_len = len;
    if (x->initial) { /* as srv_snapshot_load_ha checks a snapshot against the log */
        if (base > had || (had > 0 && x->fed > 0 && x->first_seq > had + 1)) {
            snprintf(x->err, x->errlen,
                     "the op-log (trimmed to %" PRIu64 ") no longer follows the state at %" PRIu64,
                     base, had);
            return -2;
        }
        x->initial = 0;
        return got;
    }
    /* the entry read last was not found again: only right when the log was trimmed exactly to
       where w stands (the entries after it are all there) */
    if (!x->found && base != had) {
        snprintf(x->err, x->errlen,
                 "the op-log no longer holds the entry %" PRIu64 " read last (trimmed to %" PRIu64
                 " or compacted)",
                 had, base);
        return -2;
    }
    return got;
}

int srv_oplog_warm_tail(struct srv_oplog_warm *w, int64_t now, uint64_t *n, char *err,
                        size_t errlen) {
    *n = 0;
    if (!srv_oplog.enabled || !srv_oplog.store->read_from || !w->p) {
        snprintf(err, errlen, "no hot-standby state");
        return -2;
    }
    if (!w->conn && !(w->conn = srv_oplog.store->connect(err, errlen)))
        return -1;
    struct srv_oplog_warm_ctx x = {.w = w, .now = now, .err = err, .errlen = errlen};
    long got;
    do
        got = srv_oplog_warm_read(w->conn, &x);
    while (got == SRV_OPLOG_WARM_CHUNK);
    if (got == -1) { /* a store error: reconnect on the next read */
        srv_oplog.store->disconnect(w->conn);
        w->conn = NULL;
    }
    *n = x.n;
    w->applied += x.n;
    if (got >= 0)
        w->last_read_ms = (int64_t)cm_mono_ms();
    return got >= 0 ? 0 : (int)got;
}

int srv_oplog_warm_build(struct srv_oplog_warm *w, struct pool *p, uint64_t after_seq, int64_t now,
                         char *err, size_t errlen) {
    srv_oplog_warm_free(w);
    w->p = p;
    w->seq = after_seq;
    w->snap_seq = after_seq;
    if (!srv_oplog.enabled || !srv_oplog.store->read_from) {
        snprintf(err, errlen, "the op-log store cannot be tailed");
        srv_oplog_warm_free(w);
        return -1;
    }
    if (!(w->conn = srv_oplog.store->connect(err, errlen))) {
        srv_oplog_warm_free(w);
        return -1;
    }
    struct srv_oplog_warm_ctx x = {.w = w, .now = now, .initial = 1, .err = err, .errlen = errlen};
    long got;
    do
        got = srv_oplog_warm_read(w->conn, &x);
    while (got == SRV_OPLOG_WARM_CHUNK);
    if (got < 0) {
        srv_oplog_warm_free(w);
        return -1;
    }
    w->applied = x.n;
    w->last_read_ms = (int64_t)cm_mono_ms();
    return 0;
}

void srv_oplog_warm_finish(const struct srv_oplog_warm *w, uint64_t n) {
    pthread_mutex_lock(&srv_oplog.mu);
    srv_oplog.st.replayed = n;
    srv_oplog.st.skipped = 0;
    if (w->seq > atomic_load(&srv_oplog.next_seq))
        atomic_store(&srv_oplog.next_seq, w->seq);
    pthread_mutex_unlock(&srv_oplog.mu);
}

void srv_oplog_warm_free(struct srv_oplog_warm *w) {
    if (w->p)
        pool_destroy(w->p);
    if (w->conn)
        srv_oplog.store->disconnect(w->conn);
    cm_free(w->last);
    memset(w, 0, sizeof(*w));
}

/* ---- snapshots ------------------------------------------------------------------------------- */

int srv_oplog_snapshot_point(uint64_t epoch, uint64_t *seq) {
    if (!srv_oplog.enabled)
        return -1;
    pthread_mutex_lock(&srv_oplog.mu);
    int ok = srv_oplog.active && srv_oplog.epoch == epoch;
    *seq = atomic_load(&srv_oplog.next_seq);
    pthread_mutex_unlock(&srv_oplog.mu);
    return ok ? 0 : -1;
}

int srv_oplog_wait_durable(uint64_t epoch, uint64_t seq) {
    if (!srv_oplog.enabled)
        return -1;
    pthread_mutex_lock(&srv_oplog.mu);
    /* entries up to term_base were read from the store when this leadership began */
    int replayed = srv_oplog.epoch == epoch && seq <= atomic_load(&srv_oplog.term_base);
    while (!replayed && srv_oplog.durable < seq && srv_oplog.failed_through < seq)
        pthread_cond_wait(&srv_oplog.done_cv, &srv_oplog.mu);
    /* a failure at or after seq may have dropped one of them (or ended this leadership, after
       which durable belongs to a later one): refuse rather than guess */
    int rc = replayed || (srv_oplog.durable >= seq && srv_oplog.failed_through < seq) ? 0 : -1;
    pthread_mutex_unlock(&srv_oplog.mu);
    return rc;
}

int srv_oplog_trim(uint64_t epoch, uint64_t upto, uint64_t upto_epoch, char *err, size_t errlen) {
    if (!srv_oplog.enabled || !srv_oplog.store->trim)
        return 0;
    pthread_mutex_lock(&srv_oplog.mu);
    int done = upto <= srv_oplog.st.trimmed_to;
    pthread_mutex_unlock(&srv_oplog.mu);
    if (done)
        return 0;
    void *c = srv_oplog.store->connect(err, errlen);
    if (!c)
        return -1;
    int rc = srv_oplog.store->trim(c, epoch, upto, upto_epoch, err, errlen);
    srv_oplog.store->disconnect(c);
    if (rc == 0) {
        pthread_mutex_lock(&srv_oplog.mu);
        srv_oplog.st.trims++;
        srv_oplog.st.trimmed_to = upto;
        pthread_mutex_unlock(&srv_oplog.mu);
    }
    return rc;
}

/* ---- compaction ------------------------------------------------------------------------------ */

/* Building a compacted log: the batch, its epoch, the segment owners already registered. */
struct srv_oplog_compact_ctx {
    struct srv_oplog_batch q;
    uint64_t epoch;
    struct pool_uuid *owners;
    size_t nowners, cap;
};

/* pool_segment_foreach visitor: R for a new owner, M, and G for a graceful unmount. */
static void srv_oplog_compact_seg(void *arg, const struct pool_segment_info *s) {
    struct srv_oplog_compact_ctx *x = arg;
    size_t i = 0;
    while (i < x->nowners && memcmp(&x->owners[i], &s->owner, sizeof(s->owner)) != 0)
        i++;
    if (i == x->nowners) {
        if (x->nowners == x->cap) {
            x->cap = x->cap ? 2 * x->cap : 16;
            x->owners = cm_realloc(x->owners, x->cap * sizeof(*x->owners));
        }
        x->owners[x->nowners++] = s->owner;
        srv_oplog_head(&x->q, x->epoch, 'R');
        srv_oplog_body_register(&x->q.data, &s->owner, s->owner_host);
        srv_oplog_tail(&x->q);
    }
    srv_oplog_head(&x->q, x->epoch, 'M');
    srv_oplog_body_mount(&x->q.data, s);
    srv_oplog_tail(&x->q);
    if (s->status == POOL_SEG_GRACEFULLY_UNMOUNTING) {
        int64_t left = s->grace_until - srv_mc_now();
        srv_oplog_head(&x->q, x->epoch, 'G');
        srv_oplog_esc_str(&x->q.data, s->name);
        cm_buf_appendf(&x->q.data, " %" PRId64, left > 0 ? left : 0);
        srv_oplog_tail(&x->q);
    }
}

/* Appends a P entry for every readable object of p to x. */
static void srv_oplog_compact_objects(struct pool *p, struct srv_oplog_compact_ctx *x) {
    struct srv_oplog_keys *ks = srv_oplog_collect(p, NULL);
    size_t off = 0;
    for (size_t i = 0; i < ks->n; i++) {
        struct pool_object_info info;
        const char *key = ks->data.data + off;
        uint32_t complete = srv_oplog_readable(p, key, ks->len[i], &info);
        off += ks->len[i];
        if (!complete)
            continue;
        srv_oplog_head(&x->q, x->epoch, 'P');
        srv_oplog_body_put(&x->q.data, key, ks->len[i], &info, complete);
        srv_oplog_tail(&x->q);
    }
    cm_buf_fini(&ks->data);
    cm_free(ks->len);
    cm_free(ks);
}

int srv_oplog_compact(struct pool *p, uint64_t epoch, uint64_t replayed, uint64_t *kept, char *err,
                      size_t errlen) {
    *kept = replayed;
    if (!srv_oplog.enabled || !srv_oplog.store->compact || replayed < SRV_OPLOG_COMPACT_MIN ||
        pool_readable_count(p) * 2 > replayed) /* cannot be worth it: skip building it */
        return 0;
    struct srv_oplog_compact_ctx x = {.epoch = epoch};
    cm_buf_init(&x.q.data);
    uint64_t seq0 = atomic_fetch_add(&srv_oplog.next_seq, 1); /* leave one number out */
    pool_segment_foreach(p, srv_oplog_compact_seg, &x);
    srv_oplog_compact_objects(p, &x);
    int rc = 0, written = 0;
    if (x.q.n * 2 <= replayed) { /* worth it: at most half as long */
        const char **v = cm_malloc((x.q.n ? x.q.n : 1) * sizeof(char *));
        for (size_t i = 0; i < x.q.n; i++)
            v[i] = x.q.data.data + x.q.off[i];
        void *c = srv_oplog.store->connect(err, errlen);
        rc = c ? srv_oplog.store->compact(c, epoch, v, x.q.len, x.q.n, err, errlen) : -1;
        srv_oplog.store->disconnect(c);
        cm_free(v);
        if (rc == 0) {
            *kept = x.q.n;
            written = 1;
            pthread_mutex_lock(&srv_oplog.mu);
            srv_oplog.st.compactions++;
            srv_oplog.st.compacted = x.q.n;
            srv_oplog.st.trimmed_to = 0;
            pthread_mutex_unlock(&srv_oplog.mu);
        }
    }
    if (!written)
        atomic_store(&srv_oplog.next_seq, seq0); /* not written: its numbers are free again */
    srv_oplog_batch_fini(&x.q);
    cm_free(x.owners);
    return rc;
}
