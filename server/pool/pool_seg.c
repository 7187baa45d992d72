/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool segments: mount, remount, unmount (immediate and graceful), queries, and replica
 * placement. Every segment owns a TLSF offset allocator over [0, size); placement puts the
 * replicas of one object on distinct segments, trying preferred segments first, then the
 * writer's host (local_first / prefer_same_node), then the pool's strategy (random start with
 * a consecutive scan, or emptiest first).
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "common/cm_tlsf.h"
#include "server/pool/pool_int.h"

#include <string.h>

/* Finds a mounted segment by name, or NULL. O(segments). */
struct pool_seg *pool__seg_find(const struct pool *p, const char *name) {
    if (!name)
        return NULL;
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        struct pool_seg *s = p->segs[i];
        if (s && strcmp(s->name, name) == 0)
            return s;
    }
    return NULL;
}

static uint32_t pool_seg_slot(struct pool *p) {
    for (uint32_t i = 0; i < p->nseg_slots; i++)
        if (!p->segs[i])
            return i;
    uint32_t n = p->nseg_slots ? 2 * p->nseg_slots : 8;
    p->segs = cm_realloc(p->segs, n * sizeof(*p->segs));
    p->live = cm_realloc(p->live, n * sizeof(*p->live));
    memset(p->segs + p->nseg_slots, 0, (n - p->nseg_slots) * sizeof(*p->segs));
    uint32_t slot = p->nseg_slots;
    p->nseg_slots = n;
    return slot;
}

static int pool_str_ok(const char *s, int required) {
    if (!s)
        return !required;
    size_t n = strlen(s);
    return (n > 0 || !required) && n <= POOL_MAX_NAME_LEN;
}

static int pool_spec_valid(const struct pool_segment_spec *spec) {
    if (!spec || !pool_str_ok(spec->name, 1) || !pool_str_ok(spec->endpoint, 0) ||
        !pool_str_ok(spec->protocol, 0))
        return 0;
    if (spec->size < POOL_MIN_SEGMENT || spec->size > POOL_MAX_SEGMENT)
        return 0;
    if (spec->base > UINT64_MAX - spec->size)
        return 0;
    if (spec->desc_len > POOL_MAX_DESC_LEN || (spec->desc_len && !spec->desc))
        return 0;
    return 1;
}

/* Source of pool_seg.gen: process-wide, so no two segment states of any pool share one. */
static uint64_t pool_seg_gen_next = 1;

static void pool_seg_set_transport(struct pool_seg *s, const struct pool_segment_spec *spec) {
    s->gen = __atomic_fetch_add(&pool_seg_gen_next, 1, __ATOMIC_RELAXED);
    cm_free(s->endpoint);
    cm_free(s->protocol);
    cm_free(s->desc);
    s->endpoint = cm_strdup(spec->endpoint ? spec->endpoint : "");
    s->protocol = cm_strdup(spec->protocol ? spec->protocol : "tcp");
    s->desc = NULL;
    s->desc_len = spec->desc_len;
    if (spec->desc_len) {
        s->desc = cm_malloc(spec->desc_len);
        memcpy(s->desc, spec->desc, spec->desc_len);
    }
}

static int pool_overlaps_own(const struct pool *p, uint32_t owner,
                             const struct pool_segment_spec *spec) {
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        const struct pool_seg *s = p->segs[i];
        if (s && s->owner == owner && spec->base < s->base + s->size &&
            s->base < spec->base + spec->size)
            return 1;
    }
    return 0;
}

/*
 * Mounts spec for client with its own TLSF (alloc NULL) or with the shared allocator alloc.
 * Returns a pool code.
 */
static int pool_seg_mount(struct pool *p, const struct pool_uuid *client,
                          const struct pool_segment_spec *spec,
                          const struct pool_seg_allocator *ext, int64_t now) {
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!pool_spec_valid(spec))
        return POOL_EINVALID_PARAMS;
    if (now > c->last_ping)
        c->last_ping = now;
    struct pool_seg *s = pool__seg_find(p, spec->name);
    if (s) {
        if (s->owner != c->slot || s->base != spec->base || s->size != spec->size ||
            !s->alloc != !!ext)
            return POOL_ESEGMENT_ALREADY_EXISTS;
        pool_seg_set_transport(s, spec);
        return POOL_OK;
    }
    if (pool_overlaps_own(p, c->slot, spec))
        return POOL_EINVALID_PARAMS;
    struct cm_tlsf *alloc = NULL;
    if (!ext && !(alloc = cm_tlsf_create(spec->size, p->cfg.alloc_align)))
        return POOL_EINVALID_PARAMS;
    s = cm_calloc(1, sizeof(*s));
    if (ext) {
        s->ext = *ext;
        c->local = 1;
    }
    s->name = cm_strdup(spec->name);
    pool_seg_set_transport(s, spec);
    s->base = spec->base;
    s->size = spec->size;
    s->owner = c->slot;
    s->status = POOL_SEG_OK;
    s->alloc = alloc;
    s->slot = pool_seg_slot(p);
    p->segs[s->slot] = s;
    s->live_idx = p->nsegs;
    p->live[p->nsegs++] = s->slot;
    c->nsegs++;
    return POOL_OK;
}

/* Mounts a segment; see pool.h for the rules and errors. */
int pool_segment_mount(struct pool *p, const struct pool_uuid *client,
                       const struct pool_segment_spec *spec, int64_t now) {
    return pool_seg_mount(p, client, spec, NULL, now);
}

/* Mounts a segment over a shared allocator; see pool.h. */
int pool_segment_mount_shared(struct pool *p, const struct pool_uuid *client,
                              const struct pool_segment_spec *spec,
                              const struct pool_seg_allocator *alloc, int64_t now) {
    if (!alloc || !alloc->alloc || !alloc->free || !alloc->offset || !alloc->block_size ||
        !alloc->used)
        return POOL_EINVALID_PARAMS;
    return pool_seg_mount(p, client, spec, alloc, now);
}

/* Remounts every segment of a client after NEED_REMOUNT; see pool.h. */
int pool_segment_remount(struct pool *p, const struct pool_uuid *client,
                         const struct pool_segment_spec *specs, size_t n, int64_t now) {
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (n && !specs)
        return POOL_EINVALID_PARAMS;
    if (now > c->last_ping)
        c->last_ping = now;
    for (size_t i = 0; i < n; i++) {
        int rc = pool_segment_mount(p, client, &specs[i], now);
        if (rc != POOL_OK)
            return rc;
    }
    return POOL_OK;
}

static void pool_seg_free(struct pool *p, struct pool_seg *s) {
    struct pool_client *owner = s->owner < p->nclient_slots ? p->clients[s->owner] : NULL;
    if (owner)
        owner->nsegs--;
    p->segs[s->slot] = NULL;
    uint32_t last = p->live[--p->nsegs];
    p->live[s->live_idx] = last;
    if (p->segs[last]) /* NULL when s was the last entry itself */
        p->segs[last]->live_idx = s->live_idx;
    cm_tlsf_destroy(s->alloc);
    cm_free(s->name);
    cm_free(s->endpoint);
    cm_free(s->protocol);
    cm_free(s->desc);
    cm_free(s);
}

static int pool_rep_on_dying(const struct pool *p, const struct pool_rep *r, void *arg) {
    (void)arg;
    return r->type == POOL_REPLICA_MEMORY && r->seg < p->nseg_slots && p->segs[r->seg] &&
           p->segs[r->seg]->dying;
}

static void pool_drop_dying_cb(struct cm_ht_node *n, void *arg) {
    struct pool *p = arg;
    pool__drop_reps_if(p, (struct pool_obj *)n, pool_rep_on_dying, NULL);
}

/*
 * Unmounts every segment marked dying: one pass over the objects drops their replicas there
 * (erasing objects left with none), discarded buffers on them are forgotten, and the segments
 * and their allocators are freed. O(objects + segments + discarded).
 */
void pool__unmount_dying(struct pool *p) {
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        if (p->segs[i] && p->segs[i]->dying) {
            p->segs[i]->status = POOL_SEG_UNMOUNTING;
            if (p->cfg.on_seg_drop)
                p->cfg.on_seg_drop(p->cfg.on_seg_drop_arg, p->segs[i]->name);
        }
    }
    cm_ht_foreach(&p->objects, pool_drop_dying_cb, p);
    size_t kept = 0;
    for (size_t i = 0; i < p->ndiscards; i++) {
        struct pool_discard *d = &p->discards[i];
        if (p->segs[d->seg] && p->segs[d->seg]->dying) {
            if (!p->segs[d->seg]->alloc) /* a shared allocator outlives the segment */
                pool__blk_free(p->segs[d->seg], d->handle);
            continue;
        }
        p->discards[kept++] = *d;
    }
    p->ndiscards = kept;
    for (uint32_t i = 0; i < p->nseg_slots; i++)
        if (p->segs[i] && p->segs[i]->dying)
            pool_seg_free(p, p->segs[i]);
}

static int pool_seg_owned(struct pool *p, const struct pool_uuid *client, const char *name,
                          struct pool_seg **out) {
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    struct pool_seg *s = pool__seg_find(p, name);
    if (!s)
        return POOL_ESEGMENT_NOT_FOUND;
    if (s->owner != c->slot)
        return POOL_EILLEGAL_CLIENT;
    *out = s;
    return POOL_OK;
}

/* Unmounts a segment now; see pool.h. */
int pool_segment_unmount(struct pool *p, const struct pool_uuid *client, const char *name,
                         int64_t now) {
    (void)now;
    struct pool_seg *s;
    int rc = pool_seg_owned(p, client, name, &s);
    if (rc != POOL_OK)
        return rc;
    s->dying = 1;
    pool__unmount_dying(p);
    return POOL_OK;
}

/* Starts a graceful unmount; see pool.h. */
int pool_segment_unmount_graceful(struct pool *p, const struct pool_uuid *client, const char *name,
                                  int64_t grace_ms, int64_t now) {
    struct pool_seg *s;
    int rc = pool_seg_owned(p, client, name, &s);
    if (rc != POOL_OK)
        return rc;
    if (grace_ms < 0)
        return POOL_EINVALID_PARAMS;
    if (s->status != POOL_SEG_OK)
        return POOL_EUNAVAILABLE_IN_CURRENT_STATUS;
    s->status = POOL_SEG_GRACEFULLY_UNMOUNTING;
    s->grace_until = now + grace_ms;
    return POOL_OK;
}

static void pool_seg_info(const struct pool *p, const struct pool_seg *s,
                          struct pool_segment_info *out) {
    const struct pool_client *c = s->owner < p->nclient_slots ? p->clients[s->owner] : NULL;
    struct cm_tlsf_stats ts = {0};
    if (s->alloc)
        cm_tlsf_get_stats(s->alloc, &ts);
    else /* shared: every byte allocated in the space, the other user's too */
        ts.used = pool__seg_pressure(s);
    memset(out, 0, sizeof(*out));
    out->name = s->name;
    if (c) {
        out->owner = c->id;
        out->owner_host = c->host;
    }
    out->base = s->base;
    out->size = s->size;
    out->endpoint = s->endpoint;
    out->protocol = s->protocol;
    out->desc = s->desc;
    out->desc_len = s->desc_len;
    out->status = s->status;
    out->used = s->alloc ? s->used : ts.used;
    out->allocated = ts.used;
    out->nbuffers = s->nbuffers;
    out->grace_until = s->grace_until;
}

/* Describes segment name; see pool.h. */
int pool_segment_query(const struct pool *p, const char *name, struct pool_segment_info *out) {
    const struct pool_seg *s = pool__seg_find(p, name);
    if (!s)
        return POOL_ESEGMENT_NOT_FOUND;
    pool_seg_info(p, s, out);
    return POOL_OK;
}

/* Visits every mounted segment in slot order. */
void pool_segment_foreach(const struct pool *p, pool_segment_visit_cb *cb, void *arg) {
    for (uint32_t i = 0; i < p->nseg_slots; i++) {
        if (!p->segs[i])
            continue;
        struct pool_segment_info info;
        pool_seg_info(p, p->segs[i], &info);
        cb(arg, &info);
    }
}

/* Checks that [addr, addr + len) lies inside segment name; see pool.h. */
int pool_segment_check_range(const struct pool *p, const char *name, uint64_t addr, uint64_t len) {
    const struct pool_seg *s = pool__seg_find(p, name);
    if (!s)
        return POOL_ESEGMENT_NOT_FOUND;
    if (len == 0 || addr < s->base || len > s->size || addr - s->base > s->size - len)
        return POOL_EINVALID_PARAMS;
    return POOL_OK;
}

/* Frees every segment (pool teardown; objects must already be gone). */
void pool__segs_fini(struct pool *p) {
    for (uint32_t i = 0; i < p->nseg_slots; i++)
        if (p->segs[i])
            pool_seg_free(p, p->segs[i]);
    cm_free(p->segs);
    cm_free(p->live);
    p->live = NULL;
    p->segs = NULL;
    p->nseg_slots = 0;
}

/* ---- allocation and placement ------------------------------------------------------------ */

/*
 * Allocates a buffer of size bytes in s and describes it in *r as a PROCESSING MEMORY replica.
 * Returns 0, or -1 when s takes no allocation or has no block large enough. A block that
 * would end outside the segment is refused (it cannot happen with a sound allocator).
 */
int pool__seg_alloc(struct pool *p, struct pool_seg *s, uint64_t size, struct pool_rep *r) {
    (void)p;
    if (s->status != POOL_SEG_OK || size > s->size)
        return -1;
    uint64_t off = 0;
    uint32_t h =
        s->alloc ? cm_tlsf_alloc(s->alloc, size, &off) : s->ext.alloc(s->ext.arg, size, &off);
    if (!h)
        return -1;
    if (off > s->size - size) {
        pool__blk_free(s, h);
        return -1;
    }
    s->used += size;
    s->nbuffers++;
    r->seg = s->slot;
    r->handle = h;
    r->type = POOL_REPLICA_MEMORY;
    r->status = POOL_REPLICA_PROCESSING;
    r->rflags = 0;
    r->pad_ = 0;
    return 0;
}

/* State of one placement: replicas found so far and segments already tried. */
struct pool_place {
    struct pool *p;
    uint64_t size;
    struct pool_rep *reps;
    uint32_t n, want;
    uint32_t tried[64];
    uint32_t ntried;
};

static int pool_place_seen(const struct pool_place *pl, uint32_t slot) {
    for (uint32_t i = 0; i < pl->n; i++)
        if (pl->reps[i].seg == slot)
            return 1;
    for (uint32_t i = 0; i < pl->ntried; i++)
        if (pl->tried[i] == slot)
            return 1;
    return 0;
}

/* Tries segment s for the next replica; remembers a failure so s is not tried again. */
static void pool_place_try(struct pool_place *pl, struct pool_seg *s) {
    if (!s || pl->n >= pl->want || pool_place_seen(pl, s->slot))
        return;
    if (pool__seg_alloc(pl->p, s, pl->size, &pl->reps[pl->n]) == 0)
        pl->n++;
    else if (pl->ntried < 64)
        pl->tried[pl->ntried++] = s->slot;
}

static int pool_same_host(const struct pool *p, const struct pool_seg *s, const char *host) {
    const struct pool_client *c = s->owner < p->nclient_slots ? p->clients[s->owner] : NULL;
    return c && host && strcmp(c->host, host) == 0;
}

/*
 * Scans every mounted segment once, starting at a uniformly random one; host, when set,
 * restricts the scan to segments of that host.
 */
static void pool_place_scan(struct pool_place *pl, const char *host) {
    struct pool *p = pl->p;
    if (p->nsegs == 0)
        return;
    uint32_t start = (uint32_t)(pool__rand(p) % p->nsegs);
    for (uint32_t i = 0; i < p->nsegs && pl->n < pl->want; i++) {
        struct pool_seg *s = p->segs[p->live[(start + i) % p->nsegs]];
        if (s && (!host || pool_same_host(p, s, host)))
            pool_place_try(pl, s);
    }
}

/* free_ratio_first: repeatedly tries the allocatable segment with the most free space. */
static void pool_place_free_ratio(struct pool_place *pl) {
    struct pool *p = pl->p;
    while (pl->n < pl->want && pl->ntried < 64) {
        struct pool_seg *best = NULL;
        double best_ratio = -1;
        for (uint32_t i = 0; i < p->nseg_slots; i++) {
            struct pool_seg *s = p->segs[i];
            if (!s || s->status != POOL_SEG_OK || pool_place_seen(pl, i))
                continue;
            uint64_t used = pool__seg_pressure(s);
            double ratio = used >= s->size ? 0 : (double)(s->size - used) / (double)s->size;
            if (ratio > best_ratio) {
                best_ratio = ratio;
                best = s;
            }
        }
        if (!best)
            return;
        pool_place_try(pl, best);
    }
}

/*
 * Places up to cfg->replica_num PROCESSING buffers of size bytes for writer on distinct
 * segments, filling reps (room for POOL_MAX_REPLICAS). Returns how many were placed (0 when
 * nothing fits).
 */
int pool__place(struct pool *p, const struct pool_client *writer, uint64_t size,
                const struct pool_put_config *cfg, struct pool_rep *reps) {
    struct pool_place pl = {.p = p, .size = size, .reps = reps, .want = cfg->replica_num};
    for (size_t i = 0; i < cfg->npreferred && pl.n < pl.want; i++)
        pool_place_try(&pl, pool__seg_find(p, cfg->preferred_segments[i]));
    if (cfg->prefer_same_node || p->cfg.strategy == POOL_STRATEGY_LOCAL_FIRST)
        pool_place_scan(&pl, writer->host);
    if (p->cfg.strategy == POOL_STRATEGY_FREE_RATIO_FIRST)
        pool_place_free_ratio(&pl);
    pool_place_scan(&pl, NULL);
    return (int)pl.n;
}
