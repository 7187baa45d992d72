/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool eviction and periodic housekeeping. Eviction samples the object table with a scan
 * cursor that persists across cycles, keeps the best candidates (oldest lease first,
 * soft-pinned last) in a small pool the way Redis's eviction pool does, and drops the best one;
 * every victim costs about evict_sample examined objects. pool_tick() expires silent clients,
 * releases zombie puts and discarded buffers, completes graceful unmounts and evicts above the
 * high watermark.
 */
#include "common/fmacros.h"

#include "server/pool/pool_int.h"

#include <math.h>
#include <string.h>

#define POOL_EVPOOL_SIZE      16
#define POOL_EVICT_MISS_LIMIT 64 /* x evict_sample non-evictable samples in a row end a pass */

/*
 * Returns 1 when o may be evicted at now: not being written, not hard-pinned, no active lease,
 * unless soft_ok no active soft pin, and a MEMORY replica to free.
 */
int pool__evictable(const struct pool_obj *o, int64_t now, int soft_ok) {
    if (o->flags & (POOL_OF_INFLIGHT | POOL_OF_TASK | POOL_OF_HARD_PIN))
        return 0;
    if (o->lease_until > now)
        return 0;
    if (!soft_ok && (o->flags & POOL_OF_SOFT_PIN) && o->t_aux > now)
        return 0;
    return pool__has_mem_rep(o); /* LOCAL_DISK replicas are the owner's to evict */
}

/* Candidates sorted by (soft-pinned, lease_until) ascending: entry 0 is the next victim. */
struct pool_evpool {
    struct pool_obj *obj[POOL_EVPOOL_SIZE];
    int64_t when[POOL_EVPOOL_SIZE];
    uint8_t soft[POOL_EVPOOL_SIZE];
    uint32_t n;
};

struct pool_evict_ctx {
    struct pool *p;
    int64_t now;
    int soft_ok;
    uint32_t only_seg; /* POOL_NO_SLOT, or: only objects with a memory replica there */
    uint64_t examined;
    uint64_t misses; /* objects examined since the last evictable one */
    struct pool_evpool ev;
};

static int pool_ev_before(uint8_t sa, int64_t wa, uint8_t sb, int64_t wb) {
    return sa != sb ? sa < sb : wa < wb;
}

static void pool_ev_insert(struct pool_evpool *ev, struct pool_obj *o, uint8_t soft) {
    for (uint32_t i = 0; i < ev->n; i++)
        if (ev->obj[i] == o)
            return;
    uint32_t at = ev->n;
    while (at > 0 && pool_ev_before(soft, o->lease_until, ev->soft[at - 1], ev->when[at - 1]))
        at--;
    if (at == POOL_EVPOOL_SIZE)
        return; /* worse than every candidate of a full pool */
    uint32_t last = ev->n < POOL_EVPOOL_SIZE ? ev->n : POOL_EVPOOL_SIZE - 1;
    for (uint32_t i = last; i > at; i--) {
        ev->obj[i] = ev->obj[i - 1];
        ev->when[i] = ev->when[i - 1];
        ev->soft[i] = ev->soft[i - 1];
    }
    ev->obj[at] = o;
    ev->when[at] = o->lease_until;
    ev->soft[at] = soft;
    if (ev->n < POOL_EVPOOL_SIZE)
        ev->n++;
}

static struct pool_obj *pool_ev_pop(struct pool_evpool *ev) {
    struct pool_obj *o = ev->obj[0];
    ev->n--;
    memmove(ev->obj, ev->obj + 1, ev->n * sizeof(ev->obj[0]));
    memmove(ev->when, ev->when + 1, ev->n * sizeof(ev->when[0]));
    memmove(ev->soft, ev->soft + 1, ev->n * sizeof(ev->soft[0]));
    return o;
}

/* 1 when slot is POOL_NO_SLOT or o has a memory replica on segment slot. */
static int pool_obj_on(const struct pool_obj *o, uint32_t slot) {
    if (slot == POOL_NO_SLOT)
        return 1;
    for (uint32_t i = 0; i < o->nrep; i++)
        if (pool__reps(o)[i].type == POOL_REPLICA_MEMORY && pool__reps(o)[i].seg == slot)
            return 1;
    return 0;
}

static void pool_evict_sample_cb(struct cm_ht_node *n, void *arg) {
    struct pool_evict_ctx *ctx = arg;
    struct pool_obj *o = (struct pool_obj *)n;
    ctx->examined++;
    if (!pool__evictable(o, ctx->now, ctx->soft_ok) || !pool_obj_on(o, ctx->only_seg)) {
        ctx->misses++;
        return;
    }
    ctx->misses = 0;
    uint8_t soft = (o->flags & POOL_OF_SOFT_PIN) && o->t_aux > ctx->now;
    pool_ev_insert(&ctx->ev, o, soft);
}

/*
 * Returns the next victim: scans buckets from the persistent cursor until evict_sample fresh
 * objects were examined (and a candidate exists). Gives up, returning NULL when no candidate
 * is pending, once the whole table was covered, the bucket budget of the cycle is spent, or
 * POOL_EVICT_MISS_LIMIT samples in a row were not evictable (a pool full of protected objects
 * then costs O(limit) per call, not a full scan; the cursor resumes there next time).
 */
static struct pool_obj *pool_next_victim(struct pool_evict_ctx *ctx, uint64_t *budget) {
    struct pool *p = ctx->p;
    size_t nb = cm_ht_buckets(&p->objects), scanned = 0;
    uint64_t start = ctx->examined;
    uint64_t miss_limit = (uint64_t)POOL_EVICT_MISS_LIMIT * p->cfg.evict_sample;
    for (;;) {
        int enough = ctx->ev.n > 0 && ctx->examined - start >= p->cfg.evict_sample;
        int exhausted = scanned >= nb || *budget == 0 || cm_ht_count(&p->objects) == 0 ||
                        ctx->misses >= miss_limit;
        if (enough || exhausted)
            break;
        p->evict_cursor = cm_ht_scan(&p->objects, p->evict_cursor, pool_evict_sample_cb, ctx);
        scanned++;
        (*budget)--;
    }
    return ctx->ev.n ? pool_ev_pop(&ctx->ev) : NULL;
}

static int pool_rep_is_mem(const struct pool *p, const struct pool_rep *r, void *arg) {
    (void)p;
    (void)arg;
    return r->type == POOL_REPLICA_MEMORY;
}

/*
 * Evicts victim o: an object with a LOCAL_DISK replica loses its memory replicas only; others
 * are queued for offload (offload_on_evict) or offered to the hook, which may keep them.
 * Returns the value bytes freed.
 */
static uint64_t pool_evict_one(struct pool *p, struct pool_obj *o, int soft) {
    if (pool__has_disk_rep(o)) {
        uint64_t nmem = 0;
        for (uint32_t i = 0; i < o->nrep; i++)
            nmem += pool__reps(o)[i].type == POOL_REPLICA_MEMORY;
        pool__drop_reps_if(p, o, pool_rep_is_mem, NULL);
        p->evicted++;
        return o->size * nmem; /* o survives: it still holds its LOCAL_DISK replica */
    }
    if (pool__offload_victim(p, o) == POOL_EVICT_KEEP) {
        p->evict_skipped++;
        return 0;
    }
    if (p->cfg.on_evict) {
        struct pool_evict_event ev = {.key = o->key,
                                      .klen = o->klen,
                                      .size = o->size,
                                      .nreplicas = o->nrep,
                                      .soft_pinned = soft};
        if (p->cfg.on_evict(p->cfg.on_evict_arg, &ev) == POOL_EVICT_KEEP) {
            p->evict_skipped++;
            return 0;
        }
    }
    uint64_t freed = o->size * o->nrep;
    pool__emit(p, POOL_EVENT_EVICTED, o);
    pool__obj_destroy(p, o);
    p->evicted++;
    return freed;
}

/* Runs one pass: evicts while fewer than target_n objects or low_bytes were freed (counting
 * one replica per victim when only_seg names a segment). */
static void pool_evict_pass(struct pool *p, int64_t now, int soft_ok, uint32_t only_seg,
                            uint64_t target_n, uint64_t low_bytes, uint64_t *count,
                            uint64_t *freed) {
    struct pool_evict_ctx ctx = {.p = p, .now = now, .soft_ok = soft_ok, .only_seg = only_seg};
    uint64_t budget = 4 * (uint64_t)cm_ht_buckets(&p->objects) + 64;
    while (*count < target_n || *freed < low_bytes) {
        struct pool_obj *o = pool_next_victim(&ctx, &budget);
        if (!o)
            break;
        int soft = (o->flags & POOL_OF_SOFT_PIN) && o->t_aux > now;
        uint64_t size = o->size;
        uint64_t f = pool_evict_one(p, o, soft);
        if (f && only_seg != POOL_NO_SLOT)
            f = size;
        if (f) {
            *freed += f;
            (*count)++;
        }
    }
    p->evict_examined += ctx.examined;
}

/* One eviction cycle; see pool.h. */
uint64_t pool_evict(struct pool *p, int64_t now, uint64_t need_bytes) {
    uint64_t nobj = cm_ht_count(&p->objects);
    if (nobj == 0 || p->cfg.eviction_ratio <= 0)
        return 0;
    uint64_t cap = 0, used = 0;
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        if (p->segs[i]) {
            cap += p->segs[i]->size;
            used += pool__seg_pressure(p->segs[i]);
        }
    }
    double hw = p->cfg.eviction_high_watermark_ratio;
    double used_ratio = cap ? (double)used / (double)cap : 0;
    double ratio = p->cfg.eviction_ratio;
    if (used_ratio - hw + ratio > ratio)
        ratio = used_ratio - hw + ratio;
    if (ratio > 1)
        ratio = 1;
    uint64_t target_n = (uint64_t)ceil((double)nobj * ratio);
    uint64_t low_bytes = need_bytes;
    double over = (double)used - hw * (double)cap;
    if (over > (double)low_bytes)
        low_bytes = (uint64_t)over;
    uint64_t count = 0, freed = 0;
    p->offload_cycle = 0;
    pool_evict_pass(p, now, 0, POOL_NO_SLOT, target_n, low_bytes, &count, &freed);
    if (freed < low_bytes && p->cfg.allow_evict_soft_pinned)
        pool_evict_pass(p, now, 1, POOL_NO_SLOT, 0, low_bytes, &count, &freed);
    return count;
}

/* Evicts objects with a replica on one segment; see pool.h. */
uint64_t pool_evict_segment(struct pool *p, const char *name, int64_t now, uint64_t need_bytes) {
    const struct pool_seg *s = pool__seg_find(p, name);
    if (!s || cm_ht_count(&p->objects) == 0 || p->cfg.eviction_ratio <= 0)
        return 0;
    uint64_t count = 0, freed = 0, want = need_bytes ? need_bytes : 1;
    p->offload_cycle = 0;
    pool_evict_pass(p, now, 0, s->slot, 0, want, &count, &freed);
    if (freed < want && p->cfg.allow_evict_soft_pinned)
        pool_evict_pass(p, now, 1, s->slot, 0, want, &count, &freed);
    return count;
}

/* ---- housekeeping ------------------------------------------------------------------------ */

static uint32_t pool_expire_clients(struct pool *p, int64_t now) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->nclient_slots; i++) {
        struct pool_client *c = p->clients[i];
        if (c && !c->local && now - c->last_ping > p->cfg.client_live_ttl_ms) {
            pool__client_expire(p, c);
            n++;
        }
    }
    return n;
}

struct pool_zombie_ctx {
    struct pool *p;
    int64_t now;
    uint32_t n;
};

static void pool_zombie_cb(struct cm_ht_node *n, void *arg) {
    struct pool_zombie_ctx *ctx = arg;
    struct pool_inflight *f = (struct pool_inflight *)n;
    struct pool_obj *o = f->obj;
    if (ctx->now - f->since < ctx->p->cfg.put_start_release_timeout_ms)
        return;
    if (o->flags & POOL_OF_INFLIGHT)
        pool__obj_destroy(ctx->p, o); /* also unlinks and frees n */
    else
        pool__task_revoke(ctx->p, o); /* an abandoned copy/move; frees n */
    ctx->n++;
}

static uint32_t pool_release_discards(struct pool *p, int64_t now) {
    size_t kept = 0;
    uint32_t freed = 0;
    for (size_t i = 0; i < p->ndiscards; i++) {
        struct pool_discard *d = &p->discards[i];
        if (d->release_at > now) {
            p->discards[kept++] = *d;
            continue;
        }
        struct pool_rep r = {.seg = d->seg, .handle = d->handle, .type = POOL_REPLICA_MEMORY};
        pool__rep_free(p, &r, d->size);
        freed++;
    }
    p->ndiscards = kept;
    return freed;
}

static uint32_t pool_finish_graceful(struct pool *p, int64_t now) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        struct pool_seg *s = p->segs[i];
        if (s && s->status == POOL_SEG_GRACEFULLY_UNMOUNTING &&
            (s->nbuffers == 0 || now >= s->grace_until)) {
            s->dying = 1;
            n++;
        }
    }
    if (n)
        pool__unmount_dying(p);
    return n;
}

static int pool_above_watermark(const struct pool *p) {
    uint64_t cap = 0, used = 0;
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        if (p->segs[i]) {
            cap += p->segs[i]->size;
            used += pool__seg_pressure(p->segs[i]);
        }
    }
    return cap && (double)used > p->cfg.eviction_high_watermark_ratio * (double)cap;
}

/* Periodic housekeeping; see pool.h. */
void pool_tick(struct pool *p, int64_t now, struct pool_tick_report *report) {
    struct pool_tick_report r;
    memset(&r, 0, sizeof(r));
    r.clients_expired = pool_expire_clients(p, now);
    struct pool_zombie_ctx z = {.p = p, .now = now};
    cm_ht_foreach(&p->inflight, pool_zombie_cb, &z);
    r.zombies_released = z.n;
    r.discarded_freed = pool_release_discards(p, now);
    r.segments_unmounted = pool_finish_graceful(p, now);
    if (p->need_evict || pool_above_watermark(p)) {
        p->need_evict = 0;
        r.objects_evicted = pool_evict(p, now, 0);
    }
    if (report)
        *report = r;
}
