/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pool as plain Redis commands see it (server/srv_pool_kv.c): DEL semantics (a leased or
 * pinned object goes at once, its buffers stay reserved until the lease ends), a FLUSHALL
 * over every object, and a SCAN cursor over the readable keys.
 */
#include "common/fmacros.h"

#include "server/pool/pool_int.h"

/* 0 when the Redis-style unlink may take o, else the pool code that keeps it. */
static int pool_unlink_blocked(const struct pool_obj *o) {
    if (o->flags & POOL_OF_INFLIGHT)
        return POOL_EREPLICA_IS_NOT_READY;
    if (o->flags & POOL_OF_TASK)
        return POOL_EOBJECT_HAS_REPLICATION_TASK;
    return 0;
}

/* Unlinks o: its record now, its buffers now or when its read lease ends. */
static void pool_unlink_obj(struct pool *p, struct pool_obj *o, int64_t now) {
    pool__obj_retire(p, o, o->lease_until, now);
}

/* Unlink; see pool.h. */
int pool_unlink(struct pool *p, const void *key, size_t klen, int64_t now) {
    if (!key || klen == 0 || klen > POOL_MAX_KEY_LEN)
        return POOL_EINVALID_PARAMS;
    struct pool_obj *o = pool__obj_find(p, key, klen, pool__key_hash(p, key, klen));
    if (!o)
        return POOL_EOBJECT_NOT_FOUND;
    int rc = pool_unlink_blocked(o);
    if (rc)
        return rc;
    pool_unlink_obj(p, o, now);
    return POOL_OK;
}

struct pool_unlink_ctx {
    struct pool *p;
    int64_t now;
    long count;
};

static void pool_unlink_cb(struct cm_ht_node *n, void *arg) {
    struct pool_unlink_ctx *ctx = arg;
    struct pool_obj *o = (struct pool_obj *)n;
    if (pool_unlink_blocked(o))
        return;
    pool_unlink_obj(ctx->p, o, ctx->now);
    ctx->count++;
}

/* Unlink all; see pool.h. */
long pool_unlink_all(struct pool *p, int64_t now) {
    struct pool_unlink_ctx ctx = {.p = p, .now = now};
    cm_ht_foreach(&p->objects, pool_unlink_cb, &ctx);
    return ctx.count;
}

struct pool_scan_ctx {
    pool_key_visit_cb *cb;
    void *arg;
    size_t seen;
};

static void pool_scan_cb(struct cm_ht_node *n, void *arg) {
    struct pool_scan_ctx *ctx = arg;
    const struct pool_obj *o = (const struct pool_obj *)n;
    ctx->seen++;
    if (!(o->flags & POOL_OF_INFLIGHT))
        ctx->cb(ctx->arg, o->key, o->klen);
}

/* Scan step; see pool.h. */
uint64_t pool_scan(const struct pool *p, uint64_t cursor, size_t count, pool_key_visit_cb *cb,
                   void *arg) {
    struct pool_scan_ctx ctx = {cb, arg, 0};
    if (count == 0)
        count = 1;
    if (cm_ht_count(&p->objects) == 0)
        return 0;
    do {
        cursor = cm_ht_scan(&p->objects, cursor, pool_scan_cb, &ctx);
    } while (cursor != 0 && ctx.seen < count);
    return cursor;
}

static void pool_count_writes_cb(struct cm_ht_node *n, void *arg) {
    const struct pool_inflight *f = (const struct pool_inflight *)n;
    if (f->obj->flags & POOL_OF_INFLIGHT)
        (*(uint64_t *)arg)++;
}

/* Objects; see pool.h. */
uint64_t pool_object_count(const struct pool *p) {
    return cm_ht_count(&p->objects);
}

/* Readable objects; see pool.h. */
uint64_t pool_readable_count(const struct pool *p) {
    uint64_t writes = 0;
    cm_ht_foreach((struct cm_ht *)&p->inflight, pool_count_writes_cb, &writes);
    return cm_ht_count(&p->objects) - writes;
}
