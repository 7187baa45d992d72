/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keyspace commands: DEL/UNLINK/REMOVE, EXISTS, TYPE, TOUCH, the EXPIRE and TTL families,
 * PERSIST, KEYS, SCAN, RANDOMKEY, RENAME/RENAMENX, COPY, DBSIZE, FLUSHALL/FLUSHDB,
 * MEMORY USAGE and OBJECT.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_pool_kv.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"

#include "common/cm_atomic.h"
#include "common/cm_glob.h"
#include "common/cm_mem.h"
#include "common/cm_util.h"
#include "redis-compat/resp_write.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- DEL, EXISTS, TYPE, TOUCH */

/* Deletes key; returns 1 if it existed. */
static int srv_delete_key(const struct srv_arg *k, int64_t now) {
    struct srv_db_ref r;
    srv_db_lock(&r, k->p, k->len);
    struct srv_obj *o = srv_db_peek(&r, now);
    if (o)
        srv_db_unlink(&r, o);
    srv_db_unlock(&r);
    int pooled = srv_pkv_del(k->p, k->len); /* the pool's object goes too */
    if (o || pooled)
        srv_notify(SRV_NOTIFY_GENERIC, "del", k->p, k->len);
    return o != NULL || pooled;
}

void srv_del_command(struct srv_client *c) {
    int64_t now = srv_now_ms();
    long long n = 0;
    for (int i = 1; i < c->argc; i++)
        n += srv_delete_key(&c->argv[i], now);
    resp_add_int(&c->out, n);
}

void srv_unlink_command(struct srv_client *c) {
    srv_del_command(c);
}

void srv_remove_command(struct srv_client *c) {
    srv_del_command(c);
}

/* Counts keys among argv[1..] that exist; touch = 1 also refreshes their LRU clock. */
static long long srv_count_existing(struct srv_client *c, int touch) {
    int64_t now = srv_now_ms();
    long long n = 0;
    for (int i = 1; i < c->argc; i++) {
        struct srv_db_ref r;
        srv_db_lock(&r, c->argv[i].p, c->argv[i].len);
        int found = (touch ? srv_db_find(&r, now) : srv_db_peek(&r, now)) != NULL;
        srv_db_unlock(&r);
        int hit = found || srv_pkv_exists(c->argv[i].p, c->argv[i].len);
        if (!hit) /* Redis reads them with lookupKeyRead */
            srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[i].p, c->argv[i].len);
        n += hit;
    }
    return n;
}

void srv_exists_command(struct srv_client *c) {
    resp_add_int(&c->out, srv_count_existing(c, 0));
}

void srv_touch_command(struct srv_client *c) {
    resp_add_int(&c->out, srv_count_existing(c, 1));
}

void srv_type_command(struct srv_client *c) {
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_peek(&r, srv_now_ms());
    int type = o ? o->type : -1;
    srv_db_unlock(&r);
    if (type < 0 && srv_pkv_exists(c->argv[1].p, c->argv[1].len))
        type = SRV_TYPE_STRING; /* a pool object */
    if (type < 0)
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
    resp_add_simple(&c->out, type >= 0 ? srv_type_name((enum srv_type)type) : "none");
}

/* ---------------------------------------------------------------- EXPIRE family */

#define SRV_ERR_POOL_TTL                                                                       \
    "ERR this key lives in the distributed store's pool, whose objects have no TTL (use DEL, " \
    "or let the pool evict it)"

#define SRV_EXP_NX 1
#define SRV_EXP_XX 2
#define SRV_EXP_GT 4
#define SRV_EXP_LT 8

static int srv_parse_expire_flags(struct srv_client *c, int *flags) {
    *flags = 0;
    for (int j = 3; j < c->argc; j++) {
        if (srv_arg_is(c, j, "nx"))
            *flags |= SRV_EXP_NX;
        else if (srv_arg_is(c, j, "xx"))
            *flags |= SRV_EXP_XX;
        else if (srv_arg_is(c, j, "gt"))
            *flags |= SRV_EXP_GT;
        else if (srv_arg_is(c, j, "lt"))
            *flags |= SRV_EXP_LT;
        else {
            srv_reply_errorf(c, "ERR Unsupported option %.*s", (int)c->argv[j].len, c->argv[j].p);
            return -1;
        }
    }
    if ((*flags & SRV_EXP_NX) && (*flags & (SRV_EXP_XX | SRV_EXP_GT | SRV_EXP_LT))) {
        srv_reply_error(c, "ERR NX and XX, GT or LT options at the same time are not compatible");
        return -1;
    }
    if ((*flags & SRV_EXP_GT) && (*flags & SRV_EXP_LT)) {
        srv_reply_error(c, "ERR GT and LT options at the same time are not compatible");
        return -1;
    }
    return 0;
}

/* EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT: base is now (relative) or 0 (absolute). */
static void srv_expire_generic(struct srv_client *c, int64_t base, int seconds, const char *name) {
    long long when;
    int flags;
    if (srv_parse_expire_flags(c, &flags) < 0 || srv_arg_ll(c, 2, &when, NULL) < 0)
        return; /* options first, then the number: Redis's order */
    if (seconds) {
        if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000) {
            srv_reply_errorf(c, "ERR invalid expire time in '%s' command", name);
            return;
        }
        when *= 1000;
    }
    if (when > LLONG_MAX - base) {
        srv_reply_errorf(c, "ERR invalid expire time in '%s' command", name);
        return;
    }
    when += base;
    struct srv_db_ref r;
    int64_t now = srv_now_ms();
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, now);
    if (!o && srv_pkv_exists(c->argv[1].p, c->argv[1].len)) {
        srv_db_unlock(&r);
        srv_reply_error(c, SRV_ERR_POOL_TTL);
        return;
    }
    int ok = o != NULL;
    if (o && flags) {
        int64_t cur = cm_atomic_load_relaxed(&o->expire_ms);
        if ((flags & SRV_EXP_NX) && cur)
            ok = 0;
        if ((flags & SRV_EXP_XX) && !cur)
            ok = 0;
        if ((flags & SRV_EXP_GT) && (!cur || when <= cur))
            ok = 0;
        if ((flags & SRV_EXP_LT) && cur && when >= cur)
            ok = 0;
    }
    if (ok) {
        if (when <= now)
            srv_db_unlink(&r, o);
        else
            srv_db_set_expire(&r, o, when);
    }
    srv_db_unlock(&r);
    if (ok)
        srv_notify(SRV_NOTIFY_GENERIC, when <= now ? "del" : "expire", c->argv[1].p,
                   c->argv[1].len);
    resp_add_int(&c->out, ok);
}

void srv_expire_command(struct srv_client *c) {
    srv_expire_generic(c, srv_now_ms(), 1, "expire");
}

void srv_pexpire_command(struct srv_client *c) {
    srv_expire_generic(c, srv_now_ms(), 0, "pexpire");
}

void srv_expireat_command(struct srv_client *c) {
    srv_expire_generic(c, 0, 1, "expireat");
}

void srv_pexpireat_command(struct srv_client *c) {
    srv_expire_generic(c, 0, 0, "pexpireat");
}

/* TTL (ms = 0, rel = 1), PTTL (1, 1), EXPIRETIME (0, 0), PEXPIRETIME (1, 0). */
static void srv_ttl_generic(struct srv_client *c, int ms, int rel) {
    struct srv_db_ref r;
    int64_t now = srv_now_ms();
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_peek(&r, now);
    int64_t e = o ? cm_atomic_load_relaxed(&o->expire_ms) : 0;
    srv_db_unlock(&r);
    if (!o && srv_pkv_exists(c->argv[1].p, c->argv[1].len)) {
        resp_add_int(&c->out, -1); /* pool objects have no TTL */
    } else if (!o) {
        resp_add_int(&c->out, -2);
        srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[1].p, c->argv[1].len);
    } else if (!e) {
        resp_add_int(&c->out, -1);
    } else {
        int64_t ttl = rel ? e - now : e;
        if (ttl < 0)
            ttl = 0;
        resp_add_int(&c->out, ms ? ttl : (ttl + 500) / 1000); /* Redis rounds both forms */
    }
}

void srv_ttl_command(struct srv_client *c) {
    srv_ttl_generic(c, 0, 1);
}

void srv_pttl_command(struct srv_client *c) {
    srv_ttl_generic(c, 1, 1);
}

void srv_expiretime_command(struct srv_client *c) {
    srv_ttl_generic(c, 0, 0);
}

void srv_pexpiretime_command(struct srv_client *c) {
    srv_ttl_generic(c, 1, 0);
}

void srv_persist_command(struct srv_client *c) {
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[1].p, c->argv[1].len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    int done = o && cm_atomic_load_relaxed(&o->expire_ms) != 0;
    if (done)
        srv_db_set_expire(&r, o, 0);
    srv_db_unlock(&r);
    if (done)
        srv_notify(SRV_NOTIFY_GENERIC, "persist", c->argv[1].p, c->argv[1].len);
    resp_add_int(&c->out, done);
}

/* ---------------------------------------------------------------- KEYS, SCAN, RANDOMKEY */

struct srv_keys_ctx {
    struct cm_buf *keys; /* RESP bulk strings appended here */
    long count;
    const char *pat;
    size_t plen;
    int all;
    int type; /* -1 = any, else enum srv_type */
};

/* Offers one key of type type to the KEYS/SCAN reply. */
static void srv_keys_offer(struct srv_keys_ctx *k, const char *key, size_t klen, int type) {
    if (k->type >= 0 && type != k->type)
        return;
    if (!k->all && !cm_glob_match(k->pat, k->plen, key, klen, 0))
        return;
    resp_add_bulk(k->keys, key, klen);
    k->count++;
}

static void srv_keys_visit(struct srv_obj *o, void *arg) {
    srv_keys_offer(arg, o->key, o->klen, o->type);
}

static void srv_keys_visit_pool(void *arg, const char *key, size_t klen) {
    srv_keys_offer(arg, key, klen, SRV_TYPE_STRING);
}

/*
 * One SCAN step over the keyspace, then (cursors with SRV_PKV_SCAN_FLAG) over the pool's
 * objects, so every key present for the whole scan is returned at least once.
 */
static uint64_t srv_scan_step(uint64_t cursor, size_t count, int64_t now, struct srv_keys_ctx *k) {
    if (!(cursor & SRV_PKV_SCAN_FLAG)) {
        cursor = srv_db_scan(cursor, count, now, srv_keys_visit, k);
        if (cursor != 0 || (k->type >= 0 && k->type != SRV_TYPE_STRING))
            return cursor;
        cursor = SRV_PKV_SCAN_FLAG;
    }
    return srv_pkv_scan(cursor, count, srv_keys_visit_pool, k);
}

void srv_keys_command(struct srv_client *c) {
    struct cm_buf keys;
    cm_buf_init(&keys);
    struct srv_keys_ctx k = {&keys, 0, c->argv[1].p, c->argv[1].len, 0, -1};
    k.all = c->argv[1].len == 1 && c->argv[1].p[0] == '*';
    uint64_t cursor = 0;
    int64_t now = srv_now_ms();
    do {
        cursor = srv_scan_step(cursor, 4096, now, &k);
    } while (cursor != 0);
    resp_add_array_hdr(&c->out, k.count);
    cm_buf_append(&c->out, keys.data, keys.len);
    cm_buf_fini(&keys);
}

void srv_scan_command(struct srv_client *c) {
    unsigned long long cursor;
    char *end;
    char tmp[32];
    if (c->argv[1].len == 0 || c->argv[1].len >= sizeof(tmp)) {
        srv_reply_error(c, "ERR invalid cursor");
        return;
    }
    memcpy(tmp, c->argv[1].p, c->argv[1].len);
    tmp[c->argv[1].len] = '\0';
    errno = 0;
    cursor = strtoull(tmp, &end, 10);
    if (*end != '\0' || errno == ERANGE || tmp[0] == '-' || tmp[0] == ' ') {
        srv_reply_error(c, "ERR invalid cursor");
        return;
    }
    long long count = 10;
    struct srv_keys_ctx k = {NULL, 0, NULL, 0, 1, -1};
    for (int j = 2; j < c->argc; j += 2) {
        if (j + 1 >= c->argc) {
            srv_reply_syntax_error(c);
            return;
        }
        if (srv_arg_is(c, j, "count")) {
            if (srv_arg_ll(c, j + 1, &count, NULL) < 0)
                return;
            if (count < 1) {
                srv_reply_syntax_error(c);
                return;
            }
        } else if (srv_arg_is(c, j, "match")) {
            k.pat = c->argv[j + 1].p;
            k.plen = c->argv[j + 1].len;
            k.all = k.plen == 1 && k.pat[0] == '*';
        } else if (srv_arg_is(c, j, "type")) {
            k.type = 99; /* unknown types match nothing, like Redis */
            for (int t = SRV_TYPE_STRING; t <= SRV_TYPE_ZSET; t++)
                if (srv_arg_is(c, j + 1, srv_type_name((enum srv_type)t)))
                    k.type = t;
        } else {
            srv_reply_syntax_error(c);
            return;
        }
    }
    struct cm_buf keys;
    cm_buf_init(&keys);
    k.keys = &keys;
    uint64_t next = srv_scan_step(cursor, (size_t)count, srv_now_ms(), &k);
    resp_add_array_hdr(&c->out, 2);
    char num[24];
    int n = cm_ll2str(num, sizeof(num), (long long)next);
    if (next > LLONG_MAX)
        n = snprintf(num, sizeof(num), "%llu", (unsigned long long)next);
    resp_add_bulk(&c->out, num, (size_t)n);
    resp_add_array_hdr(&c->out, k.count);
    cm_buf_append(&c->out, keys.data, keys.len);
    cm_buf_fini(&keys);
}

void srv_randomkey_command(struct srv_client *c) {
    size_t klen;
    char *k = srv_db_random_key(srv_now_ms(), &klen);
    if (!k) {
        resp_add_null(&c->out, c->proto);
        return;
    }
    resp_add_bulk(&c->out, k, klen);
    cm_free(k);
}

/* ---------------------------------------------------------------- RENAME, COPY */

/* Unlinks key and returns its object with one reference owned by the caller, or NULL. */
static struct srv_obj *srv_take_key(const struct srv_arg *k, int64_t now) {
    struct srv_db_ref r;
    srv_db_lock(&r, k->p, k->len);
    struct srv_obj *o = srv_db_peek(&r, now);
    if (o) {
        srv_obj_ref(o);
        srv_db_unlink(&r, o);
    }
    srv_db_unlock(&r);
    return o;
}

/* Stores a copy of src's value under dst (replace = 1 overwrites). Returns 1, 0, or -1. */
static int srv_store_copy(struct srv_client *c, const struct srv_arg *dst, struct srv_obj *src,
                          int replace) {
    struct srv_obj *n;
    if (src->type != SRV_TYPE_STRING) {
        n = srv_obj_create_agg(dst->p, dst->len, (enum srv_type)src->type,
                               srv_type_dup((enum srv_type)src->type, src->payload));
    } else {
        int rc = srv_obj_create(dst->p, dst->len, src->vlen, src->vlen, &n);
        if (rc < 0) {
            srv_reply_alloc_error(c, rc);
            return -1;
        }
        memcpy(srv_obj_val(n), srv_obj_val(src), src->vlen);
    }
    cm_atomic_store_relaxed(&n->expire_ms, cm_atomic_load_relaxed(&src->expire_ms));
    struct srv_db_ref r;
    srv_db_lock(&r, dst->p, dst->len);
    struct srv_obj *old = srv_db_peek(&r, srv_now_ms());
    int done = 1;
    if (old && !replace)
        done = 0;
    else if (old)
        srv_db_replace(&r, old, n);
    else
        srv_db_insert(&r, n);
    srv_db_unlock(&r);
    if (done && old) /* Redis deletes then adds the destination: "new" either way */
        srv_notify(SRV_NOTIFY_NEW, "new", dst->p, dst->len);
    if (!done)
        srv_obj_unref(n);
    return done;
}

static void srv_rename_generic(struct srv_client *c, int nx) {
    const struct srv_arg *src = &c->argv[1], *dst = &c->argv[2];
    int64_t now = srv_now_ms();
    if (!srv_db_exists(src->p, src->len, now)) {
        srv_reply_error(c, "ERR no such key");
        return;
    }
    int same = src->len == dst->len && memcmp(src->p, dst->p, src->len) == 0;
    if (same) {
        if (nx)
            resp_add_int(&c->out, 0);
        else
            srv_reply_ok(c);
        return;
    }
    if (nx && srv_db_exists(dst->p, dst->len, now)) {
        resp_add_int(&c->out, 0);
        return;
    }
    /* Exclusive lock held: nothing else runs, so take-then-store is atomic. The value moves
     * to the new key without a copy unless a reply still reads it (then it is copied). */
    struct srv_obj *o = srv_take_key(src, now);
    if (cm_atomic_load_relaxed(&o->refs) == 1) {
        struct srv_obj *n = srv_obj_rekey(o, dst->p, dst->len);
        struct srv_db_ref r;
        srv_db_lock(&r, dst->p, dst->len);
        struct srv_obj *old = srv_db_peek(&r, now);
        if (old)
            srv_db_replace(&r, old, n);
        else
            srv_db_insert(&r, n);
        srv_db_unlock(&r);
        if (old) /* Redis deletes then adds the destination: "new" either way */
            srv_notify(SRV_NOTIFY_NEW, "new", dst->p, dst->len);
    } else {
        int rc = srv_store_copy(c, dst, o, 1);
        if (rc < 0) { /* put the source back: RENAME failed as a whole */
            struct srv_db_ref r;
            srv_db_lock(&r, src->p, src->len);
            srv_db_insert(&r, o);
            srv_db_unlock(&r);
            return;
        }
        srv_obj_unref(o);
    }
    srv_notify(SRV_NOTIFY_GENERIC, "rename_from", src->p, src->len);
    srv_notify(SRV_NOTIFY_GENERIC, "rename_to", dst->p, dst->len);
    if (nx)
        resp_add_int(&c->out, 1);
    else
        srv_reply_ok(c);
}

void srv_rename_command(struct srv_client *c) {
    srv_rename_generic(c, 0);
}

void srv_renamenx_command(struct srv_client *c) {
    srv_rename_generic(c, 1);
}

void srv_copy_command(struct srv_client *c) {
    int replace = 0;
    for (int j = 3; j < c->argc; j++) {
        if (srv_arg_is(c, j, "replace")) {
            replace = 1;
        } else if (srv_arg_is(c, j, "db") && j + 1 < c->argc) {
            long long db;
            if (srv_arg_ll(c, ++j, &db, NULL) < 0)
                return;
            if (db != 0) {
                srv_reply_error(c, "ERR DB index is out of range");
                return;
            }
        } else {
            srv_reply_syntax_error(c);
            return;
        }
    }
    const struct srv_arg *src = &c->argv[1], *dst = &c->argv[2];
    if (src->len == dst->len && memcmp(src->p, dst->p, src->len) == 0) {
        srv_reply_error(c, "ERR source and destination objects are the same");
        return;
    }
    struct srv_db_ref r;
    srv_db_lock(&r, src->p, src->len);
    struct srv_obj *o = srv_db_peek(&r, srv_now_ms());
    if (o)
        srv_obj_ref(o);
    srv_db_unlock(&r);
    if (!o) {
        resp_add_int(&c->out, 0);
        return;
    }
    int rc = srv_store_copy(c, dst, o, replace);
    srv_obj_unref(o);
    if (rc > 0)
        srv_notify(SRV_NOTIFY_GENERIC, "copy_to", dst->p, dst->len);
    if (rc >= 0)
        resp_add_int(&c->out, rc);
}

/* ---------------------------------------------------------------- DBSIZE, FLUSH* */

void srv_dbsize_command(struct srv_client *c) {
    resp_add_int(&c->out, (long long)(srv_db_size() + srv_pkv_count()));
}

static void srv_flush_generic(struct srv_client *c) {
    if (c->argc > 2 || (c->argc == 2 && !srv_arg_is(c, 1, "async") && !srv_arg_is(c, 1, "sync"))) {
        srv_reply_syntax_error(c);
        return;
    }
    srv_db_flush();
    srv_pkv_flush(); /* and every pool object it may take (docs/commands.md) */
    srv_reply_ok(c);
}

void srv_flushall_command(struct srv_client *c) {
    srv_flush_generic(c);
}

void srv_flushdb_command(struct srv_client *c) {
    srv_flush_generic(c);
}

/* ---------------------------------------------------------------- MEMORY, OBJECT */

void srv_memory_command(struct srv_client *c) {
    if (srv_arg_is(c, 1, "usage")) {
        if (c->argc != 3 && !(c->argc == 5 && srv_arg_is(c, 3, "samples"))) {
            if (c->argc < 3)
                srv_reply_wrong_arity(c, "memory|usage");
            else
                srv_reply_syntax_error(c);
            return;
        }
        long long samples;
        if (c->argc == 5 && srv_arg_ll(c, 4, &samples, NULL) < 0)
            return;
        struct srv_db_ref r;
        srv_db_lock(&r, c->argv[2].p, c->argv[2].len);
        struct srv_obj *o = srv_db_peek(&r, srv_now_ms());
        long long bytes = o ? (long long)(sizeof(*o) + o->klen + srv_obj_capacity(o) + 8) : 0;
        srv_db_unlock(&r);
        if (o)
            resp_add_int(&c->out, bytes);
        else
            resp_add_null(&c->out, c->proto);
    } else if (srv_arg_is(c, 1, "help")) {
        resp_add_array_hdr(&c->out, 2);
        resp_add_simple(&c->out, "MEMORY USAGE <key> [SAMPLES <count>]");
        resp_add_simple(&c->out, "    Return memory in bytes used by <key> and its value.");
    } else {
        srv_reply_errorf(c, "ERR unknown subcommand '%.128s'. Try MEMORY HELP.", c->argv[1].p);
    }
}

static const char *srv_encoding_of(const struct srv_obj *o) {
    static const char *const agg[] = {"", "quicklist", "hashtable", "hashtable", "skiplist"};
    if (o->type != SRV_TYPE_STRING)
        return agg[o->type];
    long long v;
    if (o->vlen <= 20 && cm_str2ll(srv_obj_val(o), o->vlen, &v) == 0)
        return "int";
    return o->vlen <= 44 ? "embstr" : "raw";
}

void srv_object_command(struct srv_client *c) {
    if (srv_arg_is(c, 1, "help")) {
        resp_add_array_hdr(&c->out, 3);
        resp_add_simple(&c->out, "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
        resp_add_simple(&c->out, "ENCODING <key>");
        resp_add_simple(&c->out, "REFCOUNT <key>");
        return;
    }
    int known = srv_arg_is(c, 1, "encoding") || srv_arg_is(c, 1, "refcount") ||
                srv_arg_is(c, 1, "idletime") || srv_arg_is(c, 1, "freq");
    if (!known) {
        srv_reply_errorf(c, "ERR unknown subcommand '%.128s'. Try OBJECT HELP.", c->argv[1].p);
        return;
    }
    if (c->argc != 3) {
        srv_reply_errorf(c, "ERR wrong number of arguments for 'object|%.*s' command",
                         (int)c->argv[1].len, c->argv[1].p);
        return;
    }
    struct srv_db_ref r;
    srv_db_lock(&r, c->argv[2].p, c->argv[2].len);
    struct srv_obj *o = srv_db_peek(&r, srv_now_ms());
    if (!o) {
        resp_add_null(&c->out, c->proto);
    } else if (srv_arg_is(c, 1, "encoding")) {
        resp_add_bulk_cstr(&c->out, srv_encoding_of(o));
    } else if (srv_arg_is(c, 1, "refcount")) {
        resp_add_int(&c->out, 1);
    } else if (srv_arg_is(c, 1, "idletime")) {
        uint32_t age = srv_lru_clock() - cm_atomic_load_relaxed(&o->lru);
        resp_add_int(&c->out, (long long)age * 16 / 1000);
    } else {
        srv_reply_error(c, "ERR An LFU maxmemory policy is not selected, access frequency not "
                           "tracked. Please note that when switching between policies at "
                           "runtime LRU and LFU data will take some time to adjust.");
    }
    srv_db_unlock(&r);
}
