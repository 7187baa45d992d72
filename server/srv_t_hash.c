/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hash type and its commands: HSET HMSET HSETNX HGET HMGET HDEL HLEN HEXISTS HSTRLEN
 * HGETALL HKEYS HVALS HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN. A hash is a cm_ht of fields; each
 * field node holds the field bytes inline and points to its value (a separate heap string, replaced
 * on update).
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"
#include "server/srv_t.h"

#include "common/cm_ht.h"
#include "common/cm_mem.h"
#include "common/cm_util.h"
#include "redis-compat/resp_write.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

struct srv_hash {
    struct cm_ht ht;
};

struct srv_hfield {
    struct cm_ht_node node; /* first: the node pointer is the field pointer */
    struct srv_t_str *val;
    size_t flen;
    char f[];
};

static int srv_hfield_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct srv_hfield *h = (const struct srv_hfield *)n;
    return h->flen == klen && memcmp(h->f, key, klen) == 0;
}

static struct srv_hash *srv_hash_new(void) {
    struct srv_hash *h = srv_t_alloc(sizeof(*h));
    cm_ht_init(&h->ht, 4);
    return h;
}

static struct srv_hfield *srv_hash_find(const struct srv_hash *h, const char *f, size_t n) {
    return (struct srv_hfield *)cm_ht_find(&h->ht, srv_t_hash(f, n), f, n, srv_hfield_eq);
}

/*
 * Sets field f to value v (copied). Returns 1 when the field was created, 0 when updated;
 * with nx = 1 an existing field is left alone (returns 0).
 */
static int srv_hash_set(struct srv_hash *h, const char *f, size_t fn, const char *v, size_t vn,
                        int nx) {
    uint64_t hv = srv_t_hash(f, fn);
    struct srv_hfield *e = (struct srv_hfield *)cm_ht_find(&h->ht, hv, f, fn, srv_hfield_eq);
    if (e) {
        if (!nx) {
            srv_t_free(e->val);
            e->val = srv_t_str_new(v, vn);
        }
        return 0;
    }
    e = srv_t_alloc(sizeof(*e) + fn);
    e->node.hash = hv;
    e->flen = fn;
    if (fn)
        memcpy(e->f, f, fn);
    e->val = srv_t_str_new(v, vn);
    cm_ht_insert(&h->ht, &e->node);
    return 1;
}

static void srv_hfield_destroy(struct cm_ht_node *n, void *arg) {
    (void)arg;
    struct srv_hfield *e = (struct srv_hfield *)n;
    srv_t_free(e->val);
    srv_t_free(e);
}

/* Frees hash payload p, its fields and values (last owner, any thread). */
void srv_hash_free(void *p) {
    struct srv_hash *h = p;
    cm_ht_clear(&h->ht, srv_hfield_destroy, NULL);
    cm_ht_fini(&h->ht);
    srv_t_free(h);
}

/* Deep copy of hash payload p (caller holds its shard lock or the exclusive lock). */
void *srv_hash_dup(const void *p) {
    const struct srv_hash *h = p;
    struct srv_hash *n = srv_hash_new();
    size_t i;
    struct cm_ht_node *node, *tmp;
    cm_ht_foreach_node(&h->ht, i, node, tmp) {
        const struct srv_hfield *e = (const struct srv_hfield *)node;
        srv_hash_set(n, e->f, e->flen, e->val->p, e->val->len, 0);
    }
    return n;
}

/*
 * Finds the hash at argv[1] for writing, creating (and linking) an empty one when absent.
 * Returns NULL after replying WRONGTYPE (shard unlocked); otherwise the shard stays locked.
 */
static struct srv_obj *srv_hash_lookup_create(struct srv_client *c, struct srv_db_ref *r) {
    int bad;
    struct srv_obj *o = srv_t_find(c, r, SRV_TYPE_HASH, 0, &bad);
    if (bad)
        return NULL;
    if (!o) {
        o = srv_obj_create_agg(c->argv[1].p, c->argv[1].len, SRV_TYPE_HASH, srv_hash_new());
        srv_db_insert(r, o);
    }
    return o;
}

/* ---------------------------------------------------------------- writes */

/* HSET (reply = number created) and HMSET (reply = OK). */
static void srv_hset_generic(struct srv_client *c, int hmset) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    if (c->argc % 2 != 0) {
        srv_reply_wrong_arity(c, hmset ? "hmset" : "hset");
        return;
    }
    struct srv_db_ref r;
    struct srv_obj *o = srv_hash_lookup_create(c, &r);
    if (!o)
        return;
    long long created = 0;
    for (int i = 2; i < c->argc; i += 2)
        created += srv_hash_set(o->payload, c->argv[i].p, c->argv[i].len, c->argv[i + 1].p,
                                c->argv[i + 1].len, 0);
    srv_db_touch(o);
    srv_db_unlock(&r);
    srv_notify(SRV_NOTIFY_HASH, "hset", c->argv[1].p, c->argv[1].len);
    if (hmset)
        srv_reply_ok(c);
    else
        resp_add_int(&c->out, created);
}

void srv_hset_command(struct srv_client *c) {
    srv_hset_generic(c, 0);
}

void srv_hmset_command(struct srv_client *c) {
    srv_hset_generic(c, 1);
}

void srv_hsetnx_command(struct srv_client *c) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    struct srv_db_ref r;
    struct srv_obj *o = srv_hash_lookup_create(c, &r);
    if (!o)
        return;
    int created =
        srv_hash_set(o->payload, c->argv[2].p, c->argv[2].len, c->argv[3].p, c->argv[3].len, 1);
    if (created)
        srv_db_touch(o);
    srv_db_unlock(&r);
    if (created)
        srv_notify(SRV_NOTIFY_HASH, "hset", c->argv[1].p, c->argv[1].len);
    resp_add_int(&c->out, created);
}

void srv_hdel_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_HASH, 0, &bad);
    if (bad)
        return;
    long long removed = 0;
    if (o) {
        struct srv_hash *h = o->payload;
        for (int i = 2; i < c->argc && cm_ht_count(&h->ht); i++) {
            struct srv_hfield *e = srv_hash_find(h, c->argv[i].p, c->argv[i].len);
            if (e) {
                cm_ht_remove(&h->ht, &e->node);
                srv_hfield_destroy(&e->node, NULL);
                removed++;
            }
        }
        if (removed)
            srv_notify(SRV_NOTIFY_HASH, "hdel", c->argv[1].p, c->argv[1].len);
        if (cm_ht_count(&h->ht) == 0) {
            srv_notify(SRV_NOTIFY_GENERIC, "del", c->argv[1].p, c->argv[1].len);
            srv_db_unlink(&r, o);
        } else if (removed) {
            srv_db_touch(o);
        }
    }
    srv_db_unlock(&r);
    resp_add_int(&c->out, removed);
}

void srv_hincrby_command(struct srv_client *c) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    long long incr, cur = 0;
    if (srv_arg_ll(c, 3, &incr, NULL) < 0)
        return;
    struct srv_db_ref r;
    struct srv_obj *o = srv_hash_lookup_create(c, &r);
    if (!o)
        return;
    struct srv_hfield *e = srv_hash_find(o->payload, c->argv[2].p, c->argv[2].len);
    const char *err = NULL;
    if (e && cm_str2ll(e->val->p, e->val->len, &cur) != 0)
        err = "ERR hash value is not an integer";
    else if ((incr < 0 && cur < 0 && incr < LLONG_MIN - cur) ||
             (incr > 0 && cur > 0 && incr > LLONG_MAX - cur))
        err = "ERR increment or decrement would overflow";
    if (err) {
        if (cm_ht_count(&((struct srv_hash *)o->payload)->ht) == 0)
            srv_db_unlink(&r, o);
        srv_db_unlock(&r);
        srv_reply_error(c, err);
        return;
    }
    cur += incr;
    char buf[CM_LL_STR_SIZE];
    int n = cm_ll2str(buf, sizeof(buf), cur);
    srv_hash_set(o->payload, c->argv[2].p, c->argv[2].len, buf, (size_t)n, 0);
    srv_db_touch(o);
    srv_db_unlock(&r);
    srv_notify(SRV_NOTIFY_HASH, "hincrby", c->argv[1].p, c->argv[1].len);
    resp_add_int(&c->out, cur);
}

void srv_hincrbyfloat_command(struct srv_client *c) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    long double incr, cur = 0;
    if (cm_str2ld(c->argv[3].p, c->argv[3].len, &incr) != 0) {
        srv_reply_error(c, "ERR value is not a valid float");
        return;
    }
    if (isnan(incr) || isinf(incr)) {
        srv_reply_error(c, "ERR value is NaN or Infinity");
        return;
    }
    struct srv_db_ref r;
    struct srv_obj *o = srv_hash_lookup_create(c, &r);
    if (!o)
        return;
    struct srv_hfield *e = srv_hash_find(o->payload, c->argv[2].p, c->argv[2].len);
    const char *err = NULL;
    if (e && cm_str2ld(e->val->p, e->val->len, &cur) != 0)
        err = "ERR hash value is not a float";
    else if (isnan(cur + incr) || isinf(cur + incr))
        err = "ERR increment would produce NaN or Infinity";
    if (err) {
        if (cm_ht_count(&((struct srv_hash *)o->payload)->ht) == 0)
            srv_db_unlink(&r, o);
        srv_db_unlock(&r);
        srv_reply_error(c, err);
        return;
    }
    char buf[CM_LD_STR_SIZE];
    int n = cm_ld2str(buf, sizeof(buf), cur + incr);
    srv_hash_set(o->payload, c->argv[2].p, c->argv[2].len, buf, (size_t)n, 0);
    srv_db_touch(o);
    srv_db_unlock(&r);
    srv_notify(SRV_NOTIFY_HASH, "hincrbyfloat", c->argv[1].p, c->argv[1].len);
    resp_add_bulk(&c->out, buf, (size_t)n);
}

/* ---------------------------------------------------------------- reads */

void srv_hget_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_HASH, 1, &bad);
    if (bad)
        return;
    const struct srv_hfield *e = o ? srv_hash_find(o->payload, c->argv[2].p, c->argv[2].len) : NULL;
    if (e)
        resp_add_bulk(&c->out, e->val->p, e->val->len);
    else
        resp_add_null(&c->out, c->proto);
    srv_db_unlock(&r);
}

void srv_hmget_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_HASH, 1, &bad);
    if (bad)
        return;
    resp_add_array_hdr(&c->out, c->argc - 2);
    for (int i = 2; i < c->argc; i++) {
        const struct srv_hfield *e =
            o ? srv_hash_find(o->payload, c->argv[i].p, c->argv[i].len) : NULL;
        if (e)
            resp_add_bulk(&c->out, e->val->p, e->val->len);
        else
            resp_add_null(&c->out, c->proto);
    }
    srv_db_unlock(&r);
}

/* HLEN (what = 0), HEXISTS (1), HSTRLEN (2): integer replies. */
static void srv_hash_int_reply(struct srv_client *c, int what) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_HASH, 1, &bad);
    if (bad)
        return;
    long long v = 0;
    if (o && what == 0) {
        v = (long long)cm_ht_count(&((struct srv_hash *)o->payload)->ht);
    } else if (o) {
        const struct srv_hfield *e = srv_hash_find(o->payload, c->argv[2].p, c->argv[2].len);
        v = !e ? 0 : what == 1 ? 1 : (long long)e->val->len;
    }
    srv_db_unlock(&r);
    resp_add_int(&c->out, v);
}

void srv_hlen_command(struct srv_client *c) {
    srv_hash_int_reply(c, 0);
}

void srv_hexists_command(struct srv_client *c) {
    srv_hash_int_reply(c, 1);
}

void srv_hstrlen_command(struct srv_client *c) {
    srv_hash_int_reply(c, 2);
}

#define SRV_H_KEYS 1
#define SRV_H_VALS 2

/* HGETALL (keys and values, a map), HKEYS, HVALS (arrays). */
static void srv_hash_dump(struct srv_client *c, int what) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_HASH, 1, &bad);
    if (bad)
        return;
    long n = o ? (long)cm_ht_count(&((struct srv_hash *)o->payload)->ht) : 0;
    if (what == (SRV_H_KEYS | SRV_H_VALS))
        resp_add_map_hdr(&c->out, c->proto, n);
    else
        resp_add_array_hdr(&c->out, n);
    if (o) {
        struct srv_hash *h = o->payload;
        size_t i;
        struct cm_ht_node *node, *tmp;
        cm_ht_foreach_node(&h->ht, i, node, tmp) {
            const struct srv_hfield *e = (const struct srv_hfield *)node;
            if (what & SRV_H_KEYS)
                resp_add_bulk(&c->out, e->f, e->flen);
            if (what & SRV_H_VALS)
                resp_add_bulk(&c->out, e->val->p, e->val->len);
        }
    }
    srv_db_unlock(&r);
}

void srv_hgetall_command(struct srv_client *c) {
    srv_hash_dump(c, SRV_H_KEYS | SRV_H_VALS);
}

void srv_hkeys_command(struct srv_client *c) {
    srv_hash_dump(c, SRV_H_KEYS);
}

void srv_hvals_command(struct srv_client *c) {
    srv_hash_dump(c, SRV_H_VALS);
}

/* ---------------------------------------------------------------- HRANDFIELD, HSCAN */

/* One field (and its value when withvalues; a pair array in RESP3). */
static void srv_hash_reply_field(struct srv_client *c, const struct srv_hfield *e, int withvalues) {
    if (withvalues && c->proto == 3)
        resp_add_array_hdr(&c->out, 2);
    resp_add_bulk(&c->out, e->f, e->flen);
    if (withvalues)
        resp_add_bulk(&c->out, e->val->p, e->val->len);
}

static void srv_hrandfield_with_count(struct srv_client *c) {
    long long count;
    if (srv__rand_count(c, &count) < 0)
        return;
    int withvalues = c->argc == 4;
    if (c->argc > 4 || (withvalues && !srv_arg_is(c, 3, "withvalues"))) {
        srv_reply_syntax_error(c);
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_HASH, 1, &bad);
    if (bad)
        return;
    if (!o || count == 0) {
        srv_db_unlock(&r);
        resp_add_array_hdr(&c->out, 0);
        return;
    }
    const struct srv_hash *h = o->payload;
    size_t size = cm_ht_count(&h->ht);
    size_t n = count < 0 ? (size_t)-count : (size_t)count < size ? (size_t)count : size;
    resp_add_array_hdr(&c->out, (long)(withvalues && c->proto != 3 ? 2 * n : n));
    if (count < 0) {
        for (size_t i = 0; i < n; i++)
            srv_hash_reply_field(c, (const struct srv_hfield *)cm_ht_random(&h->ht), withvalues);
    } else if (n == size) {
        size_t i;
        struct cm_ht_node *node, *tmp;
        cm_ht_foreach_node(&h->ht, i, node, tmp)
            srv_hash_reply_field(c, (const struct srv_hfield *)node, withvalues);
    } else {
        const struct cm_ht_node **v = cm_malloc(n * sizeof(*v));
        srv__pick_distinct(&h->ht, n, v);
        for (size_t i = 0; i < n; i++)
            srv_hash_reply_field(c, (const struct srv_hfield *)v[i], withvalues);
        cm_free(v);
    }
    srv_db_unlock(&r);
}

void srv_hrandfield_command(struct srv_client *c) {
    if (c->argc >= 3) {
        srv_hrandfield_with_count(c);
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_HASH, 1, &bad);
    if (bad)
        return;
    if (o)
        srv_hash_reply_field(
            c, (const struct srv_hfield *)cm_ht_random(&((struct srv_hash *)o->payload)->ht), 0);
    else
        resp_add_null(&c->out, c->proto);
    srv_db_unlock(&r);
}

static void srv_hfield_key(const struct cm_ht_node *n, const char **p, size_t *len) {
    const struct srv_hfield *e = (const struct srv_hfield *)n;
    *p = e->f;
    *len = e->flen;
}

static void srv_hfield_emit(struct srv_client *c, const struct cm_ht_node *n) {
    const struct srv_hfield *e = (const struct srv_hfield *)n;
    resp_add_bulk(&c->out, e->f, e->flen);
    resp_add_bulk(&c->out, e->val->p, e->val->len);
}

void srv_hscan_command(struct srv_client *c) {
    static const struct srv_scan_type hash = {SRV_TYPE_HASH, offsetof(struct srv_hash, ht), 2,
                                              srv_hfield_key, srv_hfield_emit};
    srv__scan_command(c, &hash);
}
