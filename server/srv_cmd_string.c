/* SPDX-License-Identifier: Apache-2.0 */
/*
 * String commands: SET and its variants, GET variants, MGET/MSET, APPEND, GETRANGE/SETRANGE,
 * INCR/DECR families, plus the product's PUT (= SET key value). Values are allocated in the
 * segment before the shard lock is taken; read-modify-write commands modify in place when no
 * reader holds the value, else build a new value and swap it in if the key did not change.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_defer.h"
#include "server/srv_offload.h"
#include "server/srv_pool_kv.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"
#include "server/srv_string.h"

#include "common/cm_atomic.h"
#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "common/cm_util.h"
#include "redis-compat/resp_write.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#define SRV_SET_NX      0x01u
#define SRV_SET_XX      0x02u
#define SRV_SET_GET     0x04u
#define SRV_SET_KEEPTTL 0x08u
#define SRV_SET_EX      0x10u
#define SRV_SET_PX      0x20u
#define SRV_SET_EXAT    0x40u
#define SRV_SET_PXAT    0x80u
#define SRV_SET_PERSIST 0x100u
#define SRV_SET_EXPIRES (SRV_SET_EX | SRV_SET_PX | SRV_SET_EXAT | SRV_SET_PXAT)

/* ---------------------------------------------------------------- option parsing */

/* Parses SET (is_set) or GETEX options from argument first on. Returns 0 or -1 (replied). */
static int srv_parse_set_opts(struct srv_client *c, int first, int is_set, unsigned *flags,
                              int *expire_arg) {
    *flags = 0;
    *expire_arg = -1;
    for (int j = first; j < c->argc; j++) {
        int has_next = j + 1 < c->argc;
        unsigned f = *flags;
        if (is_set && srv_arg_is(c, j, "nx") && !(f & SRV_SET_XX)) {
            *flags |= SRV_SET_NX;
        } else if (is_set && srv_arg_is(c, j, "xx") && !(f & SRV_SET_NX)) {
            *flags |= SRV_SET_XX;
        } else if (is_set && srv_arg_is(c, j, "get")) {
            *flags |= SRV_SET_GET;
        } else if (is_set && srv_arg_is(c, j, "keepttl") && !(f & (SRV_SET_EXPIRES))) {
            *flags |= SRV_SET_KEEPTTL;
        } else if (!is_set && srv_arg_is(c, j, "persist") && !(f & SRV_SET_EXPIRES)) {
            *flags |= SRV_SET_PERSIST;
        } else if (has_next && !(f & (SRV_SET_EXPIRES | SRV_SET_KEEPTTL | SRV_SET_PERSIST)) &&
                   (srv_arg_is(c, j, "ex") || srv_arg_is(c, j, "px") || srv_arg_is(c, j, "exat") ||
                    srv_arg_is(c, j, "pxat"))) {
            *flags |= srv_arg_is(c, j, "ex")     ? SRV_SET_EX
                      : srv_arg_is(c, j, "px")   ? SRV_SET_PX
                      : srv_arg_is(c, j, "exat") ? SRV_SET_EXAT
                                                 : SRV_SET_PXAT;
            *expire_arg = ++j;
        } else {
            srv_reply_syntax_error(c);
            return -1;
        }
    }
    return 0;
}

/*
 * Converts the expire argument to absolute Unix milliseconds with Redis's checks.
 * Returns 0 or -1 (replied).
 */
static int srv_expire_ms(struct srv_client *c, int arg, unsigned flags, const char *cmdname,
                         int64_t *out) {
    long long v;
    if (srv_arg_ll(c, arg, &v, NULL) < 0)
        return -1;
    int seconds = (flags & (SRV_SET_EX | SRV_SET_EXAT)) != 0;
    if (v <= 0 || (seconds && v > LLONG_MAX / 1000)) {
        srv_reply_errorf(c, "ERR invalid expire time in '%s' command", cmdname);
        return -1;
    }
    if (seconds)
        v *= 1000;
    if (flags & (SRV_SET_EX | SRV_SET_PX)) {
        if (v > LLONG_MAX - srv_now_ms()) {
            srv_reply_errorf(c, "ERR invalid expire time in '%s' command", cmdname);
            return -1;
        }
        v += srv_now_ms();
    }
    *out = v;
    return 0;
}

/* ---------------------------------------------------------------- SET family */

/*
 * Replies o's value (shard lock held). An offloaded value is read on the deferred-work pool
 * when c's command may be deferred (srv_offload_get_async: o pinned, c suspended, the value as
 * of now replied later); the caller must then append nothing more, but may go on changing the
 * keyspace (GETDEL, GETEX, SET ... GET). Otherwise it is read here, synchronously.
 */
static void srv_reply_value_async(struct srv_client *c, struct srv_obj *o) {
    if (!(srv_obj_offloaded(o) && srv_offload_get_async(c, o)))
        srv_reply_value(c, o);
}

/*
 * Stores the new object o (owned by the call) under key with the SET flags. Replies unless reply is
 * 0. Returns 1 when the key was set, 0 when NX/XX prevented it, -1 on error (replied).
 */
static int srv_set_obj(struct srv_client *c, const struct srv_arg *key, struct srv_obj *o,
                       unsigned flags, int64_t expire_at, int reply) {
    struct srv_db_ref r;
    srv_db_lock(&r, key->p, key->len);
    struct srv_obj *old = srv_db_find(&r, srv_now_ms());
    if ((flags & SRV_SET_GET) && old && old->type != SRV_TYPE_STRING) {
        srv_db_unlock(&r);
        srv_obj_unref(o);
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        return -1;
    }
    if (flags & SRV_SET_GET) {
        if (old)
            srv_reply_value_async(c, old); /* the only reply with GET: may come later */
        else
            resp_add_null(&c->out, c->proto);
        if (!old)
            srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", key->p, key->len);
    }
    if (((flags & SRV_SET_NX) && old) || ((flags & SRV_SET_XX) && !old)) {
        srv_db_unlock(&r);
        srv_obj_unref(o);
        if (reply && !(flags & SRV_SET_GET))
            resp_add_null(&c->out, c->proto);
        return 0;
    }
    int64_t exp = expire_at;
    if ((flags & SRV_SET_KEEPTTL) && old)
        exp = cm_atomic_load_relaxed(&old->expire_ms);
    cm_atomic_store_relaxed(&o->expire_ms, exp);
    if (old)
        srv_db_replace(&r, old, o);
    else
        srv_db_insert(&r, o);
    srv_db_unlock(&r);
    srv_notify(SRV_NOTIFY_STRING, "set", key->p, key->len);
    if (expire_at)
        srv_notify(SRV_NOTIFY_GENERIC, "expire", key->p, key->len);
    if (reply && !(flags & SRV_SET_GET))
        srv_reply_ok(c);
    return 1;
}

/* SET's flags as the pool bridge takes them. */
static unsigned srv_set_pkv_flags(unsigned flags, int64_t expire_at) {
    return ((flags & SRV_SET_NX) ? SRV_PKV_NX : 0) | ((flags & SRV_SET_XX) ? SRV_PKV_XX : 0) |
           ((flags & SRV_SET_GET) ? SRV_PKV_GET : 0) | (expire_at ? SRV_PKV_EXPIRE : 0);
}

/* As srv_set_obj with a copy of val as the new value; into the pool when it should go there. */
static int srv_set_generic(struct srv_client *c, const struct srv_arg *key,
                           const struct srv_arg *val, unsigned flags, int64_t expire_at,
                           int reply) {
    if (srv_pkv_set_wanted(key->p, key->len))
        return srv_pkv_set(c, key, val, srv_set_pkv_flags(flags, expire_at), reply);
    struct srv_obj *o = srv_obj_from(c, key->p, key->len, val->p, val->len);
    if (!o)
        return -1;
    return srv_set_obj(c, key, o, flags, expire_at, reply);
}

void srv_set_prebuilt(struct srv_client *c, struct srv_obj *o) {
    struct srv_arg key = {o->key, o->klen};
    srv_set_obj(c, &key, o, 0, 0, 1);
}

void srv_set_command(struct srv_client *c) {
    unsigned flags;
    int earg;
    int64_t exp = 0;
    if (srv_parse_set_opts(c, 3, 1, &flags, &earg) < 0)
        return;
    if (earg >= 0 && srv_expire_ms(c, earg, flags, "set", &exp) < 0)
        return;
    srv_set_generic(c, &c->argv[1], &c->argv[2], flags, exp, 1);
}

void srv_put_command(struct srv_client *c) {
    srv_set_generic(c, &c->argv[1], &c->argv[2], 0, 0, 1);
}

void srv_setnx_command(struct srv_client *c) {
    int rc = srv_set_generic(c, &c->argv[1], &c->argv[2], SRV_SET_NX, 0, 0);
    if (rc >= 0)
        resp_add_int(&c->out, rc);
}

static void srv_setex_generic(struct srv_client *c, unsigned unit, const char *name) {
    int64_t exp;
    if (srv_expire_ms(c, 2, unit, name, &exp) < 0)
        return;
    srv_set_generic(c, &c->argv[1], &c->argv[3], 0, exp, 1);
}

void srv_setex_command(struct srv_client *c) {
    srv_setex_generic(c, SRV_SET_EX, "setex");
}

void srv_psetex_command(struct srv_client *c) {
    srv_setex_generic(c, SRV_SET_PX, "psetex");
}

void srv_getset_command(struct srv_client *c) {
    srv_set_generic(c, &c->argv[1], &c->argv[2], SRV_SET_GET, 0, 1);
}

void srv_mset_command(struct srv_client *c) {
    if (c->argc % 2 == 0) {
        srv_reply_wrong_arity(c, "mset");
        return;
    }
    for (int i = 1; i < c->argc; i += 2)
        if (srv_set_generic(c, &c->argv[i], &c->argv[i + 1], 0, 0, 0) < 0)
            return;
    srv_reply_ok(c);
}

void srv_msetnx_command(struct srv_client *c) {
    if (c->argc % 2 == 0) {
        srv_reply_wrong_arity(c, "msetnx");
        return;
    }
    int64_t now = srv_now_ms();
    for (int i = 1; i < c->argc; i += 2) {
        struct srv_db_ref r;
        srv_db_lock(&r, c->argv[i].p, c->argv[i].len);
        int exists = srv_db_peek(&r, now) != NULL;
        srv_db_unlock(&r);
        if (exists || srv_pkv_exists(c->argv[i].p, c->argv[i].len)) {
            resp_add_int(&c->out, 0);
            return;
        }
    }
    for (int i = 1; i < c->argc; i += 2)
        if (srv_set_generic(c, &c->argv[i], &c->argv[i + 1], 0, 0, 0) < 0)
            return;
    resp_add_int(&c->out, 1);
}

/* ---------------------------------------------------------------- GET family */

void srv_get_command(struct srv_client *c) {
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    if (o && o->type != SRV_TYPE_STRING)
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
    else if (o && !(srv_obj_offloaded(o) && srv_offload_get_async(c, o)))
        srv_reply_value(c, o); /* else read off the loop, replied later (srv_offload.h) */
    srv_db_unlock(&r);
    int hit = o != NULL;
    if (!hit) {
        hit = srv_pkv_get_async(c, c->argv[1].p, c->argv[1].len);
        if (hit == 2)
            return; /* the pool read runs off the loop; it replies and counts (srv_pool_kv.h) */
    }
    if (!hit) {
        resp_add_null(&c->out, c->proto);
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
    }
    srv_db_count_hit(hit);
}

/* ---------------------------------------------------------------- MGET off the loop */

/* What one key of a deferred MGET replies. */
enum srv_mget_kind {
    SRV_MGET_OUT = 0, /* bytes rendered at once into the job's out (nil, a pool value) */
    SRV_MGET_MEM,     /* a value in memory: o pinned, sent at the end */
    SRV_MGET_DISK,    /* an offloaded value: o pinned, read on the pool */
};

struct srv_mget_item {
    struct srv_obj *o; /* pinned (MEM, DISK) */
    char *buf;         /* DISK: the value read */
    size_t at;         /* OUT: end of this key's bytes in the job's out */
    uint32_t gen;      /* DISK: o's disk generation at the MGET */
    int rc;            /* DISK: the read's result */
    int kind;          /* enum srv_mget_kind */
};

/* An MGET with offloaded values: reads on the deferred-work pool, the reply on the loop. */
struct srv_mget_job {
    struct srv_defer d;
    struct cm_buf out;
    int n;
    struct srv_mget_item it[];
};

#define SRV_MGET_CHUNK 64 /* offloaded values read together */

/* Pool thread: reads the offloaded values, SRV_MGET_CHUNK at a time. */
static void srv_mget_work(struct srv_defer *d) {
    struct srv_mget_job *j = (struct srv_mget_job *)(void *)d;
    struct srv_obj *o[SRV_MGET_CHUNK];
    char *bufs[SRV_MGET_CHUNK];
    int rc[SRV_MGET_CHUNK], idx[SRV_MGET_CHUNK];
    int i = 0;
    while (i < j->n) {
        unsigned m = 0;
        for (; i < j->n && m < SRV_MGET_CHUNK; i++) {
            if (j->it[i].kind != SRV_MGET_DISK)
                continue;
            j->it[i].buf = cm_malloc(j->it[i].o->vlen ? j->it[i].o->vlen : 1);
            o[m] = j->it[i].o;
            bufs[m] = j->it[i].buf;
            idx[m++] = i;
        }
        if (m > 0)
            srv_offload_read_many(o, bufs, rc, m);
        for (unsigned k = 0; k < m; k++)
            j->it[idx[k]].rc = rc[k];
    }
}

/* Appends the reply to c (NULL: the client is gone, only release) and frees j. Loop thread. */
static void srv_mget_render(struct srv_mget_job *j, struct srv_client *c) {
    size_t from = 0;
    if (c)
        resp_add_array_hdr(&c->out, j->n);
    for (int i = 0; i < j->n; i++) {
        struct srv_mget_item *t = &j->it[i];
        if (t->kind == SRV_MGET_OUT) {
            if (c)
                cm_buf_append(&c->out, j->out.data + from, t->at - from);
            from = t->at;
            continue;
        }
        if (t->kind == SRV_MGET_MEM && c) {
            srv_reply_value(c, t->o); /* pinned: its bytes did not change */
        } else if (t->kind == SRV_MGET_DISK) {
            if (t->rc == 0)
                srv_offload_after_read(t->o, t->gen, t->buf);
            if (c && t->rc == 0)
                resp_add_bulk(&c->out, t->buf, t->o->vlen);
            else if (c)
                resp_add_null(&c->out, c->proto);
            cm_free(t->buf);
        }
        srv_obj_unref(t->o);
    }
    cm_buf_fini(&j->out);
    cm_free(j);
}

static void srv_mget_done(struct srv_defer *d, struct srv_client *c) {
    srv_mget_render((struct srv_mget_job *)(void *)d, c);
}

/* Looks up key i of c's MGET into item t (keyspace lock held). Returns 1 for an offloaded value. */
static int srv_mget_item(struct srv_client *c, struct srv_mget_job *j, int i, int64_t now) {
    struct srv_mget_item *t = &j->it[i - 1];
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[i].p, c->argv[i].len);
    struct srv_obj *o = srv_db_find(&r, now);
    int hit = o != NULL;
    if (o && o->type == SRV_TYPE_STRING) {
        srv_obj_ref(o);
        t->o = o;
        t->kind = srv_obj_offloaded(o) ? SRV_MGET_DISK : SRV_MGET_MEM;
        t->gen = o->handle;
    } else if (o) {
        resp_add_null(&j->out, c->proto);
    }
    srv_db_unlock(&r);
    if (!o && !(hit = srv_pkv_get_buf(&j->out, c->argv[i].p, c->argv[i].len))) {
        resp_add_null(&j->out, c->proto);
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[i].p, c->argv[i].len);
    }
    t->at = j->out.len;
    srv_db_count_hit(hit);
    return t->kind == SRV_MGET_DISK;
}

/*
 * MGET when the SSD tier holds values and c's command may be deferred: pins what it finds, and
 * when some values are on disk reads them on the deferred-work pool and replies later (all
 * values as of the MGET). Returns 1 when it took the command (replied now or deferred), 0 to
 * run the synchronous MGET.
 */
static int srv_mget_async(struct srv_client *c) {
    if (!srv_offload_enabled() || srv_offload_keys() == 0 || !srv_client_can_defer(c))
        return 0;
    int n = c->argc - 1, ndisk = 0;
    struct srv_mget_job *j = cm_calloc(1, sizeof(*j) + (size_t)n * sizeof(j->it[0]));
    j->n = n;
    cm_buf_init(&j->out);
    int64_t now = srv_now_ms();
    for (int i = 1; i < c->argc; i++)
        ndisk += srv_mget_item(c, j, i, now);
    if (ndisk == 0 || srv_client_defer(c, &j->d, srv_mget_done) < 0) {
        srv_mget_work(&j->d); /* nothing to read, or (not expected) no deferral: read here */
        srv_mget_render(j, c);
        return 1;
    }
    srv_defer_submit(&j->d, srv_mget_work);
    return 1;
}

void srv_mget_command(struct srv_client *c) {
    if (srv_mget_async(c))
        return;
    int64_t now = srv_now_ms();
    resp_add_array_hdr(&c->out, c->argc - 1);
    for (int i = 1; i < c->argc; i++) {
        struct srv_db_ref r;
        srv_db_lock(&r, c->argv[i].p, c->argv[i].len);
        struct srv_obj *o = srv_db_find(&r, now);
        int hit = o != NULL;
        if (o && o->type == SRV_TYPE_STRING)
            srv_reply_value(c, o);
        else if (o)
            resp_add_null(&c->out, c->proto);
        srv_db_unlock(&r);
        if (!o && !(hit = srv_pkv_get(c, c->argv[i].p, c->argv[i].len))) {
            resp_add_null(&c->out, c->proto);
            srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[i].p, c->argv[i].len);
        }
        srv_db_count_hit(hit);
    }
}

void srv_getdel_command(struct srv_client *c) {
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    if (o && o->type != SRV_TYPE_STRING) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
    } else if (o) {
        srv_reply_value_async(c, o); /* a disk read keeps o pinned past its unlink */
        srv_db_unlink(&r, o);
        srv_notify(SRV_NOTIFY_GENERIC, "del", c->argv[1].p, c->argv[1].len);
    }
    srv_db_unlock(&r);
    if (!o && srv_pkv_get(c, c->argv[1].p, c->argv[1].len)) { /* a pool object: read, then DEL */
        srv_pkv_del(c->argv[1].p, c->argv[1].len);
    } else if (!o) {
        resp_add_null(&c->out, c->proto);
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
    }
}

void srv_getex_command(struct srv_client *c) {
    unsigned flags;
    int earg;
    int64_t exp = 0;
    if (srv_parse_set_opts(c, 2, 0, &flags, &earg) < 0)
        return;
    /* Redis's order: syntax, then a missing key (null), the type, and only then the time. */
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    if (!o) {
        resp_add_null(&c->out, c->proto);
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
    } else if (o->type != SRV_TYPE_STRING) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
    } else if (earg >= 0 && srv_expire_ms(c, earg, flags, "getex", &exp) < 0) {
        /* replied */
    } else {
        srv_reply_value_async(c, o);
        const char *ev = NULL;
        if (earg >= 0 && exp <= srv_now_ms()) {
            srv_db_unlink(&r, o);
            ev = "del";
        } else if (earg >= 0) {
            srv_db_set_expire(&r, o, exp);
            ev = "expire";
        } else if ((flags & SRV_SET_PERSIST) && cm_atomic_load_relaxed(&o->expire_ms)) {
            srv_db_set_expire(&r, o, 0);
            ev = "persist";
        }
        if (ev)
            srv_notify(SRV_NOTIFY_GENERIC, ev, c->argv[1].p, c->argv[1].len);
    }
    srv_db_unlock(&r);
}

void srv_strlen_command(struct srv_client *c) {
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    if (o && o->type != SRV_TYPE_STRING)
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
    else if (o)
        resp_add_int(&c->out, (long long)o->vlen);
    srv_db_unlock(&r);
    if (!o) {
        int64_t plen = srv_pkv_strlen(c->argv[1].p, c->argv[1].len);
        resp_add_int(&c->out, plen > 0 ? plen : 0);
        if (plen <= 0)
            srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
    }
}

void srv_getrange_command(struct srv_client *c) {
    long long start, end;
    if (srv_arg_ll(c, 2, &start, NULL) < 0 || srv_arg_ll(c, 3, &end, NULL) < 0)
        return;
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    long long len = o ? (long long)o->vlen : 0;
    if (o && o->type != SRV_TYPE_STRING) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
    } else if (start < 0 && end < 0 && start > end) {
        resp_add_bulk(&c->out, "", 0);
    } else {
        if (start < 0)
            start += len;
        if (end < 0)
            end += len;
        if (start < 0)
            start = 0;
        if (end < 0)
            end = 0;
        if (end >= len)
            end = len - 1;
        if (!o || start > end || len == 0)
            resp_add_bulk(&c->out, "", 0);
        else
            resp_add_bulk(&c->out, srv_obj_val(o) + start, (size_t)(end - start + 1));
    }
    srv_db_unlock(&r);
    if (!o)
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
}

/* ---------------------------------------------------------------- read-modify-write */

/* Runs a read-modify-write of the string at argv[1]; see srv_string.h for the contract. */
long long srv__rmw_run(struct srv_client *c, const struct srv_rmw *rmw, size_t *oldlen_out) {
    const struct srv_arg *key = &c->argv[1];
    for (int attempt = 0;; attempt++) {
        struct srv_db_ref r;
        srv_db_lock(&r, key->p, key->len);
        struct srv_obj *o = srv_db_find(&r, srv_now_ms());
        if (o && o->type != SRV_TYPE_STRING) {
            srv_db_unlock(&r);
            srv_reply_error(c, SRV_ERR_WRONGTYPE);
            return -1;
        }
        if (!o && attempt == 0 && srv_pkv_exists(key->p, key->len)) {
            srv_db_unlock(&r);
            srv_reply_error(c, SRV_PKV_ERR_RMW);
            return -1;
        }
        size_t oldlen = o ? o->vlen : 0;
        char *oval = o ? srv_obj_val(o) : NULL;
        long long newlen = rmw->plan(c, oval, oldlen, o != NULL, rmw->arg);
        if (newlen < 0) {
            *oldlen_out = oldlen;
            srv_db_unlock(&r);
            return newlen;
        }
        if (o && cm_atomic_load_relaxed(&o->refs) == 1 && srv_obj_capacity(o) >= (uint64_t)newlen) {
            rmw->build(oval, oval, oldlen, (size_t)newlen, rmw->arg);
            o->vlen = (uint32_t)newlen;
            srv_db_touch(o);
            srv_db_unlock(&r);
            return newlen;
        }
        if (o)
            srv_obj_ref(o);
        srv_db_unlock(&r);
        struct srv_obj *n;
        size_t extra = rmw->slack;
        if (rmw->greedy && (size_t)newlen > oldlen) /* like sds: double, at most +1 MB */
            extra = (size_t)newlen < SRV_RMW_GREEDY_MAX ? (size_t)newlen : SRV_RMW_GREEDY_MAX;
        size_t cap = (size_t)newlen + (attempt == 0 ? extra : 0);
        int rc = srv_obj_create(key->p, key->len, (size_t)newlen, cap, &n);
        if (rc == -CM_EOOM && cap > (size_t)newlen) /* the room to grow does not fit: no room */
            rc = srv_obj_create(key->p, key->len, (size_t)newlen, (size_t)newlen, &n);
        if (rc < 0) {
            if (o)
                srv_obj_unref(o);
            srv_reply_alloc_error(c, rc);
            return -1;
        }
        rmw->build(srv_obj_val(n), oval, oldlen, (size_t)newlen, rmw->arg);
        srv_db_lock(&r, key->p, key->len);
        struct srv_obj *cur = srv_db_find(&r, srv_now_ms());
        /* o was pinned, so it was neither freed nor modified in place meanwhile. */
        int same = cur == o;
        if (same) {
            if (cur) {
                cm_atomic_store_relaxed(&n->expire_ms, cm_atomic_load_relaxed(&cur->expire_ms));
                srv_db_replace(&r, cur, n);
            } else {
                srv_db_insert(&r, n);
            }
        }
        srv_db_unlock(&r);
        if (o)
            srv_obj_unref(o);
        if (same)
            return newlen;
        srv_obj_unref(n); /* the key changed meanwhile: start over */
    }
}

struct srv_append_arg {
    const char *p;
    size_t len;
};

static long long srv_append_plan(struct srv_client *c, const char *old, size_t oldlen, int exists,
                                 void *arg) {
    struct srv_append_arg *a = arg;
    (void)old;
    (void)exists;
    if (oldlen + a->len > (size_t)srv_cfg.proto_max_bulk_len) {
        srv_reply_error(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return -1;
    }
    return (long long)(oldlen + a->len);
}

static void srv_append_build(char *dst, const char *old, size_t oldlen, size_t newlen, void *arg) {
    struct srv_append_arg *a = arg;
    (void)newlen;
    if (old && dst != old)
        memcpy(dst, old, oldlen);
    memcpy(dst + oldlen, a->p, a->len);
}

void srv_append_command(struct srv_client *c) {
    struct srv_append_arg a = {c->argv[2].p, c->argv[2].len};
    struct srv_rmw rmw = {srv_append_plan, srv_append_build, &a, 0, 0};
    size_t oldlen;
    /* Values that get appended to usually grow again: leave room (like sds greedy growth). */
    rmw.slack = a.len < (1u << 20) ? a.len + 64 : (1u << 20);
    long long n = srv__rmw_run(c, &rmw, &oldlen);
    if (n >= 0)
        resp_add_int(&c->out, n);
    if (n >= 0)
        srv_notify(SRV_NOTIFY_STRING, "append", c->argv[1].p, c->argv[1].len);
}

struct srv_setrange_arg {
    long long offset;
    const char *p;
    size_t len;
};

static long long srv_setrange_plan(struct srv_client *c, const char *old, size_t oldlen, int exists,
                                   void *arg) {
    struct srv_setrange_arg *a = arg;
    (void)old;
    (void)exists;
    if ((unsigned long long)a->offset + a->len > (unsigned long long)srv_cfg.proto_max_bulk_len) {
        srv_reply_error(c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return -1;
    }
    size_t end = (size_t)a->offset + a->len;
    return (long long)(end > oldlen ? end : oldlen);
}

static void srv_setrange_build(char *dst, const char *old, size_t oldlen, size_t newlen,
                               void *arg) {
    struct srv_setrange_arg *a = arg;
    if (old && dst != old)
        memcpy(dst, old, oldlen);
    if ((size_t)a->offset > oldlen)
        memset(dst + oldlen, 0, (size_t)a->offset - oldlen);
    (void)newlen;
    memcpy(dst + a->offset, a->p, a->len);
}

void srv_setrange_command(struct srv_client *c) {
    struct srv_setrange_arg a = {0, c->argv[3].p, c->argv[3].len};
    if (srv_arg_ll(c, 2, &a.offset, NULL) < 0)
        return;
    if (a.offset < 0) {
        srv_reply_error(c, "ERR offset is out of range");
        return;
    }
    if (a.len == 0) { /* no change: reply the current length (0 when absent) */
        struct srv_db_ref r;
        srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
        struct srv_obj *o = srv_db_find(&r, srv_now_ms());
        if (o && o->type != SRV_TYPE_STRING)
            srv_reply_error(c, SRV_ERR_WRONGTYPE);
        else
            resp_add_int(&c->out, o ? (long long)o->vlen : 0);
        srv_db_unlock(&r);
        return;
    }
    struct srv_rmw rmw = {srv_setrange_plan, srv_setrange_build, &a, 0, 0};
    size_t oldlen;
    long long n = srv__rmw_run(c, &rmw, &oldlen);
    if (n >= 0)
        resp_add_int(&c->out, n);
    if (n >= 0)
        srv_notify(SRV_NOTIFY_STRING, "setrange", c->argv[1].p, c->argv[1].len);
}

/* ---------------------------------------------------------------- INCR family */

struct srv_incr_arg {
    long long incr;
    long long result;
    char buf[32];
    size_t len;
};

static long long srv_incr_plan(struct srv_client *c, const char *old, size_t oldlen, int exists,
                               void *arg) {
    struct srv_incr_arg *a = arg;
    long long v = 0;
    if (exists && (oldlen > 20 || cm_str2ll(old, oldlen, &v) != 0)) {
        srv_reply_error(c, SRV_ERR_NOT_INT);
        return -1;
    }
    if ((a->incr < 0 && v < 0 && a->incr < (LLONG_MIN - v)) ||
        (a->incr > 0 && v > 0 && a->incr > (LLONG_MAX - v))) {
        srv_reply_error(c, "ERR increment or decrement would overflow");
        return -1;
    }
    a->result = v + a->incr;
    a->len = (size_t)cm_ll2str(a->buf, sizeof(a->buf), a->result);
    return (long long)a->len;
}

static void srv_incr_build(char *dst, const char *old, size_t oldlen, size_t newlen, void *arg) {
    struct srv_incr_arg *a = arg;
    (void)old;
    (void)oldlen;
    memcpy(dst, a->buf, newlen);
}

static void srv_incr_generic(struct srv_client *c, long long incr) {
    struct srv_incr_arg a = {.incr = incr};
    struct srv_rmw rmw = {srv_incr_plan, srv_incr_build, &a, 24, 0};
    size_t oldlen;
    if (srv__rmw_run(c, &rmw, &oldlen) < 0)
        return;
    resp_add_int(&c->out, a.result);
    srv_notify(SRV_NOTIFY_STRING, "incrby", c->argv[1].p, c->argv[1].len);
}

void srv_incr_command(struct srv_client *c) {
    srv_incr_generic(c, 1);
}

void srv_decr_command(struct srv_client *c) {
    srv_incr_generic(c, -1);
}

void srv_incrby_command(struct srv_client *c) {
    long long v;
    if (srv_arg_ll(c, 2, &v, NULL) == 0)
        srv_incr_generic(c, v);
}

void srv_decrby_command(struct srv_client *c) {
    long long v;
    if (srv_arg_ll(c, 2, &v, NULL) < 0)
        return;
    if (v == LLONG_MIN) {
        srv_reply_error(c, "ERR decrement would overflow");
        return;
    }
    srv_incr_generic(c, -v);
}

struct srv_incrf_arg {
    const struct srv_arg *incr_arg;
    long double incr;
    char buf[CM_LD_STR_SIZE];
    size_t len;
};

static long long srv_incrf_plan(struct srv_client *c, const char *old, size_t oldlen, int exists,
                                void *arg) {
    struct srv_incrf_arg *a = arg;
    long double v = 0;
    /* Redis's order: the type (checked by the caller), the stored value, the increment. */
    if ((exists && cm_str2ld(old, oldlen, &v) != 0) ||
        cm_str2ld(a->incr_arg->p, a->incr_arg->len, &a->incr) != 0) {
        srv_reply_error(c, "ERR value is not a valid float");
        return -1;
    }
    v += a->incr;
    if (isnan(v) || isinf(v)) {
        srv_reply_error(c, "ERR increment would produce NaN or Infinity");
        return -1;
    }
    a->len = (size_t)cm_ld2str(a->buf, sizeof(a->buf), v);
    return (long long)a->len;
}

static void srv_incrf_build(char *dst, const char *old, size_t oldlen, size_t newlen, void *arg) {
    struct srv_incrf_arg *a = arg;
    (void)old;
    (void)oldlen;
    memcpy(dst, a->buf, newlen);
}

void srv_incrbyfloat_command(struct srv_client *c) {
    static __thread struct srv_incrf_arg a;
    a.incr_arg = &c->argv[2];
    struct srv_rmw rmw = {srv_incrf_plan, srv_incrf_build, &a, 0, 0};
    size_t oldlen;
    if (srv__rmw_run(c, &rmw, &oldlen) < 0)
        return;
    resp_add_bulk(&c->out, a.buf, a.len);
    srv_notify(SRV_NOTIFY_STRING, "incrbyfloat", c->argv[1].p, c->argv[1].len);
}

void srv_substr_command(struct srv_client *c) {
    srv_getrange_command(c); /* SUBSTR is GETRANGE's old name */
}
