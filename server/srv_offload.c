/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded segment's SSD tier: offload-on-evict, read-back, restart. See srv_offload.h. */
#include "common/fmacros.h"

#include "server/srv_offload.h"

#include "server/srv_client.h"
#include "server/srv_db.h"
#include "server/srv_defer.h"
#include "server/srv_server.h"

#include "common/cm_atomic.h"
#include "common/cm_buf.h"
#include "common/cm_errno.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "redis-compat/resp_write.h"
#include "storage/sto.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Disk key: one tag byte, the generation (4 bytes big-endian), the key. */
#define SRV_OFF_TAG_VALUE  'v'
#define SRV_OFF_TAG_EXPIRE 't'
#define SRV_OFF_HDR        5
#define SRV_OFF_KEY_MAX    (STO_KEY_MAX - SRV_OFF_HDR)

#define SRV_OFF_SCRATCH      8          /* scratch copies per thread */
#define SRV_OFF_SCRATCH_KEEP (1u << 20) /* a larger scratch buffer is freed once reused */
#define SRV_OFF_LOG_EVERY_MS 10000      /* failures are logged at most this often */

static struct sto *srv_off_store;
static _Atomic int srv_off_stopping;
static _Atomic uint32_t srv_off_gen;

/* Counters (INFO offload, /metrics). */
static struct {
    _Atomic uint64_t keys, bytes; /* gauges: records whose value is on disk */
    _Atomic uint64_t writes, write_bytes, write_failures;
    _Atomic uint64_t reads, read_bytes, read_failures;
    _Atomic uint64_t promotions, buffered_reads, removes, recovered;
    _Atomic uint64_t last_log_ms;
} srv_off;

int srv_offload_enabled(void) {
    return srv_off_store != NULL;
}

uint64_t srv_offload_keys(void) {
    return cm_atomic_load_relaxed(&srv_off.keys);
}

/* Builds the disk key of (tag, gen, key) into dk (STO_KEY_MAX bytes); returns its length. */
static size_t srv_off_dkey(char *dk, char tag, uint32_t gen, const char *key, size_t klen) {
    dk[0] = tag;
    dk[1] = (char)(gen >> 24);
    dk[2] = (char)(gen >> 16);
    dk[3] = (char)(gen >> 8);
    dk[4] = (char)gen;
    memcpy(dk + SRV_OFF_HDR, key, klen);
    return SRV_OFF_HDR + klen;
}

/* Logs a failure, at most once per SRV_OFF_LOG_EVERY_MS (the counters keep the full count). */
static void srv_off_log_failure(const char *what, const struct srv_obj *o, int rc) {
    uint64_t now = cm_mono_ms();
    uint64_t last = cm_atomic_load_relaxed(&srv_off.last_log_ms);
    if (last && now - last < SRV_OFF_LOG_EVERY_MS)
        return;
    if (!cm_atomic_cas(&srv_off.last_log_ms, &last, now))
        return;
    cm_log(CM_LOG_WARNING, "offload", "%s of key '%.*s' (%u bytes) failed: %s%s", what,
           (int)(o->klen > 64 ? 64 : o->klen), o->key, o->vlen, cm_strerror(rc),
           strcmp(what, "offload") == 0 ? "; the value is evicted (dropped) instead" : "");
}

/* Stores o's expiry (when it has one) under gen. Returns 0 or a negative error. */
static int srv_off_put_expire(const struct srv_obj *o, const char *key, size_t klen, uint32_t gen) {
    int64_t exp = cm_atomic_load_relaxed(&o->expire_ms);
    char dk[STO_KEY_MAX];
    size_t dl = srv_off_dkey(dk, SRV_OFF_TAG_EXPIRE, gen, key, klen);
    if (!exp) {
        sto_remove(srv_off_store, dk, dl);
        return 0;
    }
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)exp >> (8 * i));
    return sto_put_buf(srv_off_store, dk, dl, b, sizeof(b));
}

/* A fresh generation whose value key for key is not in use. */
static uint32_t srv_off_new_gen(const char *key, size_t klen) {
    char dk[STO_KEY_MAX];
    for (;;) {
        uint32_t gen = cm_atomic_add_relaxed(&srv_off_gen, 1u) + 1u;
        size_t dl = srv_off_dkey(dk, SRV_OFF_TAG_VALUE, gen, key, klen);
        if (gen != 0 && !sto_exists(srv_off_store, dk, dl))
            return gen;
    }
}

/* Stores val (vlen bytes) and o's expiry for key under a new generation. */
static int srv_off_store_value(const struct srv_obj *o, const char *key, size_t klen,
                               const void *val, uint32_t *gen) {
    if (klen > SRV_OFF_KEY_MAX)
        return -ENAMETOOLONG;
    uint32_t g = srv_off_new_gen(key, klen);
    char dk[STO_KEY_MAX];
    size_t dl = srv_off_dkey(dk, SRV_OFF_TAG_VALUE, g, key, klen);
    int rc = sto_put_buf(srv_off_store, dk, dl, val, o->vlen);
    if (rc == 0) {
        rc = srv_off_put_expire(o, key, klen, g);
        if (rc < 0)
            sto_remove(srv_off_store, dk, dl);
    }
    *gen = g;
    return rc;
}

int srv_offload_write(const struct srv_obj *o, const void *val, uint32_t *gen) {
    int rc = srv_off_store_value(o, o->key, o->klen, val, gen);
    if (rc < 0) {
        cm_atomic_add_relaxed(&srv_off.write_failures, 1);
        srv_off_log_failure("offload", o, rc);
        return rc;
    }
    cm_atomic_add_relaxed(&srv_off.writes, 1);
    cm_atomic_add_relaxed(&srv_off.write_bytes, o->vlen);
    cm_atomic_add_relaxed(&srv_off.keys, 1);
    cm_atomic_add_relaxed(&srv_off.bytes, o->vlen);
    return 0;
}

/* Counts (and logs) the result rc of reading offloaded o back; returns rc. */
static int srv_off_read_result(const struct srv_obj *o, ssize_t n) {
    int rc = n < 0 ? (int)n : (n == (ssize_t)o->vlen ? 0 : -EIO);
    if (rc < 0) {
        cm_atomic_add_relaxed(&srv_off.read_failures, 1);
        srv_off_log_failure("read-back", o, rc);
        return rc;
    }
    cm_atomic_add_relaxed(&srv_off.reads, 1);
    cm_atomic_add_relaxed(&srv_off.read_bytes, o->vlen);
    return 0;
}

int srv_offload_read(const struct srv_obj *o, void *buf) {
    char dk[STO_KEY_MAX];
    ssize_t n = -CM_EOBJECT_NOT_FOUND;
    if (!srv_off_store)
        n = -ENODEV;
    else if (o->klen <= SRV_OFF_KEY_MAX && o->handle != 0)
        n = sto_get(srv_off_store, dk,
                    srv_off_dkey(dk, SRV_OFF_TAG_VALUE, o->handle, o->key, o->klen), buf, o->vlen);
    return srv_off_read_result(o, n);
}

void srv_offload_read_many(struct srv_obj *const *o, char *const *bufs, int *rc, unsigned n) {
    struct sto_get_item items[n > 0 ? n : 1];
    ssize_t res[n > 0 ? n : 1];
    unsigned idx[n > 0 ? n : 1], m = 0;
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += SRV_OFF_HDR + o[i]->klen;
    char *dks = cm_malloc(total ? total : 1), *p = dks;
    for (unsigned i = 0; i < n; i++) {
        res[i] = srv_off_store ? -CM_EOBJECT_NOT_FOUND : -ENODEV;
        if (!srv_off_store || o[i]->klen > SRV_OFF_KEY_MAX || o[i]->handle == 0)
            continue;
        size_t dl = srv_off_dkey(p, SRV_OFF_TAG_VALUE, o[i]->handle, o[i]->key, o[i]->klen);
        items[m] = (struct sto_get_item){p, dl, bufs[i], o[i]->vlen, 0};
        idx[m++] = i;
        p += dl;
    }
    if (m > 0)
        sto_batch_get(srv_off_store, items, m);
    for (unsigned k = 0; k < m; k++)
        res[idx[k]] = items[k].result;
    for (unsigned i = 0; i < n; i++)
        rc[i] = srv_off_read_result(o[i], res[i]);
    cm_free(dks);
}

/* Removes the disk objects of (gen, key). */
static void srv_off_remove(uint32_t gen, const char *key, size_t klen) {
    char dk[STO_KEY_MAX];
    size_t dl = srv_off_dkey(dk, SRV_OFF_TAG_VALUE, gen, key, klen);
    sto_remove(srv_off_store, dk, dl);
    dl = srv_off_dkey(dk, SRV_OFF_TAG_EXPIRE, gen, key, klen);
    if (sto_exists(srv_off_store, dk, dl))
        sto_remove(srv_off_store, dk, dl);
}

void srv_offload_forget(const struct srv_obj *o, int promoted) {
    if (!srv_off_store)
        return;
    cm_atomic_sub_relaxed(&srv_off.keys, 1);
    cm_atomic_sub_relaxed(&srv_off.bytes, o->vlen);
    if (o->klen > SRV_OFF_KEY_MAX || o->handle == 0)
        return; /* nothing was stored (a failed RENAME) */
    if (!promoted && cm_atomic_load_relaxed(&srv_off_stopping))
        return; /* shutdown: the copy stays for the next start */
    srv_off_remove(o->handle, o->key, o->klen);
    cm_atomic_add_relaxed(promoted ? &srv_off.promotions : &srv_off.removes, 1);
}

uint32_t srv_offload_move(const struct srv_obj *o, const struct srv_obj *n) {
    char *tmp = cm_malloc(o->vlen ? o->vlen : 1);
    int rc = srv_offload_read(o, tmp);
    if (o->klen <= SRV_OFF_KEY_MAX)
        srv_off_remove(o->handle, o->key, o->klen);
    uint32_t gen = 0;
    if (rc == 0) {
        rc = srv_off_store_value(n, n->key, n->klen, tmp, &gen);
        if (rc < 0) {
            cm_atomic_add_relaxed(&srv_off.write_failures, 1);
            srv_off_log_failure("rename", n, rc);
        }
    }
    cm_free(tmp);
    return gen; /* 0 when nothing was stored: reading n then fails */
}

void srv_offload_set_expire(const struct srv_obj *o) {
    if (!srv_off_store || o->klen > SRV_OFF_KEY_MAX || o->handle == 0)
        return;
    int rc = srv_off_put_expire(o, o->key, o->klen, o->handle);
    if (rc < 0) {
        cm_atomic_add_relaxed(&srv_off.write_failures, 1);
        srv_off_log_failure("expiry update", o, rc);
    }
}

/* ---------------------------------------------------------------- scratch copies */

struct srv_off_scratch {
    struct {
        char *buf;
        size_t cap;
    } slot[SRV_OFF_SCRATCH];
    unsigned next;
};

static pthread_key_t srv_off_scratch_key;
static pthread_once_t srv_off_scratch_once = PTHREAD_ONCE_INIT;

static void srv_off_scratch_free(void *p) {
    struct srv_off_scratch *s = p;
    for (int i = 0; i < SRV_OFF_SCRATCH; i++)
        cm_free(s->slot[i].buf);
    cm_free(s);
}

static void srv_off_scratch_init(void) {
    pthread_key_create(&srv_off_scratch_key, srv_off_scratch_free);
}

char *srv_offload_scratch(const struct srv_obj *o) {
    pthread_once(&srv_off_scratch_once, srv_off_scratch_init);
    struct srv_off_scratch *s = pthread_getspecific(srv_off_scratch_key);
    if (!s) {
        s = cm_calloc(1, sizeof(*s));
        pthread_setspecific(srv_off_scratch_key, s);
    }
    unsigned i = s->next++ % SRV_OFF_SCRATCH;
    size_t need = (size_t)o->vlen + 1;
    if (s->slot[i].cap < need || s->slot[i].cap > SRV_OFF_SCRATCH_KEEP) {
        cm_free(s->slot[i].buf);
        s->slot[i].buf = cm_malloc(need);
        s->slot[i].cap = need;
    }
    if (srv_offload_read(o, s->slot[i].buf) < 0)
        memset(s->slot[i].buf, 0, need);
    s->slot[i].buf[o->vlen] = '\0';
    return s->slot[i].buf;
}

/* ---------------------------------------------------------------- GET */

int srv_offload_reply(struct srv_client *c, struct srv_obj *o) {
    int rc = srv_obj_promote(o);
    if (rc == 0)
        return 0;
    if (rc == -ENOSPC) {
        char *tmp = cm_malloc(o->vlen ? o->vlen : 1);
        rc = srv_offload_read(o, tmp);
        if (rc == 0) {
            resp_add_bulk(&c->out, tmp, o->vlen);
            cm_atomic_add_relaxed(&srv_off.buffered_reads, 1);
        }
        cm_free(tmp);
    }
    if (rc < 0)
        resp_add_null(&c->out, c->proto);
    return 1;
}

/* ---------------------------------------------------------------- GET off the loop */

/* A GET whose read-back runs on the deferred-work pool (srv_defer.h). */
struct srv_off_get {
    struct srv_defer d;
    struct srv_obj *o; /* pinned: its record, generation and disk copy stay while we read */
    uint32_t gen;      /* o's disk generation when the GET ran */
    int rc;            /* the read's result */
    char *buf;         /* o->vlen bytes read */
};

/*
 * Pool thread: the disk reads of the GETs queued together, submitted at once. Each o is pinned,
 * so its key, length and generation do not change.
 */
static void srv_off_get_work(struct srv_defer **ds, unsigned n) {
    struct srv_obj *objs[SRV_DEFER_BATCH] = {0};
    char *bufs[SRV_DEFER_BATCH] = {0};
    int rcs[SRV_DEFER_BATCH];
    for (unsigned i = 0; i < n; i++) {
        struct srv_off_get *g = (struct srv_off_get *)(void *)ds[i];
        g->buf = cm_malloc(g->o->vlen ? g->o->vlen : 1);
        objs[i] = g->o;
        bufs[i] = g->buf;
    }
    srv_offload_read_many(objs, bufs, rcs, n);
    for (unsigned i = 0; i < n; i++)
        ((struct srv_off_get *)(void *)ds[i])->rc = rcs[i];
}

int srv_offload_after_read(struct srv_obj *o, uint32_t gen, const char *buf) {
    struct srv_db_ref r;
    srv_db_rdlock();
    srv_db_lock(&r, o->key, o->klen);
    int done = srv_db_peek(&r, srv_now_ms()) == o && srv_obj_offloaded(o) && o->handle == gen &&
               srv_obj_promote_buf(o, buf) == 0;
    srv_db_unlock(&r);
    srv_db_rdunlock();
    if (!done)
        cm_atomic_add_relaxed(&srv_off.buffered_reads, 1);
    return done;
}

/*
 * Loop thread: the reply. It is the value as of the GET (the read holds that record's disk
 * copy even if a DEL or SET replaced the key meanwhile), a null when the read failed, as
 * before; nothing when the client went away.
 */
static void srv_off_get_done(struct srv_defer *d, struct srv_client *c) {
    struct srv_off_get *g = (struct srv_off_get *)(void *)d;
    if (g->rc == 0)
        srv_offload_after_read(g->o, g->gen, g->buf);
    if (c && g->rc == 0)
        resp_add_bulk(&c->out, g->buf, g->o->vlen);
    else if (c)
        resp_add_null(&c->out, c->proto);
    srv_obj_unref(g->o); /* the last reference when the key was deleted meanwhile */
    cm_free(g->buf);
    cm_free(g);
}

int srv_offload_get_async(struct srv_client *c, struct srv_obj *o) {
    if (!srv_off_store || !srv_client_can_defer(c))
        return 0;
    struct srv_off_get *g = cm_calloc(1, sizeof(*g));
    if (srv_client_defer(c, &g->d, srv_off_get_done) < 0) {
        cm_free(g);
        return 0;
    }
    srv_obj_ref(o);
    g->o = o;
    g->gen = o->handle;
    srv_defer_submit_batch(&g->d, srv_off_get_work);
    return 1;
}

/* ---------------------------------------------------------------- restart */

/* One disk object seen by the restart scan. */
struct srv_off_found {
    char *dk;
    size_t dl;
    uint64_t size;
};

struct srv_off_scan {
    struct srv_off_found *v;
    size_t n, cap;
};

static void srv_off_scan_cb(const void *key, size_t klen, uint64_t size, void *arg) {
    struct srv_off_scan *sc = arg;
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? sc->cap * 2 : 1024;
        sc->v = cm_realloc(sc->v, sc->cap * sizeof(*sc->v));
    }
    sc->v[sc->n].dk = cm_malloc(klen);
    memcpy(sc->v[sc->n].dk, key, klen);
    sc->v[sc->n].dl = klen;
    sc->v[sc->n].size = size;
    sc->n++;
}

static uint32_t srv_off_gen_of(const char *dk) {
    const unsigned char *p = (const unsigned char *)dk + 1;
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads the expiry stored for value disk key f (0: none). */
static int64_t srv_off_stored_expire(const struct srv_off_found *f) {
    char dk[STO_KEY_MAX];
    memcpy(dk, f->dk, f->dl);
    dk[0] = SRV_OFF_TAG_EXPIRE;
    unsigned char b[8];
    if (sto_get(srv_off_store, dk, f->dl, b, sizeof(b)) != (ssize_t)sizeof(b))
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return (int64_t)v;
}

/*
 * Registers the value found as f as an offloaded key, unless it expired, is malformed or its
 * key is already registered (a crash between two writes of one key: the newer generation
 * wins). Returns 1 when registered.
 */
static int srv_off_adopt(const struct srv_off_found *f, int64_t now) {
    if (f->dl <= SRV_OFF_HDR || f->size > UINT32_MAX)
        return 0;
    uint32_t gen = srv_off_gen_of(f->dk);
    const char *key = f->dk + SRV_OFF_HDR;
    size_t klen = f->dl - SRV_OFF_HDR;
    int64_t exp = srv_off_stored_expire(f);
    if (exp && exp <= now)
        return 0;
    struct srv_db_ref r;
    srv_db_lock(&r, key, klen);
    struct srv_obj *old = srv_db_peek(&r, now);
    int take = !old || (srv_obj_offloaded(old) && old->handle < gen);
    if (take) {
        struct srv_obj *o = srv_obj_create_offloaded(key, klen, (uint32_t)f->size, gen);
        cm_atomic_store_relaxed(&o->expire_ms, exp);
        cm_atomic_add_relaxed(&srv_off.keys, 1);
        cm_atomic_add_relaxed(&srv_off.bytes, o->vlen);
        if (old)
            srv_db_replace(&r, old, o); /* frees old and its disk copy */
        else
            srv_db_insert(&r, o);
    }
    srv_db_unlock(&r);
    return take;
}

/*
 * Re-registers what the store holds, removing what cannot be served. Every removal of the
 * last run (DEL, overwrite, expiry, promotion) finished before its command replied, since
 * sto_remove() returns once the removal is on disk, so after a crash too the store holds
 * exactly the values that were offloaded at the end, less what no client saw acknowledged.
 */
static void srv_off_restore(void) {
    struct srv_off_scan sc = {0};
    uint64_t cursor = 0;
    do
        sto_scan(srv_off_store, &cursor, srv_off_scan_cb, &sc);
    while (cursor != 0);
    uint32_t maxgen = 0;
    for (size_t i = 0; i < sc.n; i++)
        if (sc.v[i].dl >= SRV_OFF_HDR && srv_off_gen_of(sc.v[i].dk) > maxgen)
            maxgen = srv_off_gen_of(sc.v[i].dk);
    cm_atomic_store_relaxed(&srv_off_gen, maxgen);
    int64_t now = srv_now_ms();
    uint64_t adopted = 0, dropped = 0;
    for (size_t i = 0; i < sc.n; i++) {
        struct srv_off_found *f = &sc.v[i];
        if (f->dl > 0 && f->dk[0] == SRV_OFF_TAG_VALUE && srv_off_adopt(f, now)) {
            adopted++;
        } else if (f->dl == 0 || f->dk[0] != SRV_OFF_TAG_EXPIRE) {
            sto_remove(srv_off_store, f->dk, f->dl);
            if (f->dl <= SRV_OFF_HDR || f->dk[0] != SRV_OFF_TAG_VALUE)
                continue;
            f->dk[0] = SRV_OFF_TAG_EXPIRE;
            sto_remove(srv_off_store, f->dk, f->dl);
            dropped++;
        }
    }
    /* Expiry objects whose value is gone (removed above, or torn at a crash). */
    for (size_t i = 0; i < sc.n; i++) {
        struct srv_off_found *f = &sc.v[i];
        if (f->dl > SRV_OFF_HDR && f->dk[0] == SRV_OFF_TAG_EXPIRE) {
            f->dk[0] = SRV_OFF_TAG_VALUE;
            if (!sto_exists(srv_off_store, f->dk, f->dl)) {
                f->dk[0] = SRV_OFF_TAG_EXPIRE;
                sto_remove(srv_off_store, f->dk, f->dl);
            }
        }
        cm_free(f->dk);
    }
    cm_free(sc.v);
    cm_atomic_store_relaxed(&srv_off.recovered, adopted);
    cm_log(CM_LOG_NOTICE, "offload",
           "SSD tier at %s: %llu keys restored, %llu expired or unusable objects removed",
           srv_cfg.ssd_offload_path, (unsigned long long)adopted, (unsigned long long)dropped);
}

int srv_offload_start(char *err, size_t errlen) {
    if (!srv_cfg.enable_offload)
        return 0;
    if (!srv_cfg.ssd_offload_path || !srv_cfg.ssd_offload_path[0]) {
        cm_log(CM_LOG_NOTICE, "offload",
               "enable_offload without ssd_offload_path: clients may mount local-disk segments; "
               "the embedded segment has no SSD tier");
        return 0;
    }
    struct sto_config cfg;
    char serr[STO_ERR_LEN];
    if (sto_config_from_env(&cfg, serr, sizeof(serr)) < 0) {
        snprintf(err, errlen, "%s", serr);
        return -1;
    }
    /* The keyspace decides what leaves the disk: the store must never evict on its own. */
    cfg.bucket_evict = STO_EVICT_NONE;
    cfg.offset_evict = STO_EVICT_NONE;
    cfg.fpk_eviction = 0;
    int rc = sto_open(&cfg, srv_cfg.ssd_offload_path, &srv_off_store, serr, sizeof(serr));
    if (rc < 0) {
        snprintf(err, errlen, "ssd_offload_path %s: %s", srv_cfg.ssd_offload_path, serr);
        return -1;
    }
    srv_off_restore();
    return 0;
}

void srv_offload_stop(void) {
    cm_atomic_store_relaxed(&srv_off_stopping, 1);
}

void srv_offload_close(void) {
    if (!srv_off_store)
        return;
    sto_close(srv_off_store);
    srv_off_store = NULL;
}

/* ---------------------------------------------------------------- INFO and /metrics */

void srv_offload_info(struct cm_buf *b) {
    cm_buf_appendf(b, "# Offload\r\noffload_enabled:%d\r\n", srv_off_store != NULL);
    if (!srv_off_store) {
        cm_buf_appendf(b, "\r\n");
        return;
    }
    struct sto_stats st;
    sto_stats(srv_off_store, &st);
#define U(x) (unsigned long long)cm_atomic_load_relaxed(&srv_off.x)
    cm_buf_appendf(b,
                   "offload_path:%s\r\noffload_backend:%s\r\noffload_io:%s\r\n"
                   "offload_direct_io:%d\r\n"
                   "offloaded_keys:%llu\r\noffloaded_bytes:%llu\r\n"
                   "offload_writes:%llu\r\noffload_write_bytes:%llu\r\n"
                   "offload_write_failures:%llu\r\noffload_reads:%llu\r\n"
                   "offload_read_bytes:%llu\r\noffload_read_failures:%llu\r\n"
                   "offload_promotions:%llu\r\noffload_buffered_reads:%llu\r\n"
                   "offload_removes:%llu\r\noffload_recovered_keys:%llu\r\n"
                   "offload_disk_objects:%llu\r\noffload_disk_used_bytes:%llu\r\n"
                   "offload_disk_quota_bytes:%llu\r\noffload_disk_corrupt:%llu\r\n\r\n",
                   srv_cfg.ssd_offload_path, st.backend, st.io, st.direct_io, U(keys), U(bytes),
                   U(writes), U(write_bytes), U(write_failures), U(reads), U(read_bytes),
                   U(read_failures), U(promotions), U(buffered_reads), U(removes), U(recovered),
                   (unsigned long long)st.keys, (unsigned long long)st.disk_bytes,
                   (unsigned long long)st.quota_bytes, (unsigned long long)st.corrupt);
#undef U
}

static void srv_off_metric(struct cm_buf *b, const char *name, const char *type, const char *help,
                           uint64_t v) {
    cm_buf_appendf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
                   (unsigned long long)v);
}

void srv_offload_metrics(struct cm_buf *b) {
    struct sto_stats st = {0};
    if (srv_off_store)
        sto_stats(srv_off_store, &st);
#define L(x) cm_atomic_load_relaxed(&srv_off.x)
    srv_off_metric(b, "crescent_offload_keys", "gauge", "Keys whose value is on the SSD tier.",
                   L(keys));
    srv_off_metric(b, "crescent_offload_bytes", "gauge", "Value bytes on the SSD tier.", L(bytes));
    srv_off_metric(b, "crescent_offload_writes_total", "counter",
                   "Values written to the SSD tier at eviction.", L(writes));
    srv_off_metric(b, "crescent_offload_write_bytes_total", "counter",
                   "Value bytes written to the SSD tier.", L(write_bytes));
    srv_off_metric(b, "crescent_offload_write_failures_total", "counter",
                   "Evicted values the SSD tier refused (quota, disk full, I/O): dropped.",
                   L(write_failures));
    srv_off_metric(b, "crescent_offload_reads_total", "counter",
                   "Values read back from the SSD tier.", L(reads));
    srv_off_metric(b, "crescent_offload_read_bytes_total", "counter",
                   "Value bytes read back from the SSD tier.", L(read_bytes));
    srv_off_metric(b, "crescent_offload_read_failures_total", "counter",
                   "Read-backs that failed (missing, corrupt, I/O).", L(read_failures));
    srv_off_metric(b, "crescent_offload_promotions_total", "counter",
                   "Read-backs that moved the value into memory again.", L(promotions));
    srv_off_metric(b, "crescent_offload_buffered_reads_total", "counter",
                   "GETs served from a temporary buffer (no room in memory).", L(buffered_reads));
    srv_off_metric(b, "crescent_offload_removes_total", "counter",
                   "Disk copies removed by DEL, overwrite, expiry or FLUSHALL.", L(removes));
    srv_off_metric(b, "crescent_offload_disk_used_bytes", "gauge",
                   "Bytes the SSD tier occupies on disk.", st.disk_bytes);
    srv_off_metric(b, "crescent_offload_disk_quota_bytes", "gauge", "The SSD tier's byte quota.",
                   st.quota_bytes);
#undef L
}
