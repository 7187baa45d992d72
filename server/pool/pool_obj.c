/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool objects: the write path (put and upsert start/end/revoke, with zombie pre-emption), the
 * read path (exist, get replicas with a read lease), and removal (one key, by regex, all, and
 * a client's replicas of a batch of keys).
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "server/pool/pool_int.h"

#include <regex.h>
#include <string.h>

static int pool_key_ok(const void *key, size_t klen) {
    return key && klen > 0 && klen <= POOL_MAX_KEY_LEN;
}

static int pool_put_cfg_ok(const struct pool *p, const struct pool_put_config *cfg) {
    if (!cfg || cfg->replica_num == 0 || cfg->replica_num > POOL_MAX_REPLICAS)
        return 0;
    if (cfg->soft_pin_ttl_ms < 0 || cfg->soft_pin_ttl_ms > p->cfg.max_kv_soft_pin_ttl_ms)
        return 0;
    if (cfg->npreferred > 64 || (cfg->npreferred && !cfg->preferred_segments))
        return 0;
    return 1;
}

/* Checks the common put/upsert arguments and finds the client. */
static int pool_write_args(struct pool *p, const struct pool_uuid *client, const void *key,
                           size_t klen, uint64_t size, const struct pool_put_config *cfg,
                           struct pool_client **c) {
    if (!pool_key_ok(key, klen) || size == 0 || size > POOL_MAX_OBJECT_SIZE ||
        !pool_put_cfg_ok(p, cfg))
        return POOL_EINVALID_PARAMS;
    *c = pool__client_find(p, client);
    return *c ? POOL_OK : POOL_ECLIENT_NOT_FOUND;
}

static void pool_fill_descs(const struct pool *p, const struct pool_obj *o,
                            struct pool_replica_desc *out, size_t *nout) {
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        pool__fill_desc(p, o, &reps[i], &out[i]);
    *nout = o->nrep;
}

/* Soft-pin TTL a write applies at its end: the request's, or the pool default. */
static int64_t pool_pin_ttl(const struct pool *p, const struct pool_put_config *cfg) {
    return cfg->soft_pin_ttl_ms ? cfg->soft_pin_ttl_ms : p->cfg.kv_soft_pin_ttl_ms;
}

/* Marks o as written by c from now on. */
static void pool_begin_write(struct pool *p, struct pool_obj *o, const struct pool_client *c,
                             int64_t now) {
    o->writer = c->slot;
    o->t_aux = now;
    pool__inflight_add(p, o, POOL_OF_INFLIGHT, now);
}

/*
 * Allocates replicas for a new object and inserts it as a write in flight by c. Evicts and
 * retries once when nothing fits.
 */
static int pool_start_new(struct pool *p, const struct pool_client *c, const void *key, size_t klen,
                          uint64_t hash, uint64_t size, const struct pool_put_config *cfg,
                          int upsert, int64_t now, struct pool_replica_desc *out, size_t *nout) {
    struct pool_rep reps[POOL_MAX_REPLICAS];
    int n = pool__place(p, c, size, cfg, reps);
    if (n == 0) {
        pool_evict(p, now, size * cfg->replica_num);
        n = pool__place(p, c, size, cfg, reps);
    }
    if (n == 0) {
        p->need_evict = 1;
        return POOL_ENO_AVAILABLE_HANDLE;
    }
    struct pool_obj *o = pool__obj_new(p, key, klen, hash, size, (uint32_t)n, reps);
    if (cfg->with_hard_pin)
        o->flags |= POOL_OF_HARD_PIN;
    if (cfg->with_soft_pin) {
        o->flags |= POOL_OF_SOFT_PIN;
        o->lease_until = pool_pin_ttl(p, cfg);
    }
    if (upsert)
        o->flags |= POOL_OF_UPSERT;
    pool_begin_write(p, o, c, now);
    pool_fill_descs(p, o, out, nout);
    return POOL_OK;
}

/*
 * Retires o: its buffers are freed at release_at (now when that is not in the future; until
 * then a zombie writer or a leased reader may still touch them) and its record is freed now.
 */
void pool__obj_retire(struct pool *p, struct pool_obj *o, int64_t release_at, int64_t now) {
    const struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++) {
        if (release_at > now && reps[i].type == POOL_REPLICA_MEMORY)
            pool__discard_add(p, &reps[i], o->size, release_at);
        else
            pool__rep_free_of(p, o, &reps[i]);
    }
    pool__obj_unlink(p, o);
}

/* A write in flight older than the discard timeout may be pre-empted. */
static int pool_preemptible(const struct pool *p, const struct pool_obj *o, int64_t now) {
    return now - o->t_aux >= p->cfg.put_start_discard_timeout_ms;
}

/* Pre-empts the zombie write o; its buffers stay reserved until its release timeout. */
static void pool_preempt(struct pool *p, struct pool_obj *o, int64_t now) {
    pool__obj_retire(p, o, o->t_aux + p->cfg.put_start_release_timeout_ms, now);
}

/* Put start; see pool.h. */
int pool_put_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                   uint64_t size, const struct pool_put_config *cfg, int64_t now,
                   struct pool_replica_desc *out, size_t *nout) {
    struct pool_client *c;
    *nout = 0;
    int rc = pool_write_args(p, client, key, klen, size, cfg, &c);
    if (rc != POOL_OK)
        return rc;
    uint64_t hash = pool__key_hash(p, key, klen);
    struct pool_obj *o = pool__obj_find(p, key, klen, hash);
    if (o) {
        if (!(o->flags & POOL_OF_INFLIGHT) || !pool_preemptible(p, o, now))
            return POOL_EOBJECT_ALREADY_EXISTS;
        pool_preempt(p, o, now);
    }
    return pool_start_new(p, c, key, klen, hash, size, cfg, 0, now, out, nout);
}

/* Finds the write in flight on key by client; shared by end and revoke. */
static int pool_find_write(struct pool *p, const struct pool_uuid *client, const void *key,
                           size_t klen, struct pool_obj **out) {
    if (!pool_key_ok(key, klen))
        return POOL_EINVALID_PARAMS;
    struct pool_obj *o = pool__obj_find(p, key, klen, pool__key_hash(p, key, klen));
    if (!o)
        return POOL_EOBJECT_NOT_FOUND;
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (!(o->flags & POOL_OF_INFLIGHT))
        return POOL_EINVALID_WRITE;
    if (o->writer != c->slot)
        return POOL_EILLEGAL_CLIENT;
    *out = o;
    return POOL_OK;
}

/* Put end; see pool.h. */
int pool_put_end(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                 int64_t now) {
    struct pool_obj *o;
    int rc = pool_find_write(p, client, key, klen, &o);
    if (rc != POOL_OK)
        return rc;
    struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        reps[i].status = POOL_REPLICA_COMPLETE;
    pool__inflight_del(p, o);
    o->flags &= (uint8_t)~POOL_OF_UPSERT;
    o->writer = POOL_NO_SLOT;
    o->t_aux = (o->flags & POOL_OF_SOFT_PIN) ? now + o->lease_until : 0;
    o->lease_until = now; /* last access: no lease, but orders eviction */
    pool__emit(p, POOL_EVENT_STORED, o);
    pool__offload_put_end(p, o);
    return POOL_OK;
}

/* Put revoke; see pool.h. */
int pool_put_revoke(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                    int64_t now) {
    (void)now;
    struct pool_obj *o;
    int rc = pool_find_write(p, client, key, klen, &o);
    if (rc != POOL_OK)
        return rc;
    pool__obj_destroy(p, o);
    return POOL_OK;
}

/* Rewrites readable object o in place for c: same buffers, back to PROCESSING. */
static void pool_upsert_in_place(struct pool *p, struct pool_obj *o, const struct pool_client *c,
                                 const struct pool_put_config *cfg, int64_t now) {
    struct pool_rep *reps = pool__reps(o);
    for (uint32_t i = 0; i < o->nrep; i++)
        reps[i].status = POOL_REPLICA_PROCESSING;
    if (o->flags & POOL_OF_OFFLOADING) /* a pending offload copied the old bytes */
        pool__offload_obj_moved(p, o->key, o->klen, (uintptr_t)o, NULL);
    if (cfg->with_soft_pin) {
        o->flags |= POOL_OF_SOFT_PIN;
        o->lease_until = pool_pin_ttl(p, cfg);
    } else if ((o->flags & POOL_OF_SOFT_PIN) && o->t_aux > now) {
        o->lease_until = o->t_aux - now; /* keep what is left of the pin */
    } else {
        o->flags &= (uint8_t)~POOL_OF_SOFT_PIN;
        o->lease_until = 0;
    }
    o->flags |= POOL_OF_UPSERT;
    pool_begin_write(p, o, c, now);
}

/* Upsert start; see pool.h. */
int pool_upsert_start(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                      uint64_t size, const struct pool_put_config *cfg, int64_t now,
                      struct pool_replica_desc *out, size_t *nout) {
    struct pool_client *c;
    *nout = 0;
    int rc = pool_write_args(p, client, key, klen, size, cfg, &c);
    if (rc != POOL_OK)
        return rc;
    uint64_t hash = pool__key_hash(p, key, klen);
    struct pool_obj *o = pool__obj_find(p, key, klen, hash);
    struct pool_put_config again = *cfg;
    if (o && (o->flags & POOL_OF_INFLIGHT)) {
        if (!pool_preemptible(p, o, now))
            return POOL_EOBJECT_REPLICA_BUSY;
        pool_preempt(p, o, now);
    } else if (o && (o->flags & POOL_OF_TASK)) {
        return POOL_EOBJECT_HAS_REPLICATION_TASK;
    } else if (o) {
        int leased = o->lease_until > now;
        if (o->size == size && !leased && !pool__has_disk_rep(o)) {
            pool_upsert_in_place(p, o, c, cfg, now);
            pool_fill_descs(p, o, out, nout);
            return POOL_OK;
        }
        again.with_hard_pin = (o->flags & POOL_OF_HARD_PIN) != 0;
        pool__obj_retire(p, o, leased ? o->lease_until : now, now);
    }
    return pool_start_new(p, c, key, klen, hash, size, &again, 1, now, out, nout);
}

/* Upsert end: identical to put end. */
int pool_upsert_end(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                    int64_t now) {
    return pool_put_end(p, client, key, klen, now);
}

/* Upsert revoke: identical to put revoke. */
int pool_upsert_revoke(struct pool *p, const struct pool_uuid *client, const void *key, size_t klen,
                       int64_t now) {
    return pool_put_revoke(p, client, key, klen, now);
}

/* ---- reads ------------------------------------------------------------------------------- */

static void pool_grant_lease(const struct pool *p, struct pool_obj *o, int64_t now) {
    int64_t until = now + p->cfg.kv_lease_ttl_ms;
    if (until > o->lease_until)
        o->lease_until = until;
}

/* Exist (grants a lease when readable); see pool.h. */
int pool_exist(struct pool *p, const void *key, size_t klen, int64_t now) {
    if (!pool_key_ok(key, klen))
        return POOL_EINVALID_PARAMS;
    struct pool_obj *o = pool__obj_find(p, key, klen, pool__key_hash(p, key, klen));
    if (!o || (o->flags & POOL_OF_INFLIGHT))
        return 0;
    pool_grant_lease(p, o, now);
    return 1;
}

/* Get replica list with a read lease; see pool.h. */
int pool_get_replicas(struct pool *p, const void *key, size_t klen, int64_t now,
                      struct pool_replica_desc *out, size_t *nout, int64_t *lease_ttl_ms) {
    *nout = 0;
    if (!pool_key_ok(key, klen))
        return POOL_EINVALID_PARAMS;
    struct pool_obj *o;
    int rc = pool__obj_find_ready(p, key, klen, &o);
    if (rc != POOL_OK)
        return rc;
    const struct pool_rep *reps = pool__reps(o);
    size_t n = 0;
    for (uint32_t i = 0; i < o->nrep; i++)
        if (reps[i].status == POOL_REPLICA_COMPLETE)
            pool__fill_desc(p, o, &reps[i], &out[n++]);
    if (n == 0)
        return POOL_EREPLICA_IS_NOT_READY;
    pool_grant_lease(p, o, now);
    *nout = n;
    if (lease_ttl_ms)
        *lease_ttl_ms = p->cfg.kv_lease_ttl_ms;
    return POOL_OK;
}

/* Admin read without a lease; see pool.h. */
int pool_object_query(const struct pool *p, const void *key, size_t klen,
                      struct pool_object_info *out) {
    if (!pool_key_ok(key, klen))
        return POOL_EINVALID_PARAMS;
    const struct pool_obj *o = pool__obj_find(p, key, klen, pool__key_hash(p, key, klen));
    if (!o)
        return POOL_EOBJECT_NOT_FOUND;
    memset(out, 0, sizeof(*out));
    out->size = o->size;
    out->inflight = (o->flags & POOL_OF_INFLIGHT) != 0;
    out->task = (o->flags & POOL_OF_MOVE) ? 2 : (o->flags & POOL_OF_TASK) ? 1 : 0;
    out->hard_pinned = (o->flags & POOL_OF_HARD_PIN) != 0;
    if (!out->inflight) {
        out->lease_until = o->lease_until;
        if (o->flags & POOL_OF_SOFT_PIN)
            out->soft_pin_until = o->t_aux;
    }
    size_t n;
    pool_fill_descs(p, o, out->replicas, &n);
    out->nreplicas = (uint32_t)n;
    return POOL_OK;
}

/* ---- removal ----------------------------------------------------------------------------- */

/* Why o may not be removed now (0 when it may). */
static int pool_remove_blocked(const struct pool_obj *o, int force, int64_t now) {
    if (o->flags & POOL_OF_INFLIGHT)
        return POOL_EREPLICA_IS_NOT_READY;
    if (!force && (o->flags & POOL_OF_TASK))
        return POOL_EOBJECT_HAS_REPLICATION_TASK;
    if (!force && (o->lease_until > now || (o->flags & POOL_OF_HARD_PIN)))
        return POOL_EOBJECT_HAS_LEASE;
    return 0;
}

/* Remove; see pool.h. */
int pool_remove(struct pool *p, const void *key, size_t klen, int force, int64_t now) {
    if (!pool_key_ok(key, klen))
        return POOL_EINVALID_PARAMS;
    struct pool_obj *o = pool__obj_find(p, key, klen, pool__key_hash(p, key, klen));
    if (!o)
        return POOL_EOBJECT_NOT_FOUND;
    int rc = pool_remove_blocked(o, force, now);
    if (rc)
        return rc;
    pool__emit(p, POOL_EVENT_REMOVED, o);
    pool__obj_destroy(p, o);
    return POOL_OK;
}

/* Key match by regex; see pool.h. */
int pool_key_regex_match(const regex_t *re, const void *key, size_t klen) {
    char stack[256];
    char *buf = klen < sizeof(stack) ? stack : cm_malloc(klen + 1);
    memcpy(buf, key, klen);
    buf[klen] = '\0';
    regmatch_t m = {.rm_so = 0, .rm_eo = (regoff_t)klen};
    int match = regexec(re, buf, 1, &m, REG_STARTEND) == 0;
    if (buf != stack)
        cm_free(buf);
    return match;
}

struct pool_remove_ctx {
    struct pool *p;
    regex_t *re; /* NULL = every key */
    int force;
    int64_t now;
    long count;
};

static void pool_remove_cb(struct cm_ht_node *n, void *arg) {
    struct pool_remove_ctx *ctx = arg;
    struct pool_obj *o = (struct pool_obj *)n;
    if (pool_remove_blocked(o, ctx->force, ctx->now))
        return;
    if (ctx->re && !pool_key_regex_match(ctx->re, o->key, o->klen))
        return;
    pool__emit(ctx->p, POOL_EVENT_REMOVED, o);
    pool__obj_destroy(ctx->p, o);
    ctx->count++;
}

/* Remove by POSIX extended regex; see pool.h. */
long pool_remove_regex(struct pool *p, const char *pattern, int force, int64_t now) {
    if (!pattern)
        return POOL_EINVALID_PARAMS;
    regex_t re;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return POOL_EINVALID_PARAMS;
    struct pool_remove_ctx ctx = {.p = p, .re = &re, .force = force, .now = now};
    cm_ht_foreach(&p->objects, pool_remove_cb, &ctx);
    regfree(&re);
    return ctx.count;
}

struct pool_keys_ctx {
    regex_t *re;
    pool_key_visit_cb *cb;
    void *arg;
    long count;
};

static void pool_keys_cb(struct cm_ht_node *n, void *arg) {
    struct pool_keys_ctx *ctx = arg;
    const struct pool_obj *o = (const struct pool_obj *)n;
    if (o->flags & POOL_OF_INFLIGHT)
        return;
    if (!pool_key_regex_match(ctx->re, o->key, o->klen))
        return;
    ctx->cb(ctx->arg, o->key, o->klen);
    ctx->count++;
}

/* Visit readable keys matching a POSIX extended regex; see pool.h. */
long pool_keys_regex(const struct pool *p, const char *pattern, pool_key_visit_cb *cb, void *arg) {
    if (!pattern || !cb)
        return POOL_EINVALID_PARAMS;
    regex_t re;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return POOL_EINVALID_PARAMS;
    struct pool_keys_ctx ctx = {.re = &re, .cb = cb, .arg = arg};
    cm_ht_foreach((struct cm_ht *)&p->objects, pool_keys_cb, &ctx);
    regfree(&re);
    return ctx.count;
}

/* Remove all; see pool.h. */
long pool_remove_all(struct pool *p, int force, int64_t now) {
    struct pool_remove_ctx ctx = {.p = p, .force = force, .now = now};
    cm_ht_foreach(&p->objects, pool_remove_cb, &ctx);
    return ctx.count;
}

struct pool_clear_match {
    uint32_t owner; /* client slot */
    uint32_t seg;   /* segment slot, or POOL_NO_SLOT for all of the owner's */
};

static int pool_rep_clear_match(const struct pool *p, const struct pool_rep *r, void *arg) {
    const struct pool_clear_match *m = arg;
    if (r->type != POOL_REPLICA_MEMORY)
        return 0;
    const struct pool_seg *s = p->segs[r->seg];
    return s && s->owner == m->owner && (m->seg == POOL_NO_SLOT || m->seg == r->seg);
}

/* Batch replica clear; see pool.h. */
long pool_batch_replica_clear(struct pool *p, const struct pool_uuid *client,
                              const void *const *keys, const size_t *klens, size_t n,
                              const char *segment_name, int64_t now, uint8_t *cleared) {
    struct pool_client *c = pool__client_find(p, client);
    if (!c)
        return POOL_ECLIENT_NOT_FOUND;
    if (n && (!keys || !klens))
        return POOL_EINVALID_PARAMS;
    struct pool_clear_match m = {.owner = c->slot, .seg = POOL_NO_SLOT};
    if (segment_name && segment_name[0]) {
        struct pool_seg *s = pool__seg_find(p, segment_name);
        if (!s)
            return POOL_ESEGMENT_NOT_FOUND;
        if (s->owner != c->slot)
            return POOL_EILLEGAL_CLIENT;
        m.seg = s->slot;
    }
    long count = 0;
    for (size_t i = 0; i < n; i++) {
        if (cleared)
            cleared[i] = 0;
        if (!pool_key_ok(keys[i], klens[i]))
            continue;
        struct pool_obj *o =
            pool__obj_find(p, keys[i], klens[i], pool__key_hash(p, keys[i], klens[i]));
        if (!o || (o->flags & (POOL_OF_INFLIGHT | POOL_OF_TASK)) || o->lease_until > now)
            continue;
        const struct pool_rep *reps = pool__reps(o);
        int hit = 0;
        for (uint32_t j = 0; j < o->nrep && !hit; j++)
            hit = pool_rep_clear_match(p, &reps[j], &m);
        if (!hit)
            continue;
        pool__drop_reps_if(p, o, pool_rep_clear_match, &m);
        if (cleared)
            cleared[i] = 1;
        count++;
    }
    return count;
}
