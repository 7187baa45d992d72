/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool life cycle and the object-record plumbing shared by the other pool files: error names,
 * configuration, the object table, the in-flight set, discarded buffers, descriptors,
 * statistics and the invariant checker.
 */
#include "common/fmacros.h"

#include "common/cm_hash.h"
#include "common/cm_log.h"
#include "common/cm_mem.h"
#include "common/cm_tlsf.h"
#include "server/pool/pool_int.h"

#include <string.h>

/* ---- errors ------------------------------------------------------------------------------ */

/* Returns the static Mooncake name of err, "OK" for 0, or "UNKNOWN". */
const char *pool_err_name(int err) {
    switch (err) {
    case POOL_OK:
        return "OK";
#define POOL_ERR_NAME_(name, value, msg) \
    case (value):                        \
        return #name;
        POOL_ERR_MAP(POOL_ERR_NAME_)
#undef POOL_ERR_NAME_
    default:
        return "UNKNOWN";
    }
}

/* Returns the static message for err, or "unknown error". */
const char *pool_strerror(int err) {
    switch (err) {
    case POOL_OK:
        return "ok";
#define POOL_ERR_MSG_(name, value, msg) \
    case (value):                       \
        return msg;
        POOL_ERR_MAP(POOL_ERR_MSG_)
#undef POOL_ERR_MSG_
    default:
        return "unknown error";
    }
}

/* ---- configuration ----------------------------------------------------------------------- */

/* Fills cfg with Mooncake's master defaults. */
void pool_config_default(struct pool_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->client_live_ttl_ms = 10000;
    cfg->kv_lease_ttl_ms = 10000;
    cfg->kv_soft_pin_ttl_ms = 30 * 60 * 1000;
    cfg->max_kv_soft_pin_ttl_ms = 24 * 3600 * 1000;
    cfg->allow_evict_soft_pinned = 1;
    cfg->eviction_ratio = 0.05;
    cfg->eviction_high_watermark_ratio = 0.90;
    cfg->put_start_discard_timeout_ms = 30 * 1000;
    cfg->put_start_release_timeout_ms = 600 * 1000;
    cfg->strategy = POOL_STRATEGY_RANDOM;
    cfg->offloading_queue_limit = 50000;
    cfg->offload_cap_ratio = 0.5;
    cfg->promotion_admission_threshold = 2;
    cfg->alloc_align = 64;
    cfg->evict_sample = 16;
    cfg->view_version = 1;
}

/* Fills c with one replica and no pins or preferences. */
void pool_put_config_default(struct pool_put_config *c) {
    memset(c, 0, sizeof(*c));
    c->replica_num = 1;
}

static int pool_config_valid(const struct pool_config *c) {
    if (c->client_live_ttl_ms <= 0 || c->kv_lease_ttl_ms < 0 || c->kv_soft_pin_ttl_ms <= 0 ||
        c->max_kv_soft_pin_ttl_ms < c->kv_soft_pin_ttl_ms)
        return 0;
    if (!(c->eviction_ratio >= 0 && c->eviction_ratio <= 1) ||
        !(c->eviction_high_watermark_ratio >= 0 && c->eviction_high_watermark_ratio <= 1))
        return 0;
    if (c->put_start_discard_timeout_ms < 0 ||
        c->put_start_release_timeout_ms < c->put_start_discard_timeout_ms)
        return 0;
    if (c->alloc_align < 8 || (c->alloc_align & (c->alloc_align - 1)) != 0)
        return 0;
    if ((unsigned)c->strategy > POOL_STRATEGY_LOCAL_FIRST || c->evict_sample == 0)
        return 0;
    if (c->offloading_queue_limit < 1 || c->offloading_queue_limit > 100000000u ||
        !(c->offload_cap_ratio >= 0 && c->offload_cap_ratio <= 1) ||
        c->promotion_admission_threshold < 1)
        return 0;
    return 1;
}

/*
 * Creates an empty pool with a copy of cfg. Returns 0 and *out, or POOL_EINVALID_PARAMS.
 * The caller owns the pool and frees it with pool_destroy().
 */
int pool_create(const struct pool_config *cfg, struct pool **out) {
    if (!cfg || !out || !pool_config_valid(cfg))
        return POOL_EINVALID_PARAMS;
    struct pool *p = cm_calloc(1, sizeof(*p));
    p->cfg = *cfg;
    uint64_t seed = cfg->seed ? cfg->seed : cm_rand64();
    p->rng = seed;
    p->hash_seed = seed * 0x9e3779b97f4a7c15ull + 1;
    cm_ht_init(&p->objects, 1024);
    cm_ht_init(&p->inflight, 16);
    cm_ht_init(&p->clients_by_id, 16);
    *out = p;
    return POOL_OK;
}

/* Replaces the run-time settings; see pool.h. */
int pool_reconfigure(struct pool *p, const struct pool_config *cfg) {
    if (!p || !cfg)
        return POOL_EINVALID_PARAMS;
    struct pool_config c = *cfg;
    c.alloc_align = p->cfg.alloc_align;
    c.seed = p->cfg.seed;
    c.view_version = p->cfg.view_version;
    c.on_evict = p->cfg.on_evict;
    c.on_evict_arg = p->cfg.on_evict_arg;
    c.on_seg_drop = p->cfg.on_seg_drop;
    c.on_seg_drop_arg = p->cfg.on_seg_drop_arg;
    if (!pool_config_valid(&c))
        return POOL_EINVALID_PARAMS;
    p->cfg = c;
    return POOL_OK;
}

static void pool_destroy_obj_cb(struct cm_ht_node *n, void *arg) {
    struct pool *p = arg;
    struct pool_obj *o = (struct pool_obj *)n;
    for (uint32_t i = 0; i < o->nrep; i++) { /* a shared allocator outlives the pool */
        const struct pool_rep *r = &pool__reps(o)[i];
        if (r->type == POOL_REPLICA_MEMORY && r->seg < p->nseg_slots && p->segs[r->seg] &&
            !p->segs[r->seg]->alloc)
            pool__blk_free(p->segs[r->seg], r->handle);
    }
    p->meta_records -= pool_object_record_size(o->klen, o->nrep);
    cm_free(o);
}

static void pool_destroy_inflight_cb(struct cm_ht_node *n, void *arg) {
    (void)arg;
    cm_free(n);
}

/* Frees everything the pool owns; allocators go with their segments. NULL is accepted. */
void pool_destroy(struct pool *p) {
    if (!p)
        return;
    cm_ht_clear(&p->objects, pool_destroy_obj_cb, p);
    cm_ht_fini(&p->objects);
    cm_ht_clear(&p->inflight, pool_destroy_inflight_cb, NULL);
    cm_ht_fini(&p->inflight);
    for (size_t i = 0; i < p->ndiscards; i++) {
        struct pool_seg *s =
            p->discards[i].seg < p->nseg_slots ? p->segs[p->discards[i].seg] : NULL;
        if (s && !s->alloc)
            pool__blk_free(s, p->discards[i].handle);
    }
    cm_free(p->discards);
    pool__segs_fini(p);
    pool__clients_fini(p);
    cm_ht_fini(&p->clients_by_id);
    cm_free(p);
}

/* ---- shared helpers ---------------------------------------------------------------------- */

/* Next value of the pool's splitmix64 stream (deterministic for a given seed). */
uint64_t pool__rand(struct pool *p) {
    uint64_t z = (p->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Hash of a key under the pool's seed. */
uint64_t pool__key_hash(const struct pool *p, const void *key, size_t klen) {
    return cm_hash64(key, klen, p->hash_seed);
}

static int pool_obj_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct pool_obj *o = (const struct pool_obj *)n;
    return o->klen == klen && memcmp(o->key, key, klen) == 0;
}

/* Finds the object for key (hash from pool__key_hash), or NULL. */
struct pool_obj *pool__obj_find(const struct pool *p, const void *key, size_t klen, uint64_t hash) {
    return (struct pool_obj *)cm_ht_find(&p->objects, hash, key, klen, pool_obj_eq);
}

/* Finds a complete object; see pool_int.h. */
int pool__obj_find_ready(const struct pool *p, const void *key, size_t klen, struct pool_obj **o) {
    *o = pool__obj_find(p, key, klen, pool__key_hash(p, key, klen));
    if (!*o)
        return POOL_EOBJECT_NOT_FOUND;
    if ((*o)->flags & POOL_OF_INFLIGHT)
        return POOL_EREPLICA_IS_NOT_READY;
    return POOL_OK;
}

/* Record bytes of an object: header, key, padding, replicas. */
size_t pool_object_record_size(size_t klen, uint32_t nrep) {
    size_t off = (sizeof(struct pool_obj) + klen + 3u) & ~(size_t)3u;
    return off + nrep * sizeof(struct pool_rep);
}

/* Frees the buffer of replica r (value size bytes) in its segment and updates the counters. */
void pool__rep_free(struct pool *p, const struct pool_rep *r, uint64_t size) {
    if (r->type == POOL_REPLICA_LOCAL_DISK) {
        pool__disk_rep_gone(p, r, size, NULL, 0);
        return;
    }
    if (r->type != POOL_REPLICA_MEMORY || r->seg >= p->nseg_slots || !p->segs[r->seg])
        return;
    struct pool_seg *s = p->segs[r->seg];
    pool__blk_free(s, r->handle);
    s->used -= size;
    s->nbuffers--;
}

/* pool__rep_free() for replica r of o; a LOCAL_DISK replica also queues the removal of its
 * record on the owner (pool_offload.c). */
void pool__rep_free_of(struct pool *p, const struct pool_obj *o, const struct pool_rep *r) {
    if (r->type == POOL_REPLICA_LOCAL_DISK)
        pool__disk_rep_gone(p, r, o->size, o->key, o->klen);
    else
        pool__rep_free(p, r, o->size);
}

/* Reports event kind about o to the on_event hook, listing the segments of its memory
 * replicas. Objects still being written were never readable: nothing is reported for them. */
void pool__emit(struct pool *p, enum pool_event_kind kind, const struct pool_obj *o) {
    if (!p->cfg.on_event || (kind != POOL_EVENT_STORED && (o->flags & POOL_OF_INFLIGHT)))
        return;
    const char *segs[256];
    uint32_t n = 0;
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        if (reps[i].type == POOL_REPLICA_MEMORY && reps[i].seg < p->nseg_slots &&
            p->segs[reps[i].seg])
            segs[n++] = p->segs[reps[i].seg]->name;
    struct pool_event ev = {kind, o->key, o->klen, o->size, segs, n};
    p->cfg.on_event(p->cfg.on_event_arg, &ev);
}

/* Creates, links and counts the record of a new object; see pool_int.h. */
struct pool_obj *pool__obj_new(struct pool *p, const void *key, size_t klen, uint64_t hash,
                               uint64_t size, uint32_t nrep, const struct pool_rep *reps) {
    size_t rec = pool_object_record_size(klen, nrep);
    struct pool_obj *o = cm_malloc(rec);
    memset(o, 0, sizeof(*o));
    o->hn.hash = hash;
    o->size = size;
    o->klen = (uint16_t)klen;
    o->nrep = (uint8_t)nrep;
    o->writer = POOL_NO_SLOT;
    memcpy(o->key, key, klen);
    if (reps)
        memcpy(pool__reps(o), reps, nrep * sizeof(reps[0]));
    cm_ht_insert(&p->objects, &o->hn);
    p->meta_records += rec;
    return o;
}

/* Unlinks o from the table and the in-flight set and frees its record, not its buffers. */
void pool__obj_unlink(struct pool *p, struct pool_obj *o) {
    if (o->flags & (POOL_OF_INFLIGHT | POOL_OF_TASK))
        pool__inflight_del(p, o);
    if (o->flags & POOL_OF_OFFLOADING)
        pool__offload_obj_moved(p, o->key, o->klen, (uintptr_t)o, NULL); /* report now stale */
    cm_ht_remove(&p->objects, &o->hn);
    p->meta_records -= pool_object_record_size(o->klen, o->nrep);
    cm_free(o);
}

/* Unlinks o, frees its buffers and its record. */
void pool__obj_destroy(struct pool *p, struct pool_obj *o) {
    struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        pool__rep_free_of(p, o, &reps[i]);
    pool__obj_unlink(p, o);
}

/*
 * Frees and removes the replicas of o for which pred returns nonzero, compacting the rest;
 * destroys o when none is left (o is then invalid). A copy/move left without a readable
 * source is revoked.
 */
void pool__drop_reps_if(struct pool *p, struct pool_obj *o,
                        int (*pred)(const struct pool *, const struct pool_rep *, void *),
                        void *arg) {
    struct pool_rep *reps = pool__reps(o);
    uint32_t kept = 0, n = o->nrep;
    for (uint32_t i = 0; i < n; i++) {
        if (pred(p, &reps[i], arg))
            pool__rep_free_of(p, o, &reps[i]);
        else
            reps[kept++] = reps[i];
    }
    if (kept == n)
        return;
    /* The record keeps its allocation; only the accounting of the dropped slots changes. */
    p->meta_records -= (n - kept) * sizeof(struct pool_rep);
    o->nrep = (uint8_t)kept;
    if (kept == 0) {
        pool__emit(p, POOL_EVENT_REMOVED, o);
        pool__obj_destroy(p, o);
        return;
    }
    if (o->flags & POOL_OF_TASK) {
        uint32_t complete = 0;
        for (uint32_t i = 0; i < kept; i++)
            complete += reps[i].status == POOL_REPLICA_COMPLETE;
        if (!complete) /* the copy/move lost its source: abandon it */
            pool__task_revoke(p, o);
    }
}

static uint64_t pool_ptr_hash(const struct pool *p, const struct pool_obj *o) {
    return cm_hash64(&o, sizeof(o), p->hash_seed);
}

static int pool_inflight_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    (void)klen;
    return ((const struct pool_inflight *)n)->obj == key;
}

/* Adds o to the in-flight set as started at now and sets flag (INFLIGHT or TASK) on it. */
void pool__inflight_add(struct pool *p, struct pool_obj *o, unsigned flag, int64_t now) {
    struct pool_inflight *f = cm_malloc(sizeof(*f));
    f->obj = o;
    f->since = now;
    f->hn.hash = pool_ptr_hash(p, o);
    cm_ht_insert(&p->inflight, &f->hn);
    o->flags |= (uint8_t)flag;
}

/* Removes o from the in-flight set and clears its in-flight and task flags. */
void pool__inflight_del(struct pool *p, struct pool_obj *o) {
    struct cm_ht_node *n =
        cm_ht_find(&p->inflight, pool_ptr_hash(p, o), o, sizeof(o), pool_inflight_eq);
    if (n) {
        cm_ht_remove(&p->inflight, n);
        cm_free(n);
    }
    o->flags &= (uint8_t) ~(POOL_OF_INFLIGHT | POOL_OF_TASK | POOL_OF_MOVE);
}

/*
 * Hands replica r's buffer (value size bytes) to the discarded list: it stays allocated until
 * release_at (a zombie writer or a leased reader may still use it), then pool_tick frees it.
 * A release time not in the future frees it now.
 */
void pool__discard_add(struct pool *p, const struct pool_rep *r, uint64_t size,
                       int64_t release_at) {
    if (r->type != POOL_REPLICA_MEMORY)
        return; /* a LOCAL_DISK replica holds no buffer of the pool */
    if (p->ndiscards == p->discards_cap) {
        p->discards_cap = p->discards_cap ? 2 * p->discards_cap : 16;
        p->discards = cm_realloc(p->discards, p->discards_cap * sizeof(*p->discards));
    }
    struct pool_discard *d = &p->discards[p->ndiscards++];
    d->seg = r->seg;
    d->handle = r->handle;
    d->size = size;
    d->release_at = release_at;
}

/* Fills the client-facing descriptor of replica r of o. */
void pool__fill_desc(const struct pool *p, const struct pool_obj *o, const struct pool_rep *r,
                     struct pool_replica_desc *d) {
    if (r->type == POOL_REPLICA_LOCAL_DISK) {
        pool__fill_disk_desc(p, o, r, d);
        return;
    }
    const struct pool_seg *s = p->segs[r->seg];
    d->type = (enum pool_replica_type)r->type;
    d->status = (enum pool_replica_status)r->status;
    d->segment = s->name;
    d->endpoint = s->endpoint;
    d->protocol = s->protocol;
    d->seg_desc = s->desc;
    d->seg_desc_len = s->desc_len;
    d->seg_gen = s->gen;
    d->addr = s->base + pool__blk_off(s, r->handle);
    d->size = o->size;
}

/* ---- statistics and invariants ----------------------------------------------------------- */

/* Fills *st from the counters and the segments. */
void pool_get_stats(const struct pool *p, struct pool_stats *st) {
    memset(st, 0, sizeof(*st));
    st->objects = cm_ht_count(&p->objects);
    st->inflight = cm_ht_count(&p->inflight);
    st->segments = p->nsegs;
    st->clients = p->nclients;
    st->discarded = p->ndiscards;
    st->evicted = p->evicted;
    st->evict_skipped = p->evict_skipped;
    st->evict_examined = p->evict_examined;
    st->meta_bytes = p->meta_records + cm_ht_buckets(&p->objects) * sizeof(void *);
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        const struct pool_seg *s = p->segs[i];
        if (!s)
            continue;
        st->capacity += s->size;
        st->used += s->used;
        if (!s->alloc) { /* shared: the pool's buffers, rounded as the owner rounds them */
            st->allocated += s->used;
            continue;
        }
        struct cm_tlsf_stats ts;
        cm_tlsf_get_stats(s->alloc, &ts);
        st->allocated += ts.used;
    }
}

struct pool_check_ctx {
    const struct pool *p;
    uint64_t *used;
    uint64_t *nbuf;
    uint64_t inflight;
    int bad;
};

#define POOL_CHECK_FAIL(ctx, ...)                        \
    do {                                                 \
        if (!(ctx)->bad)                                 \
            cm_log(CM_LOG_WARNING, "pool", __VA_ARGS__); \
        (ctx)->bad = 1;                                  \
    } while (0)

static void pool_check_rep(struct pool_check_ctx *ctx, const struct pool_obj *o,
                           const struct pool_rep *r) {
    const struct pool *p = ctx->p;
    if (r->type == POOL_REPLICA_LOCAL_DISK) {
        if (!pool__disk_of_slot(p, r->seg))
            POOL_CHECK_FAIL(ctx, "pool_check: LOCAL_DISK replica without a disk segment");
        if (r->status != POOL_REPLICA_COMPLETE)
            POOL_CHECK_FAIL(ctx, "pool_check: LOCAL_DISK replica not complete");
        return;
    }
    if (r->seg >= p->nseg_slots || !p->segs[r->seg]) {
        POOL_CHECK_FAIL(ctx, "pool_check: replica on unmounted segment slot %u", r->seg);
        return;
    }
    const struct pool_seg *s = p->segs[r->seg];
    uint64_t off = pool__blk_off(s, r->handle);
    uint64_t cap = pool__blk_size(s, r->handle);
    if (off == UINT64_MAX || cap < o->size || off + o->size > s->size)
        POOL_CHECK_FAIL(ctx, "pool_check: replica outside segment %s", s->name);
    int want = (o->flags & POOL_OF_INFLIGHT) ? POOL_REPLICA_PROCESSING : POOL_REPLICA_COMPLETE;
    if ((o->flags & POOL_OF_TASK) && r->status == POOL_REPLICA_PROCESSING)
        want = POOL_REPLICA_PROCESSING; /* a copy/move target */
    if (r->status != want)
        POOL_CHECK_FAIL(ctx, "pool_check: replica status %u, want %d", r->status, want);
    if ((r->rflags & POOL_RF_MOVE_SRC) && !(o->flags & POOL_OF_MOVE))
        POOL_CHECK_FAIL(ctx, "pool_check: move source outside a move");
    ctx->used[r->seg] += o->size;
    ctx->nbuf[r->seg]++;
}

static void pool_check_obj_cb(struct cm_ht_node *n, void *arg) {
    struct pool_check_ctx *ctx = arg;
    const struct pool_obj *o = (const struct pool_obj *)n;
    const struct pool_rep *reps = pool__reps(o);
    if (o->nrep == 0 || o->nrep > POOL_MAX_REPLICAS)
        POOL_CHECK_FAIL(ctx, "pool_check: object with %u replicas", o->nrep);
    if (o->size == 0)
        POOL_CHECK_FAIL(ctx, "pool_check: object of size 0");
    for (uint32_t i = 0; i < o->nrep; i++) {
        for (uint32_t j = 0; j < i; j++)
            if (reps[i].seg == reps[j].seg && reps[i].type == reps[j].type)
                POOL_CHECK_FAIL(ctx, "pool_check: two replicas on segment slot %u", reps[i].seg);
        pool_check_rep(ctx, o, &reps[i]);
    }
    if ((o->flags & POOL_OF_INFLIGHT) && (o->flags & POOL_OF_TASK))
        POOL_CHECK_FAIL(ctx, "pool_check: a write and a task at once");
    if (o->flags & POOL_OF_TASK) {
        int complete = 0;
        for (uint32_t i = 0; i < o->nrep; i++)
            complete += reps[i].status == POOL_REPLICA_COMPLETE;
        if (!complete)
            POOL_CHECK_FAIL(ctx, "pool_check: a task without a readable replica");
    }
    if (o->flags & (POOL_OF_INFLIGHT | POOL_OF_TASK)) {
        ctx->inflight++;
        if (!cm_ht_find(&ctx->p->inflight, pool_ptr_hash(ctx->p, o), o, sizeof(o),
                        pool_inflight_eq))
            POOL_CHECK_FAIL(ctx, "pool_check: in-flight object missing from the set");
    }
}

static void pool_check_segs(struct pool_check_ctx *ctx) {
    const struct pool *p = ctx->p;
    uint32_t live = 0;
    for (size_t i = 0; i < p->ndiscards; i++) {
        const struct pool_discard *d = &p->discards[i];
        if (d->seg >= p->nseg_slots || !p->segs[d->seg]) {
            POOL_CHECK_FAIL(ctx, "pool_check: discarded buffer on unmounted segment");
            continue;
        }
        ctx->used[d->seg] += d->size;
        ctx->nbuf[d->seg]++;
    }
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        const struct pool_seg *s = p->segs[i];
        if (!s)
            continue;
        live++;
        struct cm_tlsf_stats ts = {.nallocs = s->nbuffers}; /* a shared allocator counts others' */
        if (s->alloc)
            cm_tlsf_get_stats(s->alloc, &ts);
        if (s->used != ctx->used[i] || s->nbuffers != ctx->nbuf[i] || ts.nallocs != s->nbuffers)
            POOL_CHECK_FAIL(ctx, "pool_check: segment %s used %llu/%llu buffers %llu/%llu/%llu",
                            s->name, (unsigned long long)s->used, (unsigned long long)ctx->used[i],
                            (unsigned long long)s->nbuffers, (unsigned long long)ctx->nbuf[i],
                            (unsigned long long)ts.nallocs);
        if (s->alloc && cm_tlsf_check(s->alloc) != 0)
            POOL_CHECK_FAIL(ctx, "pool_check: allocator of %s corrupt", s->name);
        if (s->slot != i)
            POOL_CHECK_FAIL(ctx, "pool_check: segment slot mismatch");
    }
    if (live != p->nsegs)
        POOL_CHECK_FAIL(ctx, "pool_check: %u segments counted, %u live", p->nsegs, live);
    for (uint32_t i = 0; i < p->nsegs && !ctx->bad; i++)
        if (p->live[i] >= p->nseg_slots || !p->segs[p->live[i]] ||
            p->segs[p->live[i]]->live_idx != i)
            POOL_CHECK_FAIL(ctx, "pool_check: live segment index %u broken", i);
}

/* Walks everything and checks the invariants listed in pool.h. Returns 0 or
 * POOL_EINTERNAL_ERROR (the first violation is logged). */
int pool_check(const struct pool *p) {
    struct pool_check_ctx ctx = {.p = p};
    size_t n = p->nseg_slots ? p->nseg_slots : 1;
    ctx.used = cm_calloc(n, sizeof(uint64_t));
    ctx.nbuf = cm_calloc(n, sizeof(uint64_t));
    cm_ht_foreach((struct cm_ht *)&p->objects, pool_check_obj_cb, &ctx);
    if (ctx.inflight != cm_ht_count(&p->inflight))
        POOL_CHECK_FAIL(&ctx, "pool_check: %llu in-flight objects, set holds %zu",
                        (unsigned long long)ctx.inflight, cm_ht_count(&p->inflight));
    pool_check_segs(&ctx);
    uint32_t clients = 0;
    for (uint32_t i = 0; i < p->nclient_slots; i++)
        clients += p->clients[i] != NULL;
    if (clients != p->nclients || clients != cm_ht_count(&p->clients_by_id))
        POOL_CHECK_FAIL(&ctx, "pool_check: client count mismatch");
    cm_free(ctx.used);
    cm_free(ctx.nbuf);
    return ctx.bad ? POOL_EINTERNAL_ERROR : POOL_OK;
}
