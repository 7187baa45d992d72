/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Restoring objects at known addresses: the op-log replay of a new HA leader (server/srv_oplog.c)
 * rebuilds each segment's allocator from the replicas the log recorded, so every restored
 * descriptor names the same bytes the old leader handed out.
 */
#include "common/fmacros.h"

#include "server/pool/pool_int.h"

#include "common/cm_mem.h"
#include "common/cm_tlsf.h"

#include <string.h>

/* Checks the arguments and resolves the segments into segs[0..n). */
static int pool_restore_check(struct pool *p, size_t klen, uint64_t size,
                              const struct pool_restore_replica *reps, size_t n,
                              struct pool_seg **segs) {
    if (klen == 0 || klen > POOL_MAX_KEY_LEN || size == 0 || size > POOL_MAX_OBJECT_SIZE ||
        n == 0 || n > POOL_MAX_REPLICAS)
        return POOL_EINVALID_PARAMS;
    for (size_t i = 0; i < n; i++) {
        segs[i] = reps[i].segment ? pool__seg_find(p, reps[i].segment) : NULL;
        if (!segs[i])
            return POOL_ESEGMENT_NOT_FOUND;
        if (!segs[i]->alloc) /* a shared segment: its owner places its own bytes */
            return POOL_EINVALID_REPLICA;
        for (size_t k = 0; k < i; k++)
            if (segs[k] == segs[i])
                return POOL_EINVALID_PARAMS;
        if (reps[i].addr < segs[i]->base || reps[i].addr - segs[i]->base > segs[i]->size ||
            size > segs[i]->size - (reps[i].addr - segs[i]->base))
            return POOL_EINVALID_REPLICA;
    }
    return POOL_OK;
}

/* Frees the buffers of out[0..n). */
static void pool_restore_undo(struct pool *p, struct pool_rep *out, size_t n, uint64_t size) {
    for (size_t i = 0; i < n; i++)
        pool__rep_free(p, &out[i], size);
}

/* Restores a readable object; see pool.h. */
int pool_object_restore(struct pool *p, const void *key, size_t klen, uint64_t size, int hard_pin,
                        int64_t soft_pin_ms, const struct pool_restore_replica *reps, size_t n,
                        int64_t now) {
    struct pool_seg *segs[POOL_MAX_REPLICAS];
    int rc = pool_restore_check(p, klen, size, reps, n, segs);
    if (rc != POOL_OK)
        return rc;
    uint64_t hash = pool__key_hash(p, key, klen);
    struct pool_obj *old = pool__obj_find(p, key, klen, hash);
    if (old) {
        if (old->flags & (POOL_OF_INFLIGHT | POOL_OF_TASK))
            return POOL_EOBJECT_REPLICA_BUSY;
        pool__obj_destroy(p, old);
    }
    struct pool_rep out[POOL_MAX_REPLICAS];
    for (size_t i = 0; i < n; i++) {
        struct pool_seg *s = segs[i];
        uint32_t h = cm_tlsf_alloc_at(s->alloc, reps[i].addr - s->base, size);
        if (!h) {
            pool_restore_undo(p, out, i, size);
            return POOL_EINVALID_REPLICA;
        }
        s->used += size;
        s->nbuffers++;
        out[i] = (struct pool_rep){.seg = s->slot,
                                   .handle = h,
                                   .type = POOL_REPLICA_MEMORY,
                                   .status = POOL_REPLICA_COMPLETE};
    }
    struct pool_obj *o = pool__obj_new(p, key, klen, hash, size, (uint32_t)n, out);
    o->lease_until = now; /* no lease; orders eviction like a fresh write */
    if (hard_pin)
        o->flags |= POOL_OF_HARD_PIN;
    if (soft_pin_ms > 0) {
        o->flags |= POOL_OF_SOFT_PIN;
        o->t_aux = now + soft_pin_ms;
    }
    return POOL_OK;
}

/* Marks every client alive; see pool.h. */
void pool_clients_touch(struct pool *p, int64_t now) {
    for (uint32_t i = 0; i < p->nclient_slots; i++)
        if (p->clients[i])
            p->clients[i]->last_ping = now;
}
