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
#include "common/cm_hash.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_time.h"
#include "common/cm_util.h"
#include "redis-compat/resp_write.h"
#include "storage/sto.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    _Atomic uint64_t keys, bytes; /* gauges: records whose value is on disk (or queued for it) */
    _Atomic uint64_t writes, write_bytes, write_failures;
    _Atomic uint64_t reads, read_bytes, read_failures;
    _Atomic uint64_t promotions, buffered_reads, removes, recovered;
    _Atomic uint64_t queued_writes, sync_writes, cancelled_writes, queue_reads;
    _Atomic uint64_t queue_keys, queue_bytes; /* gauges: values in the write queue's table */
    _Atomic uint64_t waited_writes;           /* changes that waited for a write in progress */
    _Atomic uint64_t last_log_ms;
} srv_off;

static int srv_wq_push(const struct srv_obj *o, const void *val, uint32_t gen);
static int srv_wq_copy(const struct srv_obj *o, void *buf);
static int srv_wq_queued(const struct srv_obj *o);
static int srv_wq_settle(uint32_t gen, const char *key, size_t klen, int cancel, int64_t exp);

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
static void srv_off_log_key(const char *what, const char *key, size_t klen, uint32_t vlen, int rc) {
    uint64_t now = cm_mono_ms();
    uint64_t last = cm_atomic_load_relaxed(&srv_off.last_log_ms);
    if (last && now - last < SRV_OFF_LOG_EVERY_MS)
        return;
    if (!cm_atomic_cas(&srv_off.last_log_ms, &last, now))
        return;
    cm_log(CM_LOG_WARNING, "offload", "%s of key '%.*s' (%u bytes) failed: %s%s", what,
           (int)(klen > 64 ? 64 : klen), key, vlen, cm_strerror(rc),
           strncmp(what, "offload", 7) == 0 ? "; the value is evicted (dropped) instead" : "");
}

static void srv_off_log_failure(const char *what, const struct srv_obj *o, int rc) {
    srv_off_log_key(what, o->key, o->klen, o->vlen, rc);
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
    if (o->klen <= SRV_OFF_KEY_MAX) {
        uint32_t g = srv_off_new_gen(o->key, o->klen);
        if (srv_wq_push(o, val, g) == 0) {
            *gen = g;
            cm_atomic_add_relaxed(&srv_off.queued_writes, 1);
            cm_atomic_add_relaxed(&srv_off.keys, 1);
            cm_atomic_add_relaxed(&srv_off.bytes, o->vlen);
            return 0;
        }
    }
    int rc = srv_off_store_value(o, o->key, o->klen, val, gen);
    if (o->klen <= SRV_OFF_KEY_MAX)
        cm_atomic_add_relaxed(&srv_off.sync_writes, 1);
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
    if (srv_wq_copy(o, buf))
        return 0;
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
    int queued[n > 0 ? n : 1];
    for (unsigned i = 0; i < n; i++) {
        res[i] = srv_off_store ? -CM_EOBJECT_NOT_FOUND : -ENODEV;
        queued[i] = srv_wq_copy(o[i], bufs[i]);
        if (queued[i] || !srv_off_store || o[i]->klen > SRV_OFF_KEY_MAX || o[i]->handle == 0)
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
        rc[i] = queued[i] ? 0 : srv_off_read_result(o[i], res[i]);
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
    if (srv_wq_settle(o->handle, o->key, o->klen, 1, 0)) {
        if (promoted) /* its queued write is cancelled: nothing reached the disk */
            cm_atomic_add_relaxed(&srv_off.promotions, 1);
        return;
    }
    if (!promoted && cm_atomic_load_relaxed(&srv_off_stopping))
        return; /* shutdown: the copy stays for the next start */
    srv_off_remove(o->handle, o->key, o->klen);
    cm_atomic_add_relaxed(promoted ? &srv_off.promotions : &srv_off.removes, 1);
}

uint32_t srv_offload_move(const struct srv_obj *o, const struct srv_obj *n) {
    char *tmp = cm_malloc(o->vlen ? o->vlen : 1);
    int rc = srv_offload_read(o, tmp);
    if (o->klen <= SRV_OFF_KEY_MAX && !srv_wq_settle(o->handle, o->key, o->klen, 1, 0))
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
    if (srv_wq_settle(o->handle, o->key, o->klen, 0, cm_atomic_load_relaxed(&o->expire_ms)))
        return; /* still queued: written with the new expiry */
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
    if (!srv_off_store || !srv_client_can_defer(c) || srv_wq_queued(o))
        return 0; /* a queued value is copied from the queue at once (srv_offload_reply) */
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

/* ---------------------------------------------------------------- the write queue */

/*
 * DESIGN. Eviction copies the value into a heap buffer, frees its segment block and queues a
 * job; one writer thread takes up to SRV_WQ_BATCH jobs at a time and stores them with one
 * sto_batch_put (values and expiries), so the writes are in flight together and the loop never
 * waits for the disk. Until its write lands, a job is in a table keyed by (generation, key):
 * reads of the record copy from the job's buffer. A change of the key (free, promotion,
 * RENAME) cancels a queued job (the writer skips it; nothing reaches the disk) and waits for
 * one being written (then removes the disk copy as for any offloaded value); a TTL change of
 * a queued job updates the expiry it will write. A failed write drops the key as an eviction
 * without the tier would (srv_db_evict_unlink), if the record is still that job's. The queue
 * is bounded in bytes (CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES): a value that does not fit is
 * written synchronously by the evicting thread, as before (back-pressure).
 * Lock order: a shard lock, then srv_wq.mu; the writer holds neither across its I/O.
 */

#define SRV_WQ_DEFAULT_MAX (64ull << 20) /* default bound: a quarter of --memory, at most this */
#define SRV_WQ_BATCH       32            /* jobs the writer stores together */

/* Where a queued write is. */
enum srv_wq_state {
    SRV_WQ_QUEUED = 0, /* waiting for the writer: readable, cancellable */
    SRV_WQ_WRITING,    /* taken by the writer: a change of its key waits for it */
    SRV_WQ_FAILED,     /* the store refused it: its key is being dropped; still readable */
};

/* One evicted value on its way to the disk. */
struct srv_wq_job {
    struct cm_ht_node node;  /* table link (hash of generation and key) while linked */
    struct srv_wq_job *next; /* FIFO */
    char *val;               /* vlen bytes, NULL once released */
    int64_t expire_ms;       /* the expiry to store with it (0: none) */
    uint32_t gen, vlen;
    uint8_t state;     /* enum srv_wq_state */
    uint8_t cancelled; /* the key changed while queued: nothing is written */
    uint8_t linked;    /* in the table */
    int rc;            /* the write's result */
    size_t klen;
    char key[];
};

/* A table lookup key. */
struct srv_wq_probe {
    uint32_t gen;
    const char *key;
    size_t klen;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work; /* the writer: something queued, or stopping */
    pthread_cond_t done; /* waiters: a batch finished */
    struct cm_ht table;  /* linked jobs */
    struct srv_wq_job *head, *tail;
    _Atomic uint64_t reserved; /* value bytes of jobs not yet released */
    uint64_t limit;            /* bytes; 0: synchronous writes only */
    unsigned busy;             /* jobs the writer took and has not finished */
    unsigned delay_ms;         /* CRESCENT_TEST_OFFLOAD_WRITE_DELAY_MS: tests widen the window */
    unsigned stall_ms;         /* CRESCENT_TEST_OFFLOAD_WRITE_STALL_MS: tests hold a taken batch */
    int started, stopping;
    pthread_t thread;
} srv_wq = {.mu = PTHREAD_MUTEX_INITIALIZER,
            .work = PTHREAD_COND_INITIALIZER,
            .done = PTHREAD_COND_INITIALIZER};

static uint64_t srv_wq_hash(uint32_t gen, const char *key, size_t klen) {
    return cm_hash64(key, klen, 0x9e3779b97f4a7c15ull ^ gen);
}

static int srv_wq_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    (void)klen;
    const struct srv_wq_job *j = (const struct srv_wq_job *)n;
    const struct srv_wq_probe *p = key;
    return j->gen == p->gen && j->klen == p->klen && memcmp(j->key, p->key, p->klen) == 0;
}

/* The linked job of (gen, key), or NULL. srv_wq.mu held. */
static struct srv_wq_job *srv_wq_find(uint32_t gen, const char *key, size_t klen) {
    struct srv_wq_probe p = {gen, key, klen};
    return (struct srv_wq_job *)cm_ht_find(&srv_wq.table, srv_wq_hash(gen, key, klen), &p, 0,
                                           srv_wq_eq);
}

/* Unlinks j and frees its value (idempotent). srv_wq.mu held. The caller frees j itself. */
static void srv_wq_release(struct srv_wq_job *j) {
    if (j->linked) {
        cm_ht_remove(&srv_wq.table, &j->node);
        j->linked = 0;
        cm_atomic_sub_relaxed(&srv_off.queue_keys, 1);
        cm_atomic_sub_relaxed(&srv_off.queue_bytes, j->vlen);
    }
    if (j->val) {
        cm_free(j->val);
        j->val = NULL;
        cm_atomic_sub_relaxed(&srv_wq.reserved, j->vlen);
    }
}

/*
 * Queues a copy of o's value (val) under generation gen. Returns 0, or -EAGAIN when the queue
 * is off, stopping or full (the caller writes synchronously). Shard lock held.
 */
static int srv_wq_push(const struct srv_obj *o, const void *val, uint32_t gen) {
    if (!srv_wq.started || cm_atomic_load_relaxed(&srv_off_stopping))
        return -EAGAIN;
    uint64_t before = cm_atomic_add_relaxed(&srv_wq.reserved, o->vlen);
    if (before + o->vlen > srv_wq.limit) {
        cm_atomic_sub_relaxed(&srv_wq.reserved, o->vlen);
        return -EAGAIN;
    }
    struct srv_wq_job *j = cm_calloc(1, sizeof(*j) + o->klen);
    j->val = cm_malloc(o->vlen ? o->vlen : 1);
    memcpy(j->val, val, o->vlen);
    j->gen = gen;
    j->vlen = o->vlen;
    j->klen = o->klen;
    memcpy(j->key, o->key, o->klen);
    j->expire_ms = cm_atomic_load_relaxed(&o->expire_ms);
    j->node.hash = srv_wq_hash(gen, j->key, j->klen);
    pthread_mutex_lock(&srv_wq.mu);
    cm_ht_insert(&srv_wq.table, &j->node);
    j->linked = 1;
    cm_atomic_add_relaxed(&srv_off.queue_keys, 1);
    cm_atomic_add_relaxed(&srv_off.queue_bytes, j->vlen);
    if (srv_wq.tail)
        srv_wq.tail->next = j;
    else
        srv_wq.head = j;
    srv_wq.tail = j;
    pthread_cond_signal(&srv_wq.work);
    pthread_mutex_unlock(&srv_wq.mu);
    return 0;
}

/* Copies o's value from its queued write into buf. Returns 1 when it had one, else 0. */
static int srv_wq_copy(const struct srv_obj *o, void *buf) {
    if (cm_atomic_load_relaxed(&srv_off.queue_keys) == 0 || o->klen > SRV_OFF_KEY_MAX)
        return 0;
    pthread_mutex_lock(&srv_wq.mu);
    struct srv_wq_job *j = srv_wq_find(o->handle, o->key, o->klen);
    int found = j && j->val && j->vlen == o->vlen;
    if (found)
        memcpy(buf, j->val, o->vlen);
    pthread_mutex_unlock(&srv_wq.mu);
    if (found)
        cm_atomic_add_relaxed(&srv_off.queue_reads, 1);
    return found;
}

/* 1 when o's value is in the write queue now. */
static int srv_wq_queued(const struct srv_obj *o) {
    if (cm_atomic_load_relaxed(&srv_off.queue_keys) == 0 || o->klen > SRV_OFF_KEY_MAX)
        return 0;
    pthread_mutex_lock(&srv_wq.mu);
    int found = srv_wq_find(o->handle, o->key, o->klen) != NULL;
    pthread_mutex_unlock(&srv_wq.mu);
    return found;
}

/*
 * Before a change of the disk copy of (gen, key): cancel = 1 (the record is freed, promoted
 * or renamed) cancels a queued write; cancel = 0 (a TTL change) gives it expiry exp. A write
 * in progress is waited for first. Returns 1 when the queue took care of it (no disk copy
 * exists or will be made: the caller does no I/O), 0 when the value is on disk.
 */
static int srv_wq_settle(uint32_t gen, const char *key, size_t klen, int cancel, int64_t exp) {
    if (cm_atomic_load_relaxed(&srv_off.queue_keys) == 0)
        return 0;
    pthread_mutex_lock(&srv_wq.mu);
    struct srv_wq_job *j;
    int waited = 0;
    while ((j = srv_wq_find(gen, key, klen)) && j->state == SRV_WQ_WRITING) {
        waited = 1;
        pthread_cond_wait(&srv_wq.done, &srv_wq.mu);
    }
    if (waited)
        cm_atomic_add_relaxed(&srv_off.waited_writes, 1);
    if (j && cancel) {
        if (j->state == SRV_WQ_QUEUED)
            cm_atomic_add_relaxed(&srv_off.cancelled_writes, 1);
        j->cancelled = 1;
        srv_wq_release(j); /* the writer frees the rest */
    } else if (j) {
        j->expire_ms = exp;
    }
    pthread_mutex_unlock(&srv_wq.mu);
    return j != NULL;
}

/* Builds j's 8-byte expiry record into b. */
static void srv_wq_expire_bytes(const struct srv_wq_job *j, unsigned char *b) {
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)j->expire_ms >> (8 * i));
}

/*
 * Writer thread: stores jobs[0..n) (values and expiries) in one batch; each job's rc is 0 or
 * the first error, with nothing of a failed job left on disk. Reads of the jobs' values (under
 * srv_wq.mu) may run meanwhile: the buffers are only read here.
 */
static void srv_wq_write(struct srv_wq_job **jobs, unsigned n) {
    struct sto_put_item items[2 * SRV_WQ_BATCH];
    unsigned char exb[SRV_WQ_BATCH][8];
    int vi[SRV_WQ_BATCH], ei[SRV_WQ_BATCH];
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += 2 * (SRV_OFF_HDR + jobs[i]->klen);
    char *dks = cm_malloc(total ? total : 1), *p = dks;
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
        struct srv_wq_job *j = jobs[i];
        size_t dl = srv_off_dkey(p, SRV_OFF_TAG_VALUE, j->gen, j->key, j->klen);
        vi[i] = (int)m;
        items[m++] = (struct sto_put_item){p, dl, j->val, j->vlen, 0};
        p += dl;
        ei[i] = -1;
        if (j->expire_ms) {
            srv_wq_expire_bytes(j, exb[i]);
            dl = srv_off_dkey(p, SRV_OFF_TAG_EXPIRE, j->gen, j->key, j->klen);
            ei[i] = (int)m;
            items[m++] = (struct sto_put_item){p, dl, exb[i], 8, 0};
            p += dl;
        }
    }
    sto_batch_put(srv_off_store, items, m);
    for (unsigned i = 0; i < n; i++) {
        int vrc = items[vi[i]].result, erc = ei[i] >= 0 ? items[ei[i]].result : 0;
        if (vrc == 0 && erc < 0)
            sto_remove(srv_off_store, items[vi[i]].key, items[vi[i]].klen);
        if (vrc < 0 && ei[i] >= 0 && erc == 0)
            sto_remove(srv_off_store, items[ei[i]].key, items[ei[i]].klen);
        jobs[i]->rc = vrc < 0 ? vrc : erc;
    }
    cm_free(dks);
}

/*
 * Writer thread, no lock held: j's write failed, so its key is dropped as an eviction without
 * the tier drops it (counted in evicted_keys), when the key still has j's record.
 */
static void srv_wq_drop(const struct srv_wq_job *j) {
    cm_atomic_add_relaxed(&srv_off.write_failures, 1);
    srv_off_log_key("offload (queued)", j->key, j->klen, j->vlen, j->rc);
    struct srv_db_ref r;
    srv_db_rdlock();
    srv_db_lock(&r, j->key, j->klen);
    struct srv_obj *o = srv_db_peek(&r, srv_now_ms());
    if (o && o->type == SRV_TYPE_STRING && srv_obj_offloaded(o) && o->handle == j->gen)
        srv_db_evict_unlink(&r, o);
    srv_db_unlock(&r);
    srv_db_rdunlock();
}

/* Takes up to SRV_WQ_BATCH jobs to write (srv_wq.mu held), freeing cancelled ones. */
static unsigned srv_wq_take(struct srv_wq_job **jobs) {
    unsigned n = 0;
    while (srv_wq.head && n < SRV_WQ_BATCH) {
        struct srv_wq_job *j = srv_wq.head;
        srv_wq.head = j->next;
        if (!srv_wq.head)
            srv_wq.tail = NULL;
        if (j->cancelled) {
            srv_wq_release(j);
            cm_free(j);
            continue;
        }
        j->state = SRV_WQ_WRITING;
        jobs[n++] = j;
    }
    srv_wq.busy = n;
    return n;
}

/* Finishes a written batch (srv_wq.mu held on entry and exit; dropped around the drops). */
static void srv_wq_finish(struct srv_wq_job **jobs, unsigned n) {
    unsigned nf = 0;
    for (unsigned i = 0; i < n; i++) {
        struct srv_wq_job *j = jobs[i];
        if (j->rc == 0) {
            cm_atomic_add_relaxed(&srv_off.writes, 1);
            cm_atomic_add_relaxed(&srv_off.write_bytes, j->vlen);
            srv_wq_release(j);
            cm_free(j);
        } else {
            j->state = SRV_WQ_FAILED;
            jobs[nf++] = j;
        }
    }
    pthread_cond_broadcast(&srv_wq.done); /* nothing is WRITING now */
    if (nf == 0)
        return;
    pthread_mutex_unlock(&srv_wq.mu);
    for (unsigned i = 0; i < nf; i++)
        srv_wq_drop(jobs[i]);
    pthread_mutex_lock(&srv_wq.mu);
    for (unsigned i = 0; i < nf; i++) {
        srv_wq_release(jobs[i]);
        cm_free(jobs[i]);
    }
}

/* Sleeps ms milliseconds (the test knobs). */
static void srv_wq_sleep_ms(unsigned ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *srv_wq_thread(void *arg) {
    (void)arg;
    struct srv_wq_job *jobs[SRV_WQ_BATCH];
    pthread_mutex_lock(&srv_wq.mu);
    for (;;) {
        while (!srv_wq.head && !srv_wq.stopping)
            pthread_cond_wait(&srv_wq.work, &srv_wq.mu);
        if (!srv_wq.head)
            break;
        if (srv_wq.delay_ms && !srv_wq.stopping) { /* the jobs stay queued meanwhile */
            pthread_mutex_unlock(&srv_wq.mu);
            srv_wq_sleep_ms(srv_wq.delay_ms);
            pthread_mutex_lock(&srv_wq.mu);
        }
        unsigned n = srv_wq_take(jobs);
        pthread_mutex_unlock(&srv_wq.mu);
        if (n && srv_wq.stall_ms) /* the jobs are in progress meanwhile: changes wait */
            srv_wq_sleep_ms(srv_wq.stall_ms);
        if (n)
            srv_wq_write(jobs, n);
        pthread_mutex_lock(&srv_wq.mu);
        srv_wq_finish(jobs, n);
        srv_wq.busy = 0;
        pthread_cond_broadcast(&srv_wq.done);
    }
    pthread_mutex_unlock(&srv_wq.mu);
    return NULL;
}

/*
 * Reads CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES (default: a quarter of --memory, at most 64 MiB; 0
 * turns the queue off) and the test knobs. Returns 0 or -1 with a message in err.
 */
static int srv_wq_config(char *err, size_t errlen) {
    uint64_t mem = srv_cfg.memory > 0 ? (uint64_t)srv_cfg.memory : 0;
    srv_wq.limit = mem / 4 < SRV_WQ_DEFAULT_MAX ? mem / 4 : SRV_WQ_DEFAULT_MAX;
    const char *e = getenv("CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES");
    if (e && *e) {
        long long v;
        if (cm_str2ll(e, strlen(e), &v) != 0 || v < 0) {
            snprintf(err, errlen,
                     "CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES: invalid value \"%s\" (expected an "
                     "integer from 0 to 9223372036854775807)",
                     e);
            return -1;
        }
        srv_wq.limit = (uint64_t)v;
    }
    e = getenv("CRESCENT_TEST_OFFLOAD_WRITE_DELAY_MS");
    srv_wq.delay_ms = e ? (unsigned)strtoul(e, NULL, 10) : 0;
    e = getenv("CRESCENT_TEST_OFFLOAD_WRITE_STALL_MS");
    srv_wq.stall_ms = e ? (unsigned)strtoul(e, NULL, 10) : 0;
    return 0;
}

/* Starts the writer thread (no-op when the queue is off); eviction writes synchronously when
 * it cannot start. */
static void srv_wq_start(void) {
    cm_ht_init(&srv_wq.table, 64);
    if (srv_wq.limit == 0)
        return;
    int rc = pthread_create(&srv_wq.thread, NULL, srv_wq_thread, NULL);
    if (rc != 0) {
        cm_log(CM_LOG_WARNING, "offload",
               "cannot start the offload writer thread (%s): eviction writes stay synchronous",
               strerror(rc));
        return;
    }
    srv_wq.started = 1;
}

/* Waits until every queued write is done, then stops the writer. Main thread, loops ended. */
static void srv_wq_stop(void) {
    pthread_mutex_lock(&srv_wq.mu);
    if (!srv_wq.started) {
        pthread_mutex_unlock(&srv_wq.mu);
        return;
    }
    uint64_t n = cm_atomic_load_relaxed(&srv_off.queue_keys);
    if (n)
        cm_log(CM_LOG_NOTICE, "offload", "waiting for %llu queued offload writes",
               (unsigned long long)n);
    while (srv_wq.head || srv_wq.busy)
        pthread_cond_wait(&srv_wq.done, &srv_wq.mu);
    srv_wq.stopping = 1;
    pthread_cond_broadcast(&srv_wq.work);
    pthread_mutex_unlock(&srv_wq.mu);
    pthread_join(srv_wq.thread, NULL);
    srv_wq.started = 0;
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
    if (srv_wq_config(err, errlen) < 0)
        return -1;
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
    srv_wq_start();
    return 0;
}

void srv_offload_stop(void) {
    srv_wq_stop();
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
    pthread_mutex_lock(&srv_wq.mu); /* never held across I/O */
    unsigned long long writing = srv_wq.busy;
    pthread_mutex_unlock(&srv_wq.mu);
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
                   "offload_write_queue_limit_bytes:%llu\r\noffload_write_queue_keys:%llu\r\n"
                   "offload_write_queue_bytes:%llu\r\noffload_write_queue_writing:%llu\r\n"
                   "offload_queued_writes:%llu\r\n"
                   "offload_sync_writes:%llu\r\noffload_cancelled_writes:%llu\r\n"
                   "offload_waited_writes:%llu\r\n"
                   "offload_queue_reads:%llu\r\n"
                   "offload_disk_objects:%llu\r\noffload_disk_used_bytes:%llu\r\n"
                   "offload_disk_quota_bytes:%llu\r\noffload_disk_corrupt:%llu\r\n\r\n",
                   srv_cfg.ssd_offload_path, st.backend, st.io, st.direct_io, U(keys), U(bytes),
                   U(writes), U(write_bytes), U(write_failures), U(reads), U(read_bytes),
                   U(read_failures), U(promotions), U(buffered_reads), U(removes), U(recovered),
                   (unsigned long long)(srv_wq.started ? srv_wq.limit : 0), U(queue_keys),
                   U(queue_bytes), writing, U(queued_writes), U(sync_writes), U(cancelled_writes),
                   U(waited_writes), U(queue_reads), (unsigned long long)st.keys,
                   (unsigned long long)st.disk_bytes, (unsigned long long)st.quota_bytes,
                   (unsigned long long)st.corrupt);
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
    srv_off_metric(b, "crescent_offload_write_queue_bytes", "gauge",
                   "Evicted value bytes waiting in the write queue for the SSD tier.",
                   L(queue_bytes));
    srv_off_metric(b, "crescent_offload_queued_writes_total", "counter",
                   "Evicted values handed to the background writer.", L(queued_writes));
    srv_off_metric(b, "crescent_offload_sync_writes_total", "counter",
                   "Evicted values written on the event loop (write queue full or off).",
                   L(sync_writes));
    srv_off_metric(b, "crescent_offload_cancelled_writes_total", "counter",
                   "Queued writes dropped because the key changed first.", L(cancelled_writes));
    srv_off_metric(b, "crescent_offload_queue_reads_total", "counter",
                   "Reads served from the write queue.", L(queue_reads));
    srv_off_metric(b, "crescent_offload_disk_used_bytes", "gauge",
                   "Bytes the SSD tier occupies on disk.", st.disk_bytes);
    srv_off_metric(b, "crescent_offload_disk_quota_bytes", "gauge", "The SSD tier's byte quota.",
                   st.quota_bytes);
#undef L
}
