/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replica copy and move, executed by a client: start allocates the target buffers (PROCESSING
 * replicas added to the object, which grows its record), end makes them readable (a move also
 * drops its source), revoke frees them. A task abandoned by its client is revoked by the sweep
 * after put_start_release_timeout, like a zombie put.
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "server/pool/pool_int.h"

#include <string.h>

/* Reallocates o's record with room for extra more replicas; returns the new address. */
struct pool_obj *pool__obj_grow(struct pool *p, struct pool_obj *o, uint32_t extra) {
    size_t old = pool_object_record_size(o->klen, o->nrep);
    size_t grown = pool_object_record_size(o->klen, o->nrep + extra);
    cm_ht_remove(&p->objects, &o->hn);
    uintptr_t old_addr = (uintptr_t)o;
    o = cm_realloc(o, grown);
    cm_ht_insert(&p->objects, &o->hn);
    if (o->flags & POOL_OF_OFFLOADING)
        pool__offload_obj_moved(p, o->key, o->klen, old_addr, o);
    p->meta_records += grown - old;
    return o;
}

static int pool_holds_replica_on(const struct pool_obj *o, uint32_t seg) {
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        if (reps[i].type == POOL_REPLICA_MEMORY && reps[i].seg == seg)
            return 1;
    return 0;
}

/* Checks a task's arguments and finds the object, its source replica and the targets. */
static int pool_task_args(struct pool *p, const struct pool_uuid *client, const void *key,
                          size_t klen, const char *src, const char *const *tgts, size_t ntgt,
                          struct pool_obj **obj, uint32_t *src_idx, struct pool_seg **segs) {
    if (!key || klen == 0 || klen > POOL_MAX_KEY_LEN || ntgt == 0 || ntgt > POOL_MAX_REPLICAS ||
        !tgts || !src)
        return POOL_EINVALID_PARAMS;
    if (!pool__client_find(p, client))
        return POOL_ECLIENT_NOT_FOUND;
    struct pool_obj *o;
    int rc = pool__obj_find_ready(p, key, klen, &o);
    if (rc != POOL_OK)
        return rc;
    if (o->flags & POOL_OF_TASK)
        return POOL_EOBJECT_HAS_REPLICATION_TASK;
    if (o->nrep + ntgt > POOL_MAX_REPLICAS)
        return POOL_EINVALID_PARAMS;
    const struct pool_seg *s = pool__seg_find(p, src);
    const struct pool_rep *reps = pool__reps(o);
    *src_idx = UINT32_MAX;
    for (uint32_t i = 0; s && i < o->nrep; i++)
        if (reps[i].type == POOL_REPLICA_MEMORY && reps[i].seg == s->slot &&
            reps[i].status == POOL_REPLICA_COMPLETE)
            *src_idx = i;
    if (*src_idx == UINT32_MAX)
        return POOL_EREPLICA_NOT_FOUND;
    for (size_t i = 0; i < ntgt; i++) {
        segs[i] = pool__seg_find(p, tgts[i]);
        if (!segs[i])
            return POOL_ESEGMENT_NOT_FOUND;
        for (size_t j = 0; j < i; j++)
            if (segs[j] == segs[i])
                return POOL_EINVALID_PARAMS;
        if (pool_holds_replica_on(o, segs[i]->slot))
            return POOL_EOBJECT_ALREADY_EXISTS;
    }
    *obj = o;
    return POOL_OK;
}

static int pool_task_start(struct pool *p, const struct pool_uuid *client, const void *key,
                           size_t klen, const char *src, const char *const *tgts, size_t ntgt,
                           int move, int64_t now, struct pool_copy_plan *out) {
    struct pool_obj *o;
    struct pool_seg *segs[POOL_MAX_REPLICAS];
    struct pool_rep fresh[POOL_MAX_REPLICAS];
    uint32_t src_idx;
    memset(out, 0, sizeof(*out));
    int rc = pool_task_args(p, client, key, klen, src, tgts, ntgt, &o, &src_idx, segs);
    if (rc != POOL_OK)
        return rc;
    for (size_t i = 0; i < ntgt; i++) {
        if (pool__seg_alloc(p, segs[i], o->size, &fresh[i]) != 0) {
            for (size_t j = 0; j < i; j++)
                pool__rep_free(p, &fresh[j], o->size);
            p->need_evict = 1;
            return POOL_ENO_AVAILABLE_HANDLE;
        }
    }
    o = pool__obj_grow(p, o, (uint32_t)ntgt);
    struct pool_rep *reps = pool__reps(o);
    memcpy(&reps[o->nrep], fresh, ntgt * sizeof(fresh[0]));
    if (move)
        reps[src_idx].rflags |= POOL_RF_MOVE_SRC;
    pool__fill_desc(p, o, &reps[src_idx], &out->source);
    for (size_t i = 0; i < ntgt; i++)
        pool__fill_desc(p, o, &reps[o->nrep + i], &out->targets[i]);
    out->ntargets = ntgt;
    o->nrep = (uint8_t)(o->nrep + ntgt);
    o->writer = pool__client_find(p, client)->slot;
    pool__inflight_add(p, o, POOL_OF_TASK | (move ? POOL_OF_MOVE : 0), now);
    return POOL_OK;
}

/* Copy start; see pool.h. */
int pool_copy_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                    const char *src_segment, const char *const *tgt_segments, size_t ntgt,
                    int64_t now, struct pool_copy_plan *out) {
    return pool_task_start(p, client, key, klen, src_segment, tgt_segments, ntgt, 0, now, out);
}

/* Move start; see pool.h. */
int pool_move_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                    const char *src_segment, const char *tgt_segment, int64_t now,
                    struct pool_copy_plan *out) {
    if (src_segment && tgt_segment && strcmp(src_segment, tgt_segment) == 0) {
        memset(out, 0, sizeof(*out));
        return POOL_EINVALID_PARAMS;
    }
    const char *tgts[1] = {tgt_segment};
    return pool_task_start(p, client, key, klen, src_segment, tgt_segment ? tgts : NULL, 1, 1, now,
                           out);
}

/* Finds the task of the given kind on key, started by client. */
static int pool_find_task(struct pool *p, const struct pool_uuid *client, const void *key,
                          size_t klen, int move, struct pool_obj **out) {
    if (!key || klen == 0 || klen > POOL_MAX_KEY_LEN)
        return POOL_EINVALID_PARAMS;
    struct pool_obj *o = pool__obj_find(p, key, klen, pool__key_hash(p, key, klen));
    if (!o)
        return POOL_EOBJECT_NOT_FOUND;
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!(o->flags & POOL_OF_TASK) || !(o->flags & POOL_OF_MOVE) != !move)
        return POOL_EOBJECT_NO_REPLICATION_TASK;
    if (o->writer != c->slot)
        return POOL_EILLEGAL_CLIENT;
    *out = o;
    return POOL_OK;
}

static int pool_rep_is_processing(const struct pool *p, const struct pool_rep *r, void *arg) {
    (void)p;
    (void)arg;
    return r->status == POOL_REPLICA_PROCESSING;
}

/*
 * Abandons o's copy/move: frees the target buffers, keeps the source, leaves the in-flight
 * set. o is destroyed (and invalid afterwards) if no replica is left.
 */
void pool__task_revoke(struct pool *p, struct pool_obj *o) {
    struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        reps[i].rflags &= (uint8_t)~POOL_RF_MOVE_SRC;
    o->writer = POOL_NO_SLOT;
    pool__inflight_del(p, o);
    pool__drop_reps_if(p, o, pool_rep_is_processing, NULL);
}

static int pool_task_end(struct pool *p, const struct pool_uuid *client, const void *key,
                         size_t klen, int move, int64_t now) {
    struct pool_obj *o;
    int rc = pool_find_task(p, client, key, klen, move, &o);
    if (rc != POOL_OK)
        return rc;
    struct pool_rep *reps = pool__reps(o);
    uint32_t targets = 0;
    for (uint32_t i = 0; i < o->nrep; i++)
        targets += reps[i].status == POOL_REPLICA_PROCESSING;
    if (targets == 0) { /* every target segment went away meanwhile */
        pool__task_revoke(p, o);
        return POOL_EREPLICA_NOT_FOUND;
    }
    for (uint32_t i = 0; i < o->nrep; i++)
        reps[i].status = POOL_REPLICA_COMPLETE;
    o->writer = POOL_NO_SLOT;
    pool__inflight_del(p, o);
    if (!move)
        return POOL_OK;
    /* Drop the source; a reader holding a lease keeps its buffer until the lease ends. */
    uint32_t kept = 0, n = o->nrep;
    for (uint32_t i = 0; i < n; i++) {
        if (!(reps[i].rflags & POOL_RF_MOVE_SRC)) {
            reps[kept++] = reps[i];
            continue;
        }
        if (o->lease_until > now)
            pool__discard_add(p, &reps[i], o->size, o->lease_until);
        else
            pool__rep_free(p, &reps[i], o->size);
    }
    p->meta_records -= (n - kept) * sizeof(struct pool_rep);
    o->nrep = (uint8_t)kept;
    return POOL_OK;
}

/* Copy end; see pool.h. */
int pool_copy_end(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                  int64_t now) {
    return pool_task_end(p, client, key, klen, 0, now);
}

/* Move end; see pool.h. */
int pool_move_end(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                  int64_t now) {
    return pool_task_end(p, client, key, klen, 1, now);
}

static int pool_task_cancel(struct pool *p, const struct pool_uuid *client, const void *key,
                            size_t klen, int move) {
    struct pool_obj *o;
    int rc = pool_find_task(p, client, key, klen, move, &o);
    if (rc != POOL_OK)
        return rc;
    pool__task_revoke(p, o);
    return POOL_OK;
}

/* Copy revoke; see pool.h. */
int pool_copy_revoke(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                     int64_t now) {
    (void)now;
    return pool_task_cancel(p, client, key, klen, 0);
}

/* Move revoke; see pool.h. */
int pool_move_revoke(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                     int64_t now) {
    (void)now;
    return pool_task_cancel(p, client, key, klen, 1);
}
