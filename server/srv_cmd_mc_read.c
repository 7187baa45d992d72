/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MC.* commands of the distributed store, part 2: reads (exist, get replicas with a lease, by
 * regex, batch forms), the admin reads (MC.QUERYKEY, MC.STATS), removal, batch replica clear
 * and the start of copies and moves. Thin adapters over server/pool/; wire protocol in
 * docs/store.md. A key the pool lacks may be a string of the Redis keyspace held in the
 * embedded segment: every command here but MC.BATCHREPLICACLEAR and the copy/move starts
 * answers it as a pool object: the value is pinned first, without the pool mutex
 * (srv_pseg_kv_pin; the bulk commands pin their matches with srv_pseg_kv_walk_*), then
 * answered under it when the pool lacks the key (srv_pseg_kv_answer), and removed after it
 * (srv_pseg_kv_remove*); see srv_pool_seg.h.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_mc.h"
#include "server/srv_oplog.h"
#include "server/srv_pool_seg.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"

#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"

#include <string.h>

#define SRV_MC_NAME_CAP (POOL_MAX_NAME_LEN + 1)

/* ---- reads ------------------------------------------------------------------------------- */

/* Keyspace pins for argv[from..argc): local when they fit, else a cm_malloc array. */
#define SRV_MC_KV_LOCAL 16

static struct srv_pseg_kv *srv_mc_kv_pin_args(struct srv_client *c, int from, int touch,
                                              struct srv_pseg_kv *local) {
    size_t n = (size_t)(c->argc - from);
    struct srv_pseg_kv *kv = n <= SRV_MC_KV_LOCAL ? local : cm_malloc(n * sizeof(*kv));
    for (size_t i = 0; i < n; i++)
        srv_pseg_kv_pin(c->argv[from + (int)i].p, c->argv[from + (int)i].len, touch, &kv[i]);
    return kv;
}

/* Drops the pins of srv_mc_kv_pin_args (pool mutex released). */
static void srv_mc_kv_unpin_args(struct srv_client *c, int from, struct srv_pseg_kv *kv,
                                 struct srv_pseg_kv *local) {
    for (int i = 0; i < c->argc - from; i++)
        srv_pseg_kv_unpin(&kv[i]);
    if (kv != local)
        cm_free(kv);
}

/* pool_exist, then the keyspace's string pinned in kv (a lease either way). Pool mutex held. */
static int srv_mc_exist_one(const char *key, size_t klen, struct srv_pseg_kv *kv, int64_t now) {
    int rc = pool_exist(srv_mc_pool, key, klen, now);
    if (rc == 0) {
        struct pool_replica_desc d;
        rc = srv_pseg_kv_answer(kv, now, 1, &d, NULL);
    }
    return rc;
}

void srv_mc_exist_command(struct srv_client *c) {
    struct srv_pseg_kv kv;
    srv_pseg_kv_pin(c->argv[1].p, c->argv[1].len, 1, &kv);
    srv_mc_lock();
    int rc = srv_mc_exist_one(c->argv[1].p, c->argv[1].len, &kv, srv_mc_now());
    srv_mc_unlock();
    srv_pseg_kv_unpin(&kv);
    if (rc < 0)
        srv_mc_reply_err(c, rc);
    else
        resp_add_int(&c->out, rc);
}

void srv_mc_batchexist_command(struct srv_client *c) {
    struct srv_pseg_kv local[SRV_MC_KV_LOCAL];
    struct srv_pseg_kv *kv = srv_mc_kv_pin_args(c, 1, 1, local);
    resp_add_array_hdr(&c->out, c->argc - 1);
    srv_mc_lock();
    int64_t now = srv_mc_now();
    for (int i = 1; i < c->argc; i++) {
        int rc = srv_mc_exist_one(c->argv[i].p, c->argv[i].len, &kv[i - 1], now);
        if (rc < 0)
            srv_mc_add_err(c, rc);
        else
            resp_add_int(&c->out, rc);
    }
    srv_mc_unlock();
    srv_mc_kv_unpin_args(c, 1, kv, local);
}

/* Appends the MC.GETREPLICAS result of key (compact into t when t is not NULL), the pool's
 * object or else the keyspace string pinned in kv; returns 0 or the pool error (nothing
 * appended). Pool mutex held. */
static int srv_mc_get_one(struct srv_client *c, struct srv_mc_segtab *t, const char *key,
                          size_t klen, struct srv_pseg_kv *kv, int64_t now) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    size_t n = 0;
    int64_t ttl = 0;
    int rc = pool_get_replicas(srv_mc_pool, key, klen, now, d, &n, &ttl);
    if (rc == POOL_EOBJECT_NOT_FOUND && srv_pseg_kv_answer(kv, now, 1, d, NULL)) {
        n = 1; /* a keyspace string in the embedded segment */
        ttl = srv_cfg.default_kv_lease_ttl;
        rc = 0;
    }
    if (rc < 0)
        return rc;
    int disk_only = n > 0;
    for (size_t i = 0; i < n && disk_only; i++)
        disk_only = d[i].type == POOL_REPLICA_LOCAL_DISK;
    int promote = disk_only && pool_offload_read_hit(srv_mc_pool, key, klen);
    if (t != NULL)
        srv_mc_compact_get(c, t, ttl, d, n, promote);
    else
        srv_mc_add_get_reply(c, ttl, d, n, promote);
    return rc;
}

void srv_mc_getreplicas_command(struct srv_client *c) {
    struct srv_mc_segtab t, *tp = srv_mc_compact(c) ? &t : NULL;
    srv_mc_segtab_init(&t);
    struct srv_pseg_kv kv;
    srv_pseg_kv_pin(c->argv[1].p, c->argv[1].len, 1, &kv);
    size_t at = c->out.len;
    if (tp != NULL) /* compact: [element, segment table] */
        resp_add_array_hdr(&c->out, 2);
    srv_mc_lock();
    int rc = srv_mc_get_one(c, tp, c->argv[1].p, c->argv[1].len, &kv, srv_mc_now());
    if (rc >= 0 && tp != NULL)
        srv_mc_segtab_write(c, tp);
    srv_mc_unlock();
    srv_pseg_kv_unpin(&kv);
    if (rc < 0) {
        c->out.len = at;
        srv_mc_reply_err(c, rc);
    }
}

void srv_mc_batchgetreplicas_command(struct srv_client *c) {
    struct srv_mc_segtab t, *tp = srv_mc_compact(c) ? &t : NULL;
    srv_mc_segtab_init(&t);
    if (tp != NULL) /* compact: [elements, segment table] */
        resp_add_array_hdr(&c->out, 2);
    struct srv_pseg_kv local[SRV_MC_KV_LOCAL];
    struct srv_pseg_kv *kv = srv_mc_kv_pin_args(c, 1, 1, local);
    resp_add_array_hdr(&c->out, c->argc - 1);
    srv_mc_lock();
    int64_t now = srv_mc_now();
    for (int i = 1; i < c->argc; i++) {
        int rc = srv_mc_get_one(c, tp, c->argv[i].p, c->argv[i].len, &kv[i - 1], now);
        if (rc < 0)
            srv_mc_add_err(c, rc);
    }
    if (tp != NULL)
        srv_mc_segtab_write(c, tp);
    srv_mc_unlock();
    srv_mc_kv_unpin_args(c, 1, kv, local);
}

/* Keys matched by a regex, copied out of the pool (length-prefixed in one buffer). */
struct srv_mc_keylist {
    char *buf;
    size_t len, cap;
    long n;
};

static void srv_mc_keylist_add(void *arg, const char *key, size_t klen) {
    struct srv_mc_keylist *l = arg;
    size_t need = l->len + sizeof(size_t) + klen;
    if (need > l->cap) {
        l->cap = need * 2;
        l->buf = cm_realloc(l->buf, l->cap);
    }
    memcpy(l->buf + l->len, &klen, sizeof(size_t));
    memcpy(l->buf + l->len + sizeof(size_t), key, klen);
    l->len = need;
    l->n++;
}

/* argv[i] as a NUL-terminated string; caller frees with cm_free. */
static char *srv_mc_pattern(struct srv_client *c, int i) {
    char *pattern = cm_malloc(c->argv[i].len + 1);
    memcpy(pattern, c->argv[i].p, c->argv[i].len);
    pattern[c->argv[i].len] = '\0';
    return pattern;
}

/*
 * Moves the pinned keyspace strings of ks whose keys the pool lacks (visible as objects) to the
 * front of ks->v and returns their number; the others (the pool holds the key: its object
 * answers instead) follow, still pinned. Pool mutex held.
 */
static size_t srv_mc_kv_unshadowed(struct srv_pseg_kv_set *ks) {
    size_t n = 0;
    struct pool_object_info info;
    for (size_t i = 0; i < ks->n; i++) {
        const struct srv_pseg_kv *kv = &ks->v[i];
        if (pool_object_query(srv_mc_pool, kv->key, kv->klen, &info) != POOL_EOBJECT_NOT_FOUND)
            continue;
        struct srv_pseg_kv t = ks->v[n];
        ks->v[n++] = ks->v[i];
        ks->v[i] = t;
    }
    return n;
}

/* The pool part of MC.GETREPLICASBYREGEX: key, replicas (a lease each) for the keys of l. Pool
 * mutex held. */
static void srv_mc_regex_pool(struct srv_client *c, const struct srv_mc_keylist *l, int64_t now) {
    struct pool_replica_desc d[POOL_MAX_REPLICAS];
    for (size_t off = 0; off < l->len;) {
        size_t klen;
        memcpy(&klen, l->buf + off, sizeof(size_t));
        const char *key = l->buf + off + sizeof(size_t);
        off += sizeof(size_t) + klen;
        size_t n = 0;
        resp_add_bulk(&c->out, key, klen);
        pool_get_replicas(srv_mc_pool, key, klen, now, d, &n, NULL); /* grants the lease */
        srv_mc_add_replicas(c, d, n);
    }
}

/* The keyspace part: key, its one replica (a lease each) for ks->v[0..n). Pool mutex held. */
static void srv_mc_regex_kv(struct srv_client *c, struct srv_pseg_kv_set *ks, size_t n,
                            int64_t now) {
    struct pool_replica_desc d;
    for (size_t i = 0; i < n; i++) {
        resp_add_bulk(&c->out, ks->v[i].key, ks->v[i].klen);
        size_t nd = (size_t)srv_pseg_kv_answer(&ks->v[i], now, 1, &d, NULL);
        srv_mc_add_replicas(c, &d, nd);
    }
}

void srv_mc_getreplicasbyregex_command(struct srv_client *c) {
    char *pattern = srv_mc_pattern(c, 1);
    struct srv_pseg_kv_set ks = {0};
    struct srv_pseg_kv_walk w;
    long rc = srv_pseg_kv_walk_init(&w, pattern, 1);
    if (rc == 0) { /* every match pinned before the pool mutex */
        srv_pseg_kv_walk_next(&w, SIZE_MAX, &ks);
        srv_pseg_kv_walk_fini(&w);
    }
    struct srv_mc_keylist l = {0};
    srv_mc_lock();
    if (rc >= 0)
        rc = pool_keys_regex(srv_mc_pool, pattern, srv_mc_keylist_add, &l);
    if (rc >= 0) {
        int64_t now = srv_mc_now();
        size_t nkv = srv_pseg_kv_ready() ? srv_mc_kv_unshadowed(&ks) : 0;
        resp_add_map_hdr(&c->out, c->proto, l.n + (long)nkv);
        srv_mc_regex_pool(c, &l, now);
        srv_mc_regex_kv(c, &ks, nkv, now);
    }
    srv_mc_unlock();
    srv_pseg_kv_set_unpin(&ks);
    if (rc < 0)
        srv_mc_reply_err(c, (int)rc);
    cm_free(l.buf);
    cm_free(pattern);
}

void srv_mc_querykey_command(struct srv_client *c) {
    struct pool_object_info info;
    struct srv_pseg_kv kv;
    srv_pseg_kv_pin(c->argv[1].p, c->argv[1].len, 0, &kv);
    srv_mc_lock();
    int64_t now = srv_mc_now();
    int rc = pool_object_query(srv_mc_pool, c->argv[1].p, c->argv[1].len, &info);
    if (rc == POOL_EOBJECT_NOT_FOUND) { /* a keyspace string in the embedded segment? */
        memset(&info, 0, sizeof(info));
        if (srv_pseg_kv_answer(&kv, now, 0, &info.replicas[0], &info.lease_until)) {
            info.nreplicas = 1;
            info.size = info.replicas[0].size;
            rc = 0;
        }
    }
    if (rc == 0) {
        struct cm_buf *b = &c->out;
        resp_add_map_hdr(b, c->proto, 7);
        srv_mc_add_field(c, "size");
        resp_add_int(b, (long long)info.size);
        srv_mc_add_field(c, "replicas");
        srv_mc_add_replicas(c, info.replicas, info.nreplicas);
        srv_mc_add_field(c, "lease_ms");
        resp_add_int(b, info.lease_until > now ? info.lease_until - now : 0);
        srv_mc_add_field(c, "hard_pin");
        resp_add_int(b, info.hard_pinned != 0);
        srv_mc_add_field(c, "soft_pin");
        resp_add_int(b, info.soft_pin_until > now);
        srv_mc_add_field(c, "inflight");
        resp_add_int(b, info.inflight != 0);
        srv_mc_add_field(c, "task");
        srv_mc_add_field(c, info.task == 2 ? "move" : info.task == 1 ? "copy" : "none");
    }
    srv_mc_unlock();
    srv_pseg_kv_unpin(&kv);
    if (rc < 0)
        srv_mc_reply_err(c, rc);
}

void srv_mc_stats_command(struct srv_client *c) {
    struct pool_stats st;
    uint64_t kv_n, kv_bytes;
    srv_pseg_kv_count(&kv_n, &kv_bytes); /* shard locks: before the pool mutex */
    srv_mc_lock();
    pool_get_stats(srv_mc_pool, &st);
    if (!srv_pseg_kv_ready())
        kv_n = kv_bytes = 0;
    srv_mc_unlock();
    const struct {
        const char *name;
        uint64_t v;
    } f[] = {{"objects", st.objects},       {"inflight", st.inflight},
             {"segments", st.segments},     {"clients", st.clients},
             {"capacity", st.capacity},     {"used", st.used},
             {"allocated", st.allocated},   {"discarded", st.discarded},
             {"evicted", st.evicted},       {"evict_skipped", st.evict_skipped},
             {"meta_bytes", st.meta_bytes}, {"keyspace_strings", kv_n},
             {"keyspace_bytes", kv_bytes}};
    size_t n = sizeof(f) / sizeof(f[0]);
    resp_add_map_hdr(&c->out, c->proto, (long)n);
    for (size_t i = 0; i < n; i++) {
        srv_mc_add_field(c, f[i].name);
        resp_add_int(&c->out, (long long)f[i].v);
    }
}

/* ---- removal ----------------------------------------------------------------------------- */

/* Parses an optional trailing FORCE at argv[i] (i == argc: none). Returns 0/1, or -1. */
static int srv_mc_force(struct srv_client *c, int i) {
    if (i == c->argc)
        return 0;
    if (i == c->argc - 1 && srv_arg_is(c, i, "force"))
        return 1;
    srv_reply_syntax_error(c);
    return -1;
}

/* pool_remove, logged to the op-log. Pool mutex held. */
static int srv_mc_remove_pool(const char *key, size_t klen, int force, int64_t now) {
    int rc = pool_remove(srv_mc_pool, key, klen, force, now);
    if (rc == 0)
        srv_oplog_log_key(srv_mc_pool, key, klen);
    return rc;
}

void srv_mc_remove_command(struct srv_client *c) {
    int force = srv_mc_force(c, 2);
    if (force < 0)
        return;
    srv_mc_lock();
    int64_t now = srv_mc_now();
    int rc = srv_mc_remove_pool(c->argv[1].p, c->argv[1].len, force, now);
    srv_mc_unlock();
    if (rc == POOL_EOBJECT_NOT_FOUND) /* a keyspace string (its shard lock: no pool mutex) */
        rc = srv_pseg_kv_remove(c->argv[1].p, c->argv[1].len, force, now);
    srv_mc_reply_status(c, rc);
}

void srv_mc_batchremove_command(struct srv_client *c) {
    uint64_t n;
    if (srv_mc_arg_u64(c, 1, "numkeys", 0, 1, (uint64_t)(c->argc - 2), &n) < 0)
        return;
    int force = srv_mc_force(c, 2 + (int)n);
    if (force < 0)
        return;
    int *rcs = cm_malloc(n * sizeof(*rcs));
    srv_mc_lock();
    int64_t now = srv_mc_now();
    for (size_t i = 0; i < n; i++)
        rcs[i] = srv_mc_remove_pool(c->argv[2 + i].p, c->argv[2 + i].len, force, now);
    srv_mc_unlock();
    resp_add_array_hdr(&c->out, (long)n);
    for (size_t i = 0; i < n; i++) {
        if (rcs[i] == POOL_EOBJECT_NOT_FOUND)
            rcs[i] = srv_pseg_kv_remove(c->argv[2 + i].p, c->argv[2 + i].len, force, now);
        srv_mc_add_status(c, rcs[i]);
    }
    cm_free(rcs);
}

#define SRV_MC_KV_STEP 4096 /* keys walked per step of a bulk removal */

/*
 * The keyspace part of a bulk removal, run before the pool part: walks w a step at a time,
 * pinning the matches, keeps those whose keys the pool does not hold, in flight included
 * (pool mutex; the pool's objects are still there, so a key held by both is hidden and its
 * string stays, as MC.REMOVE leaves it), then deletes them under their shard locks with
 * MC.REMOVE's rules. Memory: one step of pins. Returns the number deleted.
 */
static long srv_mc_remove_kv(struct srv_pseg_kv_walk *w, int force, int64_t now) {
    long n = 0;
    while (!w->done) {
        struct srv_pseg_kv_set kvs = {0};
        if (srv_pseg_kv_walk_next(w, SRV_MC_KV_STEP, &kvs) > 0) {
            srv_mc_lock();
            size_t nkv = srv_mc_kv_unshadowed(&kvs);
            srv_mc_unlock();
            for (size_t i = 0; i < nkv; i++) /* shard locks: after the pool mutex */
                n += srv_pseg_kv_remove_pinned(&kvs.v[i], force, now) == POOL_OK;
        }
        srv_pseg_kv_set_unpin(&kvs);
    }
    return n;
}

/*
 * MC.REMOVEBYREGEX (pattern) and MC.REMOVEALL (pattern NULL): deletes the matching keyspace
 * strings whose keys the pool does not hold (srv_mc_remove_kv: decided while the pool still
 * holds its objects), then removes the pool's matches (logged to the op-log) under the pool
 * mutex. A key held by both counts once and keeps its string. Returns the number removed
 * (pool objects and keyspace strings) or POOL_EINVALID_PARAMS for a bad pattern (nothing
 * removed).
 */
static long srv_mc_remove_matching(const char *pattern, int force) {
    struct srv_pseg_kv_walk w;
    if (srv_pseg_kv_walk_init(&w, pattern, 0) < 0)
        return POOL_EINVALID_PARAMS;
    int64_t now = srv_mc_now();
    long kv = srv_mc_remove_kv(&w, force, now);
    srv_pseg_kv_walk_fini(&w);
    srv_mc_lock();
    struct srv_oplog_keys *ks = srv_oplog_collect(srv_mc_pool, pattern);
    long rc = pattern ? pool_remove_regex(srv_mc_pool, pattern, force, now)
                      : pool_remove_all(srv_mc_pool, force, now);
    srv_oplog_log_keys(srv_mc_pool, ks);
    srv_mc_unlock();
    return rc < 0 ? rc : rc + kv;
}

void srv_mc_removebyregex_command(struct srv_client *c) {
    int force = srv_mc_force(c, 2);
    if (force < 0)
        return;
    char *pattern = srv_mc_pattern(c, 1);
    long rc = srv_mc_remove_matching(pattern, force);
    cm_free(pattern);
    if (rc < 0)
        srv_mc_reply_err(c, (int)rc);
    else
        resp_add_int(&c->out, rc);
}

void srv_mc_removeall_command(struct srv_client *c) {
    int force = srv_mc_force(c, 1);
    if (force < 0)
        return;
    resp_add_int(&c->out, srv_mc_remove_matching(NULL, force));
}

void srv_mc_batchreplicaclear_command(struct srv_client *c) {
    struct pool_uuid id;
    char seg[SRV_MC_NAME_CAP];
    if (srv_mc_arg_client(c, 1, &id) < 0 ||
        srv_mc_arg_str(c, 2, "segment name", seg, sizeof(seg)) < 0)
        return;
    size_t n = (size_t)c->argc - 3;
    const void **keys = cm_malloc(n * sizeof(*keys));
    size_t *lens = cm_malloc(n * sizeof(*lens));
    uint8_t *cleared = cm_malloc(n);
    for (size_t k = 0; k < n; k++) {
        keys[k] = c->argv[3 + k].p;
        lens[k] = c->argv[3 + k].len;
    }
    srv_mc_lock();
    long rc = pool_batch_replica_clear(srv_mc_pool, &id, (const void *const *)keys, lens, n, seg,
                                       srv_mc_now(), cleared);
    for (size_t k = 0; rc > 0 && k < n; k++)
        if (cleared[k])
            srv_oplog_log_key(srv_mc_pool, keys[k], lens[k]);
    srv_mc_unlock();
    if (rc < 0) {
        srv_mc_reply_err(c, (int)rc);
    } else {
        resp_add_array_hdr(&c->out, (long)n);
        for (size_t k = 0; k < n; k++)
            resp_add_int(&c->out, cleared[k]);
    }
    cm_free(keys);
    cm_free(lens);
    cm_free(cleared);
}

/* ---- copy and move ----------------------------------------------------------------------- */

/* Appends the copy/move plan map (source, targets). */
static void srv_mc_add_plan(struct srv_client *c, const struct pool_copy_plan *plan) {
    resp_add_map_hdr(&c->out, c->proto, 2);
    srv_mc_add_field(c, "source");
    srv_mc_add_replica(c, &plan->source);
    srv_mc_add_field(c, "targets");
    srv_mc_add_replicas(c, plan->targets, plan->ntargets);
}

void srv_mc_copystart_command(struct srv_client *c) {
    struct pool_uuid id;
    char src[SRV_MC_NAME_CAP];
    size_t n = (size_t)c->argc - 4;
    if (n > POOL_MAX_REPLICAS) {
        srv_reply_error(c, "INVALID_PARAMS more than 8 target segments");
        return;
    }
    char tgt[POOL_MAX_REPLICAS][SRV_MC_NAME_CAP];
    const char *tgts[POOL_MAX_REPLICAS];
    if (srv_mc_arg_client(c, 1, &id) < 0 ||
        srv_mc_arg_str(c, 3, "segment name", src, sizeof(src)) < 0)
        return;
    for (size_t k = 0; k < n; k++) {
        if (srv_mc_arg_str(c, 4 + (int)k, "segment name", tgt[k], sizeof(tgt[k])) < 0)
            return;
        tgts[k] = tgt[k];
    }
    struct pool_copy_plan plan;
    srv_mc_lock();
    int rc = pool_copy_start(srv_mc_pool, &id, c->argv[2].p, c->argv[2].len, src, tgts, n,
                             srv_mc_now(), &plan);
    if (rc == 0)
        srv_mc_add_plan(c, &plan);
    srv_mc_unlock();
    if (rc < 0)
        srv_mc_reply_err(c, rc);
}

void srv_mc_movestart_command(struct srv_client *c) {
    struct pool_uuid id;
    char src[SRV_MC_NAME_CAP], tgt[SRV_MC_NAME_CAP];
    if (srv_mc_arg_client(c, 1, &id) < 0 ||
        srv_mc_arg_str(c, 3, "segment name", src, sizeof(src)) < 0 ||
        srv_mc_arg_str(c, 4, "segment name", tgt, sizeof(tgt)) < 0)
        return;
    struct pool_copy_plan plan;
    srv_mc_lock();
    int rc = pool_move_start(srv_mc_pool, &id, c->argv[2].p, c->argv[2].len, src, tgt, srv_mc_now(),
                             &plan);
    if (rc == 0)
        srv_mc_add_plan(c, &plan);
    srv_mc_unlock();
    if (rc < 0)
        srv_mc_reply_err(c, rc);
}
