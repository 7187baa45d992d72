/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client SSD tiers in the pool: one local-disk segment per client (no allocator: the client's
 * storage backend places the bytes), a FIFO offload queue per client filled at put end or at
 * eviction, task fetch with a read lease, and LOCAL_DISK replicas added on the client's report.
 * A LOCAL_DISK replica stores its owner's client slot in pool_rep.seg; it holds no pool buffer.
 * Not thread-safe, like the rest of the pool.
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "server/pool/pool_int.h"

#include <string.h>

/* A queued task: a copy of the key (the object may go meanwhile) and its size at queue time. */
struct pool_oq_ent {
    char *key;
    size_t klen;
};

/*
 * A fetched task whose report is pending: the object it was fetched from (0 once that object
 * was removed or replaced, so a late report cannot attach old bytes to a new value). Keyed by
 * the key's hash in the owner's pending table.
 */
struct pool_ofl {
    struct cm_ht_node hn;
    uintptr_t obj;
    size_t klen;
    char key[];
};

/* A key whose disk record the owner should delete (the master no longer refers to it). */
struct pool_drm {
    struct cm_ht_node hn;
    size_t klen;
    char key[];
};

/* A client's local-disk segment. */
struct pool_disk {
    char *endpoint;
    struct cm_ht pending;  /* struct pool_ofl */
    struct cm_ht removes;  /* struct pool_drm: records to delete, at most offloading_queue_limit */
    struct pool_oq_ent *q; /* ring of qcap entries; qhead is the oldest */
    size_t qhead, qlen, qcap;
    uint64_t replicas, bytes;
};

static void pool_ofl_free_cb(struct cm_ht_node *n, void *arg) {
    (void)arg;
    cm_free(n);
}

static int pool_ofl_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct pool_ofl *e = (const struct pool_ofl *)n;
    return e->klen == klen && memcmp(e->key, key, klen) == 0;
}

static int pool_drm_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct pool_drm *e = (const struct pool_drm *)n;
    return e->klen == klen && memcmp(e->key, key, klen) == 0;
}

/* Forgets a queued removal of key on d (the record is wanted again). */
static void pool_drm_cancel(const struct pool *p, struct pool_disk *d, const void *key,
                            size_t klen) {
    struct cm_ht_node *n =
        cm_ht_find(&d->removes, pool__key_hash(p, key, klen), key, klen, pool_drm_eq);
    if (n) {
        cm_ht_remove(&d->removes, n);
        cm_free(n);
    }
}

/* Queues the removal of key's record on d (deduplicated; counted and dropped when full). */
static void pool_drm_push(struct pool *p, struct pool_disk *d, const void *key, size_t klen) {
    uint64_t h = pool__key_hash(p, key, klen);
    if (cm_ht_find(&d->removes, h, key, klen, pool_drm_eq))
        return;
    if (cm_ht_count(&d->removes) >= p->cfg.offloading_queue_limit) {
        p->ostats.removes_dropped++;
        return;
    }
    struct pool_drm *e = cm_malloc(sizeof(*e) + klen);
    e->hn.hash = h;
    e->klen = klen;
    memcpy(e->key, key, klen);
    cm_ht_insert(&d->removes, &e->hn);
    p->ostats.removes_queued++;
}

static struct pool_ofl *pool_ofl_find(const struct pool *p, const struct pool_disk *d,
                                      const void *key, size_t klen) {
    return (struct pool_ofl *)cm_ht_find(&d->pending, pool__key_hash(p, key, klen), key, klen,
                                         pool_ofl_eq);
}

/* Frees d, its queue and its pending reports. NULL is accepted. */
void pool__disk_free(struct pool_disk *d) {
    if (!d)
        return;
    cm_ht_clear(&d->pending, pool_ofl_free_cb, NULL);
    cm_ht_fini(&d->pending);
    cm_ht_clear(&d->removes, pool_ofl_free_cb, NULL);
    cm_ht_fini(&d->removes);
    for (size_t i = 0; i < d->qlen; i++)
        cm_free(d->q[(d->qhead + i) % d->qcap].key);
    cm_free(d->q);
    cm_free(d->endpoint);
    cm_free(d);
}

/* The disk of the client in slot, or NULL. */
const struct pool_disk *pool__disk_of_slot(const struct pool *p, uint32_t client_slot) {
    if (client_slot >= p->nclient_slots || !p->clients[client_slot])
        return NULL;
    return p->clients[client_slot]->disk;
}

/*
 * Accounts for the LOCAL_DISK replica r (value size bytes) leaving its object; with key (not
 * NULL) and unless the owner itself said the record is gone (p->disk_quiet), queues the
 * record's removal on the owner.
 */
void pool__disk_rep_gone(struct pool *p, const struct pool_rep *r, uint64_t size, const char *key,
                         size_t klen) {
    if (r->seg >= p->nclient_slots || !p->clients[r->seg] || !p->clients[r->seg]->disk)
        return;
    struct pool_disk *d = p->clients[r->seg]->disk;
    d->replicas--;
    d->bytes -= size;
    p->ostats.disk_replicas--;
    if (key && !p->disk_quiet)
        pool_drm_push(p, d, key, klen);
}

/* The object at from (key) moved to to, or went (to == NULL): pending reports follow it. */
void pool__offload_obj_moved(struct pool *p, const char *key, size_t klen, uintptr_t from,
                             struct pool_obj *to) {
    for (uint32_t i = 0; i < p->nclient_slots; i++) {
        struct pool_client *c = p->clients[i];
        struct pool_ofl *e = c && c->disk ? pool_ofl_find(p, c->disk, key, klen) : NULL;
        if (e && e->obj == from)
            e->obj = (uintptr_t)to;
    }
}

/* Returns 1 when some client's pending report still points at o. */
static int pool_ofl_pending(const struct pool *p, const struct pool_obj *o) {
    for (uint32_t i = 0; i < p->nclient_slots; i++) {
        struct pool_client *c = p->clients[i];
        struct pool_ofl *e = c && c->disk ? pool_ofl_find(p, c->disk, o->key, o->klen) : NULL;
        if (e && e->obj == (uintptr_t)o)
            return 1;
    }
    return 0;
}

/* Returns 1 when o has a LOCAL_DISK replica. */
int pool__has_disk_rep(const struct pool_obj *o) {
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        if (reps[i].type == POOL_REPLICA_LOCAL_DISK)
            return 1;
    return 0;
}

/* Returns 1 when o has a MEMORY replica. */
int pool__has_mem_rep(const struct pool_obj *o) {
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        if (reps[i].type == POOL_REPLICA_MEMORY)
            return 1;
    return 0;
}

/* Descriptor of a LOCAL_DISK replica: the owner's endpoint names the segment; no address. */
void pool__fill_disk_desc(const struct pool *p, const struct pool_obj *o, const struct pool_rep *r,
                          struct pool_replica_desc *d) {
    const struct pool_disk *disk = pool__disk_of_slot(p, r->seg);
    const char *ep = disk ? disk->endpoint : "";
    memset(d, 0, sizeof(*d));
    d->type = POOL_REPLICA_LOCAL_DISK;
    d->status = (enum pool_replica_status)r->status;
    d->segment = ep;
    d->endpoint = ep;
    d->protocol = "offload";
    d->seg_desc = NULL;
    d->seg_desc_len = 0;
    d->addr = 0;
    d->size = o->size;
}

/* The client that should offload o: the owner of the first readable MEMORY replica's segment
 * that has a local-disk segment, or NULL. */
static struct pool_client *pool_offload_owner(const struct pool *p, const struct pool_obj *o) {
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++) {
        const struct pool_rep *r = &reps[i];
        if (r->type != POOL_REPLICA_MEMORY || r->status != POOL_REPLICA_COMPLETE ||
            r->seg >= p->nseg_slots || !p->segs[r->seg])
            continue;
        uint32_t owner = p->segs[r->seg]->owner;
        if (owner < p->nclient_slots && p->clients[owner] && p->clients[owner]->disk)
            return p->clients[owner];
    }
    return NULL;
}

/* Pushes o onto c's queue. Returns 0 or POOL_EKEYS_ULTRA_LIMIT (queue full). */
static int pool_queue_push(struct pool *p, struct pool_client *c, struct pool_obj *o) {
    struct pool_disk *d = c->disk;
    if (d->qlen >= p->cfg.offloading_queue_limit) {
        p->ostats.queue_full++;
        return POOL_EKEYS_ULTRA_LIMIT;
    }
    if (d->qlen == d->qcap) {
        size_t ncap = d->qcap ? 2 * d->qcap : 16;
        struct pool_oq_ent *nq = cm_malloc(ncap * sizeof(*nq));
        for (size_t i = 0; i < d->qlen; i++)
            nq[i] = d->q[(d->qhead + i) % d->qcap];
        cm_free(d->q);
        d->q = nq;
        d->qcap = ncap;
        d->qhead = 0;
    }
    struct pool_oq_ent *e = &d->q[(d->qhead + d->qlen) % d->qcap];
    e->key = cm_malloc(o->klen ? o->klen : 1);
    memcpy(e->key, o->key, o->klen);
    e->klen = o->klen;
    d->qlen++;
    o->flags |= POOL_OF_QUEUED;
    p->ostats.queued++;
    return POOL_OK;
}

/* Eager offload at put end (enable_offload without offload_on_evict). */
void pool__offload_put_end(struct pool *p, struct pool_obj *o) {
    if (!p->cfg.enable_offload || p->cfg.offload_on_evict || (o->flags & POOL_OF_QUEUED) ||
        pool__has_disk_rep(o))
        return;
    struct pool_client *c = pool_offload_owner(p, o);
    if (c)
        (void)pool_queue_push(p, c, o);
}

/*
 * Decides the fate of eviction victim o under offload_on_evict: POOL_EVICT_KEEP when it was
 * queued now or earlier (it stays in memory until offloaded), or kept beyond the per-cycle cap;
 * POOL_EVICT_DROP otherwise (no owner with a disk, offload off, or force-evicted).
 */
int pool__offload_victim(struct pool *p, struct pool_obj *o) {
    if (!p->cfg.enable_offload || !p->cfg.offload_on_evict)
        return POOL_EVICT_DROP;
    if (o->flags & POOL_OF_QUEUED)
        return POOL_EVICT_KEEP;
    struct pool_client *c = pool_offload_owner(p, o);
    if (!c)
        return POOL_EVICT_DROP;
    uint64_t cap = (uint64_t)((double)p->cfg.offloading_queue_limit * p->cfg.offload_cap_ratio);
    if (p->offload_cycle < cap && pool_queue_push(p, c, o) == POOL_OK) {
        p->offload_cycle++;
        return POOL_EVICT_KEEP;
    }
    if (p->cfg.offload_force_evict) {
        p->ostats.force_evicted++;
        return POOL_EVICT_DROP;
    }
    p->ostats.cap_kept++;
    return POOL_EVICT_KEEP;
}

static int pool_rep_disk_of(const struct pool *p, const struct pool_rep *r, void *arg) {
    (void)p;
    return r->type == POOL_REPLICA_LOCAL_DISK && r->seg == *(const uint32_t *)arg;
}

struct pool_disk_drop_ctx {
    struct pool *p;
    uint32_t slot;
};

static void pool_disk_drop_cb(struct cm_ht_node *n, void *arg) {
    struct pool_disk_drop_ctx *ctx = arg;
    struct pool_obj *o = (struct pool_obj *)n;
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++) {
        if (pool_rep_disk_of(ctx->p, &reps[i], &ctx->slot)) {
            pool__drop_reps_if(ctx->p, o, pool_rep_disk_of, &ctx->slot);
            return; /* o may be gone now */
        }
    }
}

/* Drops every LOCAL_DISK replica of c and frees its disk. */
void pool__disk_client_gone(struct pool *p, struct pool_client *c) {
    if (!c->disk)
        return;
    size_t i;
    struct cm_ht_node *hn, *tmp;
    cm_ht_foreach_node(&c->disk->pending, i, hn, tmp) {
        struct pool_ofl *e = (struct pool_ofl *)hn;
        struct pool_obj *o = (struct pool_obj *)e->obj; /* 0 or a live object (see moved) */
        e->obj = 0;
        if (o && !pool_ofl_pending(p, o))
            o->flags &= (uint8_t)~POOL_OF_OFFLOADING;
    }
    if (c->disk->replicas) {
        struct pool_disk_drop_ctx ctx = {.p = p, .slot = c->slot};
        p->disk_quiet = 1; /* the disk and its removal queue go now */
        cm_ht_foreach(&p->objects, pool_disk_drop_cb, &ctx);
        p->disk_quiet = 0;
    }
    pool__disk_free(c->disk);
    c->disk = NULL;
    p->ostats.disks--;
}

/* Mounts a client's local-disk segment; see pool.h. */
int pool_disk_mount(struct pool *p, const struct pool_uuid *client, const char *endpoint,
                    int64_t now) {
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!p->cfg.enable_offload)
        return POOL_EUNABLE_OFFLOAD;
    if (!endpoint || !endpoint[0] || strlen(endpoint) > POOL_MAX_NAME_LEN)
        return POOL_EINVALID_PARAMS;
    if (now > c->last_ping)
        c->last_ping = now;
    if (c->disk) {
        cm_free(c->disk->endpoint);
        c->disk->endpoint = cm_strdup(endpoint);
        return POOL_OK;
    }
    c->disk = cm_calloc(1, sizeof(*c->disk));
    c->disk->endpoint = cm_strdup(endpoint);
    cm_ht_init(&c->disk->pending, 16);
    cm_ht_init(&c->disk->removes, 16);
    p->ostats.disks++;
    return POOL_OK;
}

/* Unmounts a client's local-disk segment; see pool.h. */
int pool_disk_unmount(struct pool *p, const struct pool_uuid *client, int64_t now) {
    (void)now;
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!c->disk)
        return POOL_ESEGMENT_NOT_FOUND;
    pool__disk_client_gone(p, c);
    return POOL_OK;
}

/* Describes a client's local-disk segment; see pool.h. */
int pool_disk_query(const struct pool *p, const struct pool_uuid *client,
                    struct pool_disk_info *out) {
    const struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!c->disk)
        return POOL_ESEGMENT_NOT_FOUND;
    out->endpoint = c->disk->endpoint;
    out->queued = c->disk->qlen;
    out->removes = cm_ht_count(&c->disk->removes);
    out->replicas = c->disk->replicas;
    out->bytes = c->disk->bytes;
    return POOL_OK;
}

/* Index of a readable MEMORY replica of o on a segment owned by client slot, or -1. */
static int pool_own_mem_rep(const struct pool *p, const struct pool_obj *o, uint32_t slot) {
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++) {
        const struct pool_rep *r = &reps[i];
        if (r->type == POOL_REPLICA_MEMORY && r->status == POOL_REPLICA_COMPLETE &&
            r->seg < p->nseg_slots && p->segs[r->seg] && p->segs[r->seg]->owner == slot)
            return (int)i;
    }
    return -1;
}

/* Returns 1 when o has a LOCAL_DISK replica owned by client slot. */
static int pool_has_disk_of(const struct pool_obj *o, uint32_t slot) {
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        if (reps[i].type == POOL_REPLICA_LOCAL_DISK && reps[i].seg == slot)
            return 1;
    return 0;
}

/* The prologue of a heartbeat call on a client's disk: finds the client (CLIENT_NOT_FOUND), checks
 * it has a disk segment (SEGMENT_NOT_FOUND) and the arguments (bad_args: INVALID_PARAMS), and
 * counts the call as a sign of life. Sets *cp and returns POOL_OK, or returns the error. */
static long pool_disk_caller(struct pool *p, const struct pool_uuid *client, int bad_args,
                             int64_t now, struct pool_client **cp) {
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!c->disk)
        return POOL_ESEGMENT_NOT_FOUND;
    if (bad_args)
        return POOL_EINVALID_PARAMS;
    if (now > c->last_ping)
        c->last_ping = now;
    *cp = c;
    return POOL_OK;
}

/* Fetches offload tasks; see pool.h. */
long pool_offload_fetch(struct pool *p, const struct pool_uuid *client, size_t max, int64_t now,
                        struct pool_offload_task *out) {
    struct pool_client *c;
    long err = pool_disk_caller(p, client, max && !out, now, &c);
    if (err != POOL_OK)
        return err;
    struct pool_disk *d = c->disk;
    long n = 0;
    while ((size_t)n < max && d->qlen > 0) {
        struct pool_oq_ent e = d->q[d->qhead];
        d->qhead = (d->qhead + 1) % d->qcap;
        d->qlen--;
        struct pool_obj *o = pool__obj_find(p, e.key, e.klen, pool__key_hash(p, e.key, e.klen));
        cm_free(e.key);
        if (!o)
            continue;
        o->flags &= (uint8_t)~POOL_OF_QUEUED;
        int idx = (o->flags & POOL_OF_INFLIGHT) ? -1 : pool_own_mem_rep(p, o, c->slot);
        if (idx < 0 || pool_has_disk_of(o, c->slot))
            continue;
        int64_t until = now + p->cfg.kv_lease_ttl_ms;
        if (until > o->lease_until)
            o->lease_until = until;
        struct pool_ofl *pe = pool_ofl_find(p, d, o->key, o->klen);
        if (!pe) {
            pe = cm_malloc(sizeof(*pe) + o->klen);
            pe->hn.hash = pool__key_hash(p, o->key, o->klen);
            pe->klen = o->klen;
            memcpy(pe->key, o->key, o->klen);
            cm_ht_insert(&d->pending, &pe->hn);
        }
        pe->obj = (uintptr_t)o;
        o->flags |= POOL_OF_OFFLOADING;
        pool_drm_cancel(p, d, o->key, o->klen); /* the record is about to be written again */
        out[n].key = o->key;
        out[n].klen = o->klen;
        out[n].size = o->size;
        pool__fill_desc(p, o, &pool__reps(o)[idx], &out[n].src);
        n++;
    }
    p->ostats.fetched += (uint64_t)n;
    return n;
}

/* Adds a LOCAL_DISK replica for a client's report; see pool.h. */
int pool_offload_done(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                      uint64_t size, int64_t now) {
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!c->disk)
        return POOL_ESEGMENT_NOT_FOUND;
    if (!key || klen == 0 || klen > POOL_MAX_KEY_LEN || size == 0 || size > POOL_MAX_OBJECT_SIZE)
        return POOL_EINVALID_PARAMS;
    if (now > c->last_ping)
        c->last_ping = now;
    uint64_t hash = pool__key_hash(p, key, klen);
    struct pool_obj *o = pool__obj_find(p, key, klen, hash);
    struct pool_rep rep = {.seg = c->slot,
                           .handle = 0,
                           .type = POOL_REPLICA_LOCAL_DISK,
                           .status = POOL_REPLICA_COMPLETE};
    struct pool_ofl *pe = pool_ofl_find(p, c->disk, key, klen);
    if (pe) { /* the report of a fetched task */
        int same = o && pe->obj == (uintptr_t)o;
        cm_ht_remove(&c->disk->pending, &pe->hn);
        cm_free(pe);
        if (!same)
            return POOL_EOBJECT_NOT_FOUND; /* removed or replaced since the fetch */
        if (!pool_ofl_pending(p, o))
            o->flags &= (uint8_t)~POOL_OF_OFFLOADING;
    } else if (o && !pool_has_disk_of(o, c->slot)) {
        return POOL_EOBJECT_ALREADY_EXISTS; /* a re-registration never overrides a live value */
    }
    if (!o) {
        o = pool__obj_new(p, key, klen, hash, size, 1, &rep);
        o->lease_until = now;
    } else {
        if (o->flags & POOL_OF_INFLIGHT)
            return POOL_EREPLICA_IS_NOT_READY;
        if (o->flags & POOL_OF_TASK)
            return POOL_EOBJECT_HAS_REPLICATION_TASK;
        if (o->size != size)
            return POOL_EINVALID_REPLICA;
        if (pool_has_disk_of(o, c->slot))
            return POOL_OK;
        if (o->nrep >= POOL_MAX_REPLICAS)
            return POOL_EINVALID_REPLICA;
        o = pool__obj_grow(p, o, 1);
        pool__reps(o)[o->nrep++] = rep;
    }
    pool_drm_cancel(p, c->disk, key, klen);
    c->disk->replicas++;
    c->disk->bytes += size;
    p->ostats.disk_replicas++;
    p->ostats.done++;
    pool__emit(p, POOL_EVENT_OFFLOADED, o);
    return POOL_OK;
}

/* Reports a record evicted from a client's disk; see pool.h. */
int pool_offload_evicted(struct pool *p, const struct pool_uuid *client, const void *key,
                         size_t klen, int64_t now) {
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!c->disk)
        return POOL_ESEGMENT_NOT_FOUND;
    if (!key || klen == 0 || klen > POOL_MAX_KEY_LEN)
        return POOL_EINVALID_PARAMS;
    if (now > c->last_ping)
        c->last_ping = now;
    pool_drm_cancel(p, c->disk, key, klen); /* already gone */
    struct pool_obj *o = pool__obj_find(p, key, klen, pool__key_hash(p, key, klen));
    if (!o)
        return POOL_EOBJECT_NOT_FOUND;
    if (!pool_has_disk_of(o, c->slot))
        return pool__has_disk_rep(o) ? POOL_EILLEGAL_CLIENT : POOL_EREPLICA_NOT_FOUND;
    uint32_t slot = c->slot;
    p->disk_quiet = 1;
    pool__drop_reps_if(p, o, pool_rep_disk_of, &slot); /* o may be gone now */
    p->disk_quiet = 0;
    p->ostats.disk_evicted++;
    return POOL_OK;
}

/* Pops queued record removals; see pool.h. */
long pool_disk_remove_fetch(struct pool *p, const struct pool_uuid *client, size_t max, int64_t now,
                            struct pool_disk_remove *out) {
    struct pool_client *c;
    long err = pool_disk_caller(p, client, max && !out, now, &c);
    if (err != POOL_OK)
        return err;
    struct cm_ht *t = &c->disk->removes;
    size_t n = 0, i;
    struct cm_ht_node *hn, *tmp;
    cm_ht_foreach_node(t, i, hn, tmp) {
        if (n == max)
            continue; /* (a break would leave only the inner loop) */
        struct pool_drm *e = (struct pool_drm *)hn;
        out[n].key = cm_malloc(e->klen ? e->klen : 1);
        memcpy(out[n].key, e->key, e->klen);
        out[n].klen = e->klen;
        n++;
    }
    for (size_t j = 0; j < n; j++)
        pool_drm_cancel(p, c->disk, out[j].key, out[j].klen);
    p->ostats.removes_fetched += n;
    return (long)n;
}

/* Returns 1 when o has a COMPLETE MEMORY replica. */
static int pool_has_readable_mem(const struct pool_obj *o) {
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        if (reps[i].type == POOL_REPLICA_MEMORY && reps[i].status == POOL_REPLICA_COMPLETE)
            return 1;
    return 0;
}

/* Counts a read of a disk-only object; see pool.h. The count is kept in the handle field of
 * the object's first LOCAL_DISK replica (unused there: such a replica holds no pool buffer). */
int pool_offload_read_hit(struct pool *p, const void *key, size_t klen) {
    struct pool_obj *o = pool__obj_find(p, key, klen, pool__key_hash(p, key, klen));
    if (!o || pool_has_readable_mem(o))
        return 0;
    struct pool_rep *reps = pool__reps(o);
    struct pool_rep *d = NULL;
    for (uint32_t i = 0; i < o->nrep && !d; i++)
        if (reps[i].type == POOL_REPLICA_LOCAL_DISK)
            d = &reps[i];
    if (!d)
        return 0;
    p->ostats.disk_reads++;
    if (o->flags & (POOL_OF_INFLIGHT | POOL_OF_TASK))
        return 0; /* a promotion (or another copy) is in flight: not counted */
    if (d->handle < UINT32_MAX)
        d->handle++;
    return p->cfg.promotion_on_hit && d->handle >= p->cfg.promotion_admission_threshold;
}

/* Starts the promotion of a disk-only object back to memory; see pool.h. */
int pool_promote_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                       int64_t now, struct pool_replica_desc *out) {
    if (!key || klen == 0 || klen > POOL_MAX_KEY_LEN || !out)
        return POOL_EINVALID_PARAMS;
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!p->cfg.promotion_on_hit)
        return POOL_EUNAVAILABLE_IN_CURRENT_STATUS;
    struct pool_obj *o;
    int rc = pool__obj_find_ready(p, key, klen, &o);
    if (rc != POOL_OK)
        return rc;
    if (o->flags & POOL_OF_TASK)
        return POOL_EOBJECT_HAS_REPLICATION_TASK;
    if (pool__has_mem_rep(o))
        return POOL_EOBJECT_ALREADY_EXISTS; /* already in memory: nothing to promote */
    if (!pool__has_disk_rep(o) || o->nrep >= POOL_MAX_REPLICAS)
        return POOL_EREPLICA_NOT_FOUND;
    struct pool_put_config cfg;
    pool_put_config_default(&cfg);
    struct pool_rep rep;
    if (pool__place(p, c, o->size, &cfg, &rep) == 0) {
        pool_evict(p, now, o->size); /* o has no memory replica: never a victim itself */
        if (pool__place(p, c, o->size, &cfg, &rep) == 0) {
            p->need_evict = 1;
            return POOL_ENO_AVAILABLE_HANDLE;
        }
    }
    o = pool__obj_grow(p, o, 1);
    for (uint32_t i = 0; i < o->nrep; i++)
        if (pool__reps(o)[i].type == POOL_REPLICA_LOCAL_DISK)
            pool__reps(o)[i].handle = 0; /* the read count starts over */
    pool__reps(o)[o->nrep] = rep;
    pool__fill_desc(p, o, &pool__reps(o)[o->nrep], out);
    o->nrep++;
    o->writer = c->slot;
    pool__inflight_add(p, o, POOL_OF_TASK, now);
    p->ostats.promoted++;
    return POOL_OK;
}

/* Fills the offload counters; see pool.h. */
void pool_offload_get_stats(const struct pool *p, struct pool_offload_stats *st) {
    *st = p->ostats;
}
