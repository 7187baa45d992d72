/* SPDX-License-Identifier: Apache-2.0 */
/* Keyspace shards, object life cycle, lazy and active expiry, sampled LRU eviction. See srv_db.h.
 */
#include "common/fmacros.h"

#include "server/srv_db.h"
#include "server/srv_pubsub.h"

#include "server/srv_offload.h"
#include "server/srv_pool_seg.h"
#include "server/srv_t.h"
#include "server/srv_watch.h"

#include "common/cm_atomic.h"
#include "common/cm_errno.h"
#include "common/cm_hash.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_pcounter.h"
#include "common/cm_time.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <string.h>

struct srv_shard {
    pthread_mutex_t lock;
    struct cm_ht ht;
    _Atomic uint64_t nexpires; /* keys with a TTL; written under the lock, read without */
    _Atomic uint64_t nkeys;    /* keys; written under the lock, read without (DBSIZE) */
    uint64_t expire_cursor;
} __attribute__((aligned(64)));

double srv_db_high_watermark = 0.90;
double srv_db_evict_ratio = 0.05;

static struct srv_shard srv_shards[SRV_DB_SHARDS];
/*
 * The keyspace lock is a "big reader" lock: one mutex per worker thread, each on its own cache
 * line. A reader locks only its own thread's mutex (no shared line bounces between cores on
 * every command); a writer locks all of them in order.
 */
#define SRV_DB_LOCK_SLOTS 256
static struct { pthread_mutex_t m; } __attribute__((aligned(64))) srv_db_locks[SRV_DB_LOCK_SLOTS];
static unsigned srv_db_nlocks = 1;
static __thread unsigned srv_db_my_lock;
static pthread_mutex_t srv_evict_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srv_seg *srv_db_seg;
static uint64_t srv_hash_seed;
static uint64_t srv_clock_base_ms;
static _Atomic uint64_t srv_last_evict_ms;
/* Keys still to evict in the current eviction cycle; written under srv_evict_lock. */
static _Atomic uint64_t srv_evict_debt;

static _Atomic uint64_t stat_expired, stat_evicted, stat_evict_cycles;
static struct cm_pcounter srv_meta_bytes; /* object records + their bucket slots */
static struct cm_pcounter stat_hits, stat_misses;

uint32_t srv_lru_clock(void) {
    /* coarse clock: one read per key access, 16 ms units, so the tick's resolution is enough */
    return (uint32_t)((cm_mono_coarse_ms() - srv_clock_base_ms) >> 4);
}

/* ---------------------------------------------------------------- memory figures */

#define SRV_RECLAIM_PERIOD_MS  100         /* reclaimer pass interval */
#define SRV_RECLAIM_MIN_AGE_MS 1000        /* free pages are kept this long for reuse */
#define SRV_HEAP_PURGE_DROP    (32u << 20) /* heap drop that makes jemalloc purge */

/* Present only when jemalloc is linked in (the server); NULL otherwise. */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
    __attribute__((weak));

static _Atomic uint64_t srv_mem_peak;
static uint64_t srv_heap_high; /* reclaimer thread only */

uint64_t srv_db_used_memory(uint64_t *peak) {
    uint64_t used = (uint64_t)cm_mem_used() + srv_seg_used(srv_db_seg);
    uint64_t p = cm_atomic_load_relaxed(&srv_mem_peak);
    while (used > p && !atomic_compare_exchange_weak_explicit(
                           &srv_mem_peak, &p, used, memory_order_relaxed, memory_order_relaxed))
        ;
    if (peak)
        *peak = used > p ? used : p;
    return used;
}

/* Asks jemalloc (when linked in) to return the free pages of every arena to the kernel. */
static void srv_heap_purge(void) {
    if (mallctl)
        mallctl("arena.4096.purge", NULL, NULL, NULL, 0); /* 4096 = MALLCTL_ARENAS_ALL */
}

/*
 * Runs on the segment's reclaimer thread after each pass: samples the used_memory peak and,
 * when the heap shrank to half its last high point and by SRV_HEAP_PURGE_DROP at least
 * (FLUSHALL, mass deletes; not the 5 % steps of eviction, whose pages are reused at once), has
 * jemalloc return its free pages too; purges once more a second later, since
 * a big FLUSHALL may still have been freeing during the first purge.
 */
static void srv_db_mem_tick(void) {
    static unsigned again; /* ticks until the follow-up purge, 0 = none */
    srv_db_used_memory(NULL);
    uint64_t heap = (uint64_t)cm_mem_used();
    if (heap > srv_heap_high)
        srv_heap_high = heap;
    if (again && --again == 0)
        srv_heap_purge();
    if (srv_heap_high - heap < SRV_HEAP_PURGE_DROP || heap > srv_heap_high / 2)
        return;
    srv_heap_high = heap;
    srv_heap_purge();
    again = 1000 / SRV_RECLAIM_PERIOD_MS;
}

int srv_db_init(struct srv_seg *seg) {
    for (int i = 0; i < SRV_DB_LOCK_SLOTS; i++)
        pthread_mutex_init(&srv_db_locks[i].m, NULL);
    for (int i = 0; i < SRV_DB_SHARDS; i++) {
        pthread_mutex_init(&srv_shards[i].lock, NULL);
        cm_ht_init(&srv_shards[i].ht, 16);
    }
    srv_db_seg = seg;
    srv_hash_seed = cm_rand64();
    srv_clock_base_ms = cm_mono_coarse_ms();
    if (!seg) /* --memory 0: no values of its own, nothing to reclaim */
        return 0;
    int rc = srv_seg_start_reclaimer(seg, SRV_RECLAIM_PERIOD_MS, SRV_RECLAIM_MIN_AGE_MS,
                                     srv_db_mem_tick);
    if (rc < 0)
        cm_log(CM_LOG_WARNING, "db", "cannot start the segment reclaimer: %s", strerror(-rc));
    return 0;
}

static void srv_db_drop_cb(struct cm_ht_node *n, void *arg) {
    (void)arg;
    srv_obj_unref((struct srv_obj *)n);
}

static void srv_pool_clear(void);

void srv_db_fini(void) {
    srv_pool_clear();
    for (int i = 0; i < SRV_DB_SHARDS; i++) {
        cm_ht_clear(&srv_shards[i].ht, srv_db_drop_cb, NULL);
        cm_ht_fini(&srv_shards[i].ht);
        pthread_mutex_destroy(&srv_shards[i].lock);
    }
    for (int i = 0; i < SRV_DB_LOCK_SLOTS; i++)
        pthread_mutex_destroy(&srv_db_locks[i].m);
}

void srv_db_set_threads(unsigned n) {
    srv_db_nlocks = n < 1 ? 1 : (n > SRV_DB_LOCK_SLOTS ? SRV_DB_LOCK_SLOTS : n);
}

void srv_db_register_thread(unsigned id) {
    srv_db_my_lock = id % srv_db_nlocks;
}

void srv_db_rdlock(void) {
    pthread_mutex_lock(&srv_db_locks[srv_db_my_lock].m);
}

void srv_db_rdunlock(void) {
    pthread_mutex_unlock(&srv_db_locks[srv_db_my_lock].m);
}

void srv_db_wrlock(void) {
    for (unsigned i = 0; i < srv_db_nlocks; i++)
        pthread_mutex_lock(&srv_db_locks[i].m);
}

void srv_db_wrunlock(void) {
    for (unsigned i = srv_db_nlocks; i-- > 0;)
        pthread_mutex_unlock(&srv_db_locks[i].m);
}

static inline uint64_t srv_key_hash(const char *key, size_t klen) {
    return cm_hash64(key, klen, srv_hash_seed);
}

/* Shards use the top bits of the hash; the tables inside use the low bits. */
static inline struct srv_shard *srv_shard_of(uint64_t hash) {
    return &srv_shards[hash >> 54];
}

void srv_db_lock(struct srv_db_ref *r, const char *key, size_t klen) {
    r->hash = srv_key_hash(key, klen);
    r->sh = srv_shard_of(r->hash);
    r->key = key;
    r->klen = klen;
    pthread_mutex_lock(&r->sh->lock);
}

void srv_db_unlock(struct srv_db_ref *r) {
    pthread_mutex_unlock(&r->sh->lock);
}

static int srv_obj_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct srv_obj *o = (const struct srv_obj *)n;
    return o->klen == klen && memcmp(o->key, key, klen) == 0;
}

static void srv_shard_unlink(struct srv_shard *sh, struct srv_obj *o) {
    srv_watch_touch(o->key, o->klen);
    cm_ht_remove(&sh->ht, &o->node);
    cm_atomic_sub_relaxed(&sh->nkeys, 1);
    if (cm_atomic_load_relaxed(&o->expire_ms))
        cm_atomic_sub_relaxed(&sh->nexpires, 1);
    srv_obj_unref(o);
}

static inline int srv_obj_expired(const struct srv_obj *o, int64_t now_ms) {
    int64_t e = cm_atomic_load_relaxed(&o->expire_ms);
    return e != 0 && e <= now_ms;
}

struct srv_obj *srv_db_peek(struct srv_db_ref *r, int64_t now_ms) {
    struct srv_obj *o =
        (struct srv_obj *)cm_ht_find(&r->sh->ht, r->hash, r->key, r->klen, srv_obj_eq);
    if (o && srv_obj_expired(o, now_ms)) {
        srv_notify(SRV_NOTIFY_EXPIRED, "expired", o->key, o->klen);
        srv_shard_unlink(r->sh, o);
        cm_atomic_add_relaxed(&stat_expired, 1);
        return NULL;
    }
    return o;
}

struct srv_obj *srv_db_find(struct srv_db_ref *r, int64_t now_ms) {
    struct srv_obj *o = srv_db_peek(r, now_ms);
    if (o)
        cm_atomic_store_relaxed(&o->lru, srv_lru_clock());
    return o;
}

static void srv_db_add(struct srv_db_ref *r, struct srv_obj *o) {
    o->node.hash = r->hash;
    srv_watch_touch(o->key, o->klen);
    cm_atomic_store_relaxed(&o->lru, srv_lru_clock());
    cm_ht_insert(&r->sh->ht, &o->node);
    cm_atomic_add_relaxed(&r->sh->nkeys, 1);
    if (cm_atomic_load_relaxed(&o->expire_ms))
        cm_atomic_add_relaxed(&r->sh->nexpires, 1);
}

void srv_db_insert(struct srv_db_ref *r, struct srv_obj *o) {
    srv_db_add(r, o);
    srv_notify(SRV_NOTIFY_NEW, "new", o->key, o->klen);
}

void srv_db_replace(struct srv_db_ref *r, struct srv_obj *old, struct srv_obj *o) {
    srv_shard_unlink(r->sh, old);
    srv_db_add(r, o);
}

void srv_db_unlink(struct srv_db_ref *r, struct srv_obj *o) {
    srv_shard_unlink(r->sh, o);
}

void srv_db_set_expire(struct srv_db_ref *r, struct srv_obj *o, int64_t when_ms) {
    int64_t old = cm_atomic_load_relaxed(&o->expire_ms);
    if (old && !when_ms)
        cm_atomic_sub_relaxed(&r->sh->nexpires, 1);
    else if (!old && when_ms)
        cm_atomic_add_relaxed(&r->sh->nexpires, 1);
    cm_atomic_store_relaxed(&o->expire_ms, when_ms);
    if (srv_obj_offloaded(o) && old != when_ms)
        srv_offload_set_expire(o);
    srv_db_touch(o);
}

void srv_db_touch(struct srv_obj *o) {
    srv_watch_touch(o->key, o->klen);
}

char *srv_obj_val(const struct srv_obj *o) {
    if (__builtin_expect(srv_obj_offloaded(o), 0))
        return srv_offload_scratch(o);
    return srv_seg_ptr(srv_db_seg, o->handle);
}

/* srv_obj_promote with the value already read (val, or NULL to read it) and refs references. */
static int srv_obj_promote_from(struct srv_obj *o, const void *val, uint32_t refs) {
    uint64_t size = srv_seg_size(srv_db_seg);
    if (cm_atomic_load_relaxed(&o->refs) != refs ||
        (double)(srv_db_mem_used() + o->vlen) > srv_db_high_watermark * (double)size)
        return -ENOSPC;
    struct srv_block blk;
    if (srv_seg_alloc(srv_db_seg, o->vlen ? o->vlen : 1, &blk) != 0)
        return -ENOSPC;
    int rc = 0;
    if (val)
        memcpy(blk.ptr, val, o->vlen);
    else
        rc = srv_offload_read(o, blk.ptr);
    if (rc < 0) {
        srv_seg_free(srv_db_seg, blk.handle);
        return rc;
    }
    srv_offload_forget(o, 1);
    o->handle = blk.handle;
    o->flags &= (uint8_t)~SRV_OBJ_OFFLOADED;
    return 0;
}

int srv_obj_promote(struct srv_obj *o) {
    return srv_obj_promote_from(o, NULL, 1);
}

int srv_obj_promote_buf(struct srv_obj *o, const void *val) {
    return srv_obj_promote_from(o, val, 2);
}

static uint64_t srv_db_evict_step(int wait);

/*
 * Evicts a few keys (SRV_EVICT_STEP) after each allocation when usage passed the high
 * watermark (waiting for another evicting thread, so writers never outrun eviction) or, below
 * it, while an eviction cycle is still under way (skipped when another thread is evicting). A
 * cycle is thus spread over the writes that follow it, a few keys each, instead of stalling one
 * write. Backs off 10 ms when nothing could be freed.
 */
static void srv_db_maybe_evict_watermark(void) {
    uint64_t size = srv_seg_size(srv_db_seg);
    int above = (double)srv_db_mem_used() > srv_db_high_watermark * (double)size;
    if (!above && cm_atomic_load_relaxed(&srv_evict_debt) == 0)
        return;
    uint64_t now = cm_mono_ms();
    if (now - cm_atomic_load_relaxed(&srv_last_evict_ms) < 10)
        return;
    uint64_t n = srv_db_evict_step(above);
    if (n == 0)
        cm_atomic_store_relaxed(&srv_last_evict_ms, now);
}

/* Heap bytes a record accounts for: its allocation plus its bucket slot. */
static inline uint64_t srv_obj_meta_bytes(const struct srv_obj *o) {
    return (uint64_t)malloc_usable_size((void *)o) + sizeof(void *);
}

/* Subtracts n from srv_meta_bytes (the counter adds modulo 2^64). */
static inline void srv_meta_sub(uint64_t n) {
    cm_pcounter_add(&srv_meta_bytes, UINT64_MAX - n + 1);
}

/* A zeroed record for a key of klen bytes with refs = 1, counted in srv_meta_bytes. */
static struct srv_obj *srv_obj_alloc(size_t klen) {
    struct srv_obj *o = cm_malloc(sizeof(*o) + klen);
    memset(o, 0, sizeof(*o));
    o->refs = 1;
    o->klen = (uint32_t)klen;
    cm_pcounter_add(&srv_meta_bytes, srv_obj_meta_bytes(o));
    return o;
}

struct srv_obj *srv_obj_rekey(struct srv_obj *o, const char *key, size_t klen) {
    struct srv_obj *n = srv_obj_alloc(klen);
    n->type = o->type;
    n->flags = o->flags;
    if (o->type == SRV_TYPE_STRING) {
        n->handle = o->handle;
        n->vlen = o->vlen;
    } else {
        n->payload = o->payload;
    }
    cm_atomic_store_relaxed(&n->expire_ms, cm_atomic_load_relaxed(&o->expire_ms));
    memcpy(n->key, key, klen);
    if (srv_obj_offloaded(o))
        n->handle = srv_offload_move(o, n);
    srv_meta_sub(srv_obj_meta_bytes(o));
    cm_free(o);
    return n;
}

uint64_t srv_db_mem_used(void) {
    return srv_seg_used(srv_db_seg) + cm_pcounter_read(&srv_meta_bytes) + srv__agg_mem();
}

int srv_obj_create(const char *key, size_t klen, size_t vlen, size_t cap, struct srv_obj **out) {
    struct srv_block blk;
    if (cap < vlen)
        cap = vlen;
    if (cap > srv_seg_size(srv_db_seg))
        return -CM_EOOM;
    while (srv_seg_alloc(srv_db_seg, cap, &blk) != 0) {
        /* Keys first (LRU), then pool objects holding bytes in the shared segment. */
        if (srv_db_evict(srv_db_evict_ratio) == 0 && srv_pseg_evict(cap) == 0) {
            /* Nothing left to evict by LRU: one last try, other threads may have freed. */
            if (srv_seg_alloc(srv_db_seg, cap, &blk) == 0)
                break;
            return -CM_EOOM;
        }
    }
    srv_db_maybe_evict_watermark();
    struct srv_obj *o = srv_obj_alloc(klen);
    o->vlen = (uint32_t)vlen;
    o->handle = blk.handle;
    memcpy(o->key, key, klen);
    *out = o;
    return 0;
}

uint64_t srv_obj_capacity(const struct srv_obj *o) {
    if (o->type != SRV_TYPE_STRING || srv_obj_offloaded(o))
        return 0;
    return srv_seg_block_capacity(srv_db_seg, o->handle);
}

void srv_obj_ref(struct srv_obj *o) {
    cm_atomic_add_relaxed(&o->refs, 1u);
}

void srv_obj_unref(struct srv_obj *o) {
    if (cm_atomic_sub_acq_rel(&o->refs, 1u) != 1)
        return;
    if (srv_obj_offloaded(o))
        srv_offload_forget(o, 0);
    else if (o->type == SRV_TYPE_STRING)
        srv_seg_free(srv_db_seg, o->handle);
    else
        srv_type_free((enum srv_type)o->type, o->payload);
    srv_meta_sub(srv_obj_meta_bytes(o));
    cm_free(o);
}

struct srv_obj *srv_obj_create_offloaded(const char *key, size_t klen, uint32_t vlen,
                                         uint32_t gen) {
    struct srv_obj *o = srv_obj_alloc(klen);
    o->flags = SRV_OBJ_OFFLOADED;
    o->handle = gen;
    o->vlen = vlen;
    memcpy(o->key, key, klen);
    return o;
}

struct srv_obj *srv_obj_create_agg(const char *key, size_t klen, enum srv_type type,
                                   void *payload) {
    struct srv_obj *o = srv_obj_alloc(klen);
    o->type = (uint8_t)type;
    o->payload = payload;
    memcpy(o->key, key, klen);
    return o;
}

int srv_db_shard_empty(const char *key, size_t klen) {
    return cm_atomic_load_relaxed(&srv_shard_of(srv_key_hash(key, klen))->nkeys) == 0;
}

int srv_db_exists(const char *key, size_t klen, int64_t now_ms) {
    struct srv_db_ref r;
    srv_db_lock(&r, key, klen);
    int e = srv_db_peek(&r, now_ms) != NULL;
    srv_db_unlock(&r);
    return e;
}

uint64_t srv_db_size(void) {
    uint64_t n = 0;
    for (int i = 0; i < SRV_DB_SHARDS; i++)
        n += cm_atomic_load_relaxed(&srv_shards[i].nkeys);
    return n;
}

uint64_t srv_db_expires(void) {
    uint64_t n = 0;
    for (int i = 0; i < SRV_DB_SHARDS; i++)
        n += cm_atomic_load_relaxed(&srv_shards[i].nexpires);
    return n;
}

uint64_t srv_db_flush(void) {
    uint64_t n = 0;
    srv_watch_touch_existing((int64_t)cm_wall_ms());
    for (int i = 0; i < SRV_DB_SHARDS; i++) {
        struct srv_shard *sh = &srv_shards[i];
        pthread_mutex_lock(&sh->lock);
        n += sh->ht.count;
        cm_ht_clear(&sh->ht, srv_db_drop_cb, NULL);
        cm_atomic_store_relaxed(&sh->nexpires, 0);
        cm_atomic_store_relaxed(&sh->nkeys, 0);
        sh->expire_cursor = 0;
        pthread_mutex_unlock(&sh->lock);
    }
    return n;
}

/* ---------------------------------------------------------------- scan and random key */

struct srv_scan_ctx {
    srv_db_visit_cb *cb;
    void *arg;
    int64_t now_ms;
    size_t offered;
};

static void srv_scan_visit(struct cm_ht_node *n, void *arg) {
    struct srv_scan_ctx *ctx = arg;
    struct srv_obj *o = (struct srv_obj *)n;
    ctx->offered++;
    if (!srv_obj_expired(o, ctx->now_ms))
        ctx->cb(o, ctx->arg);
}

uint64_t srv_db_scan(uint64_t cursor, size_t count, int64_t now_ms, srv_db_visit_cb *cb,
                     void *arg) {
    struct srv_scan_ctx ctx = {cb, arg, now_ms, 0};
    uint64_t shard = cursor & (SRV_DB_SHARDS - 1);
    uint64_t htc = cursor >> 10;
    if (count == 0)
        count = 1;
    while (shard < SRV_DB_SHARDS) {
        struct srv_shard *sh = &srv_shards[shard];
        pthread_mutex_lock(&sh->lock);
        if (sh->ht.count == 0)
            htc = 0;
        else
            do {
                htc = cm_ht_scan(&sh->ht, htc, srv_scan_visit, &ctx);
            } while (htc != 0 && ctx.offered < count);
        pthread_mutex_unlock(&sh->lock);
        if (htc == 0)
            shard++;
        if (ctx.offered >= count)
            break;
    }
    if (shard >= SRV_DB_SHARDS)
        return 0;
    return (htc << 10) | shard;
}

char *srv_db_random_key(int64_t now_ms, size_t *klen) {
    if (srv_db_size() == 0)
        return NULL;
    /* Start at a random shard and take a random key from the first non-empty one, so a sparse
     * keyspace (one key in 1024 shards) is found every time; expired keys are skipped. */
    uint64_t start = cm_rand64();
    for (int attempt = 0; attempt < 64; attempt++, start = cm_rand64()) {
        for (uint64_t i = 0; i < SRV_DB_SHARDS; i++) {
            struct srv_shard *sh = &srv_shards[(start + i) & (SRV_DB_SHARDS - 1)];
            pthread_mutex_lock(&sh->lock);
            struct srv_obj *o = (struct srv_obj *)cm_ht_random(&sh->ht);
            char *k = NULL;
            if (o && !srv_obj_expired(o, now_ms)) {
                k = cm_strndup(o->key, o->klen);
                *klen = o->klen;
            }
            pthread_mutex_unlock(&sh->lock);
            if (k)
                return k;
            if (o)
                break; /* an expired key: draw a new start */
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- active expiry */

#define SRV_EXPIRE_BATCH 64

struct srv_expire_ctx {
    int64_t now_ms;
    struct srv_obj *victims[SRV_EXPIRE_BATCH];
    int n;
};

static void srv_expire_visit(struct cm_ht_node *n, void *arg) {
    struct srv_expire_ctx *ctx = arg;
    struct srv_obj *o = (struct srv_obj *)n;
    if (ctx->n < SRV_EXPIRE_BATCH && srv_obj_expired(o, ctx->now_ms))
        ctx->victims[ctx->n++] = o;
}

void srv_db_active_expire(unsigned tid, unsigned nthreads, uint64_t budget_us, int64_t now_ms) {
    uint64_t deadline = cm_mono_us() + budget_us;
    for (unsigned i = tid; i < SRV_DB_SHARDS; i += nthreads) {
        struct srv_shard *sh = &srv_shards[i];
        if (cm_atomic_load_relaxed(&sh->nexpires) == 0)
            continue;
        pthread_mutex_lock(&sh->lock);
        struct srv_expire_ctx ctx = {.now_ms = now_ms, .n = 0};
        for (int steps = 0; steps < 16 && ctx.n < SRV_EXPIRE_BATCH; steps++) {
            sh->expire_cursor = cm_ht_scan(&sh->ht, sh->expire_cursor, srv_expire_visit, &ctx);
            if (sh->expire_cursor == 0)
                break;
        }
        for (int k = 0; k < ctx.n; k++) {
            srv_notify(SRV_NOTIFY_EXPIRED, "expired", ctx.victims[k]->key, ctx.victims[k]->klen);
            srv_shard_unlink(sh, ctx.victims[k]);
        }
        pthread_mutex_unlock(&sh->lock);
        cm_atomic_add_relaxed(&stat_expired, (uint64_t)ctx.n);
        if (cm_mono_us() > deadline)
            break;
    }
}

/* ---------------------------------------------------------------- eviction */

/*
 * DESIGN. Approximated LRU, as Redis does it: every evicted key costs one draw of
 * SRV_EVICT_SAMPLES keys (from a random bucket on) of one random non-empty shard; the evictable
 * ones are offered to a pool of the SRV_EVICT_POOL oldest candidates seen so far (kept sorted,
 * oldest first, with a copy of each key); then the oldest pool entry is looked up again under
 * its shard lock, checked (still there, LRU stamp unchanged, still evictable) and unlinked. The
 * cost of one eviction is a few shard locks and table probes, whatever the key count. A cycle
 * evicts ratio of the keys; the rest of a cycle (the "debt") is paid by later calls: batches of
 * up to SRV_EVICT_BATCH keys from srv_db_evict() (allocation failures, aggregate writes) and
 * SRV_EVICT_STEP keys after each allocation past the watermark, so no caller stalls for long.
 * Everything here runs under srv_evict_lock.
 */

#define SRV_EVICT_SAMPLES 5   /* keys sampled per draw (Redis maxmemory-samples) */
#define SRV_EVICT_POOL    16  /* best candidates kept between draws */
#define SRV_EVICT_KEYBUF  56  /* keys up to this size are copied into the pool entry */
#define SRV_EVICT_BATCH   128 /* keys evicted per srv_db_evict() call at most */
#define SRV_EVICT_STEP    8   /* keys evicted after one allocation past the watermark */
#define SRV_EVICT_DRAWS   16  /* draws per key before the exhaustive fallback */

/* The eviction passes: the second runs only when the first finds nothing to evict. */
enum srv_evict_pass {
    SRV_EVICT_FIRST = 0,  /* ordinary objects only */
    SRV_EVICT_SECOND = 1, /* also objects that are protected by soft rules only */
};

struct srv_evict_cand {
    uint64_t hash;
    uint32_t lru; /* stamp when sampled; a touched key no longer matches */
    uint32_t klen;
    char *heap; /* cm_malloc copy of a key longer than SRV_EVICT_KEYBUF, else NULL */
    char buf[SRV_EVICT_KEYBUF];
};

static struct srv_evict_cand srv_pool[SRV_EVICT_POOL];
static int srv_pool_n;

static inline const char *srv_cand_key(const struct srv_evict_cand *c) {
    return c->heap ? c->heap : c->buf;
}

/*
 * The eviction rules, in one place. An object whose value a reply in flight points into
 * (refs > 1, a pin) is never evicted, in either pass. Read leases (never evicted while held)
 * and soft pins (evicted only in the second pass) add their tests here.
 */
static int srv_obj_evictable(const struct srv_obj *o, enum srv_evict_pass pass) {
    (void)pass;
    return cm_atomic_load_relaxed(&o->refs) == 1 && !srv_obj_offloaded(o);
}

/*
 * Evicts o (shard sh locked, o evictable): with the SSD tier a string's value goes to disk and
 * its record stays (offload-on-evict); otherwise, or when the disk refuses it, the key is
 * dropped and counted in evicted_keys.
 */
static void srv_evict_victim(struct srv_shard *sh, struct srv_obj *o) {
    uint32_t gen;
    if (o->type == SRV_TYPE_STRING && srv_offload_enabled() &&
        srv_offload_write(o, srv_seg_ptr(srv_db_seg, o->handle), &gen) == 0) {
        srv_seg_free(srv_db_seg, o->handle);
        o->handle = gen;
        o->flags |= SRV_OBJ_OFFLOADED;
        return;
    }
    struct srv_db_ref r = {.sh = sh};
    srv_db_evict_unlink(&r, o);
}

void srv_db_evict_unlink(struct srv_db_ref *r, struct srv_obj *o) {
    srv_notify(SRV_NOTIFY_EVICTED, "evicted", o->key, o->klen);
    srv_shard_unlink(r->sh, o);
    cm_atomic_add_relaxed(&stat_evicted, 1);
}

static void srv_pool_drop(int i) {
    cm_free(srv_pool[i].heap);
    memmove(&srv_pool[i], &srv_pool[i + 1], (size_t)(srv_pool_n - i - 1) * sizeof(srv_pool[0]));
    srv_pool_n--;
}

/* Idle time of an LRU stamp at clock now (stamps wrap; a stamp from the future is 0). */
static inline uint32_t srv_idle(uint32_t now, uint32_t lru) {
    return (int32_t)(now - lru) < 0 ? 0 : now - lru;
}

/* Offers o (shard lock held) to the pool, ordered by idle time at clock now. */
static void srv_pool_offer(const struct srv_obj *o, uint32_t now) {
    uint32_t lru = cm_atomic_load_relaxed(&o->lru);
    uint32_t idle = srv_idle(now, lru);
    int pos = 0;
    while (pos < srv_pool_n && srv_idle(now, srv_pool[pos].lru) >= idle)
        pos++;
    if (pos == SRV_EVICT_POOL)
        return; /* younger than every candidate of a full pool */
    for (int i = 0; i < srv_pool_n; i++)
        if (srv_pool[i].hash == o->node.hash && srv_pool[i].klen == o->klen &&
            memcmp(srv_cand_key(&srv_pool[i]), o->key, o->klen) == 0)
            return; /* already a candidate */
    if (srv_pool_n == SRV_EVICT_POOL)
        srv_pool_drop(SRV_EVICT_POOL - 1);
    memmove(&srv_pool[pos + 1], &srv_pool[pos], (size_t)(srv_pool_n - pos) * sizeof(srv_pool[0]));
    srv_pool_n++;
    struct srv_evict_cand *c = &srv_pool[pos];
    c->hash = o->node.hash;
    c->lru = lru;
    c->klen = o->klen;
    c->heap = o->klen > SRV_EVICT_KEYBUF ? cm_malloc(o->klen) : NULL;
    memcpy(c->heap ? c->heap : c->buf, o->key, o->klen);
}

/*
 * Offers up to SRV_EVICT_SAMPLES objects of sh (locked) to the pool: the chains of consecutive
 * buckets from a random one (as Redis's dictGetSomeKeys), which reads the bucket array
 * sequentially instead of missing the cache once per sample. At most 8 buckets per sample.
 */
static void srv_shard_sample(struct srv_shard *sh, uint32_t now, enum srv_evict_pass pass) {
    const struct cm_ht *t = &sh->ht;
    size_t b = (size_t)cm_rand64() & t->mask;
    size_t steps = t->mask + 1 < 8 * SRV_EVICT_SAMPLES ? t->mask + 1 : 8 * SRV_EVICT_SAMPLES;
    int seen = 0;
    for (size_t i = 0; i < steps && seen < SRV_EVICT_SAMPLES; i++, b = (b + 1) & t->mask) {
        for (struct cm_ht_node *n = t->buckets[b]; n && seen < SRV_EVICT_SAMPLES; n = n->next) {
            if (srv_obj_evictable((struct srv_obj *)n, pass)) {
                seen++; /* offloaded records are skipped, not counted */
                srv_pool_offer((struct srv_obj *)n, now);
            }
        }
    }
}

/* One draw: samples a random non-empty shard into the pool. Returns 0 when every shard is empty. */
static int srv_pool_populate(enum srv_evict_pass pass) {
    uint64_t start = cm_rand64();
    for (unsigned i = 0; i < SRV_DB_SHARDS; i++) {
        struct srv_shard *sh = &srv_shards[(start + i) & (SRV_DB_SHARDS - 1)];
        if (cm_atomic_load_relaxed(&sh->nkeys) == 0)
            continue;
        pthread_mutex_lock(&sh->lock);
        uint32_t now = srv_lru_clock(); /* after the lock: stamps here are not newer */
        srv_shard_sample(sh, now, pass);
        pthread_mutex_unlock(&sh->lock);
        return 1;
    }
    return 0;
}

/* Takes the oldest pool entry and evicts its key if it still qualifies. Returns 1 if evicted. */
static int srv_pool_evict_best(enum srv_evict_pass pass) {
    struct srv_evict_cand *c = &srv_pool[0];
    struct srv_shard *sh = srv_shard_of(c->hash);
    int done = 0;
    pthread_mutex_lock(&sh->lock);
    struct srv_obj *o =
        (struct srv_obj *)cm_ht_find(&sh->ht, c->hash, srv_cand_key(c), c->klen, srv_obj_eq);
    if (o && cm_atomic_load_relaxed(&o->lru) == c->lru && srv_obj_evictable(o, pass)) {
        srv_evict_victim(sh, o);
        done = 1;
    }
    pthread_mutex_unlock(&sh->lock);
    srv_pool_drop(0);
    return done;
}

/*
 * Fallback when sampling found nothing: walks the shards from a random one and evicts the first
 * evictable object. O(keys) only when almost nothing is evictable. Returns 1 if one was evicted.
 */
static int srv_evict_first_found(enum srv_evict_pass pass) {
    uint64_t start = cm_rand64();
    for (unsigned i = 0; i < SRV_DB_SHARDS; i++) {
        struct srv_shard *sh = &srv_shards[(start + i) & (SRV_DB_SHARDS - 1)];
        if (cm_atomic_load_relaxed(&sh->nkeys) == 0)
            continue;
        struct srv_obj *victim = NULL;
        pthread_mutex_lock(&sh->lock);
        for (size_t b = 0; b <= sh->ht.mask && !victim; b++)
            for (struct cm_ht_node *nd = sh->ht.buckets[b]; nd && !victim; nd = nd->next)
                if (srv_obj_evictable((struct srv_obj *)nd, pass))
                    victim = (struct srv_obj *)nd;
        if (victim)
            srv_evict_victim(sh, victim);
        pthread_mutex_unlock(&sh->lock);
        if (victim)
            return 1;
    }
    return 0;
}

/* Evicts one key in the given pass. Returns 1, or 0 when nothing is evictable in that pass. */
static int srv_evict_one(enum srv_evict_pass pass) {
    for (int draw = 0; draw < SRV_EVICT_DRAWS; draw++) {
        if (!srv_pool_populate(pass))
            return 0;
        while (srv_pool_n > 0)
            if (srv_pool_evict_best(pass))
                return 1;
    }
    return srv_evict_first_found(pass);
}

/* Starts a cycle when none is running, then evicts up to max keys of it. Lock held. */
static uint64_t srv_evict_batch(double ratio, uint64_t max) {
    uint64_t debt = cm_atomic_load_relaxed(&srv_evict_debt);
    if (debt == 0) {
        uint64_t keys = srv_db_size(), offloaded = srv_offload_keys();
        /* A cycle takes ratio of the keys in memory; offloaded records cannot be evicted. */
        debt = (uint64_t)((double)(keys > offloaded ? keys - offloaded : 0) * ratio);
        if (debt == 0)
            debt = 1;
        cm_atomic_add_relaxed(&stat_evict_cycles, 1);
    }
    uint64_t want = debt < max ? debt : max;
    uint64_t done = 0;
    enum srv_evict_pass pass = SRV_EVICT_FIRST;
    while (done < want) {
        if (srv_evict_one(pass)) {
            done++;
        } else if (pass == SRV_EVICT_FIRST) {
            pass = SRV_EVICT_SECOND;
        } else {
            break;
        }
    }
    cm_atomic_store_relaxed(&srv_evict_debt, done < want ? 0 : debt - done);
    return done;
}

uint64_t srv_db_evict(double ratio) {
    pthread_mutex_lock(&srv_evict_lock);
    uint64_t evicted = srv_evict_batch(ratio, SRV_EVICT_BATCH);
    pthread_mutex_unlock(&srv_evict_lock);
    return evicted;
}

/*
 * One watermark step of SRV_EVICT_STEP keys. wait = 0 returns at once (UINT64_MAX) when another
 * thread is evicting.
 */
static uint64_t srv_db_evict_step(int wait) {
    if (wait)
        pthread_mutex_lock(&srv_evict_lock);
    else if (pthread_mutex_trylock(&srv_evict_lock) != 0)
        return UINT64_MAX;
    uint64_t evicted = srv_evict_batch(srv_db_evict_ratio, SRV_EVICT_STEP);
    pthread_mutex_unlock(&srv_evict_lock);
    return evicted;
}

static void srv_pool_clear(void) {
    pthread_mutex_lock(&srv_evict_lock);
    while (srv_pool_n > 0)
        srv_pool_drop(srv_pool_n - 1);
    cm_atomic_store_relaxed(&srv_evict_debt, 0);
    pthread_mutex_unlock(&srv_evict_lock);
}

void srv_db_get_stats(struct srv_db_stats *st) {
    st->expired_keys = cm_atomic_load_relaxed(&stat_expired);
    st->evicted_keys = cm_atomic_load_relaxed(&stat_evicted);
    st->keyspace_hits = cm_pcounter_read(&stat_hits);
    st->keyspace_misses = cm_pcounter_read(&stat_misses);
    st->eviction_cycles = cm_atomic_load_relaxed(&stat_evict_cycles);
}

void srv_db_reset_stats(void) {
    cm_atomic_store_relaxed(&stat_expired, 0);
    cm_atomic_store_relaxed(&stat_evicted, 0);
    cm_pcounter_reset(&stat_hits);
    cm_pcounter_reset(&stat_misses);
    cm_atomic_store_relaxed(&stat_evict_cycles, 0);
}

void srv_db_count_hit(int hit) {
    cm_pcounter_add(hit ? &stat_hits : &stat_misses, 1);
}
