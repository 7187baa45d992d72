/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The set type and its commands: SADD SREM SCARD SISMEMBER SMISMEMBER SMEMBERS SPOP
 * SRANDMEMBER SSCAN SUNION SINTER SDIFF (and their STORE forms) SINTERCARD SMOVE, plus the
 * helpers shared with HSCAN/ZSCAN and HRANDFIELD/ZRANDMEMBER. A set is a cm_ht of members (one
 * heap node per member, bytes inline), so membership, add and remove are O(1) expected and
 * random picks use cm_ht_random.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"
#include "server/srv_t.h"

#include "common/cm_glob.h"
#include "common/cm_hash.h"
#include "common/cm_ht.h"
#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct srv_set {
    struct cm_ht ht;
};

struct srv_smember {
    struct cm_ht_node node; /* first: the node pointer is the member pointer */
    size_t len;
    char p[];
};

static int srv_smember_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct srv_smember *m = (const struct srv_smember *)n;
    return m->len == klen && memcmp(m->p, key, klen) == 0;
}

static struct srv_set *srv_set_new(void) {
    struct srv_set *s = srv_t_alloc(sizeof(*s));
    cm_ht_init(&s->ht, 4);
    return s;
}

static struct srv_smember *srv_set_find(const struct srv_set *s, const char *p, size_t n) {
    return (struct srv_smember *)cm_ht_find(&s->ht, srv_t_hash(p, n), p, n, srv_smember_eq);
}

/* Adds member (p, n); returns 1 when it was new. */
static int srv_set_add(struct srv_set *s, const char *p, size_t n) {
    uint64_t h = srv_t_hash(p, n);
    if (cm_ht_find(&s->ht, h, p, n, srv_smember_eq))
        return 0;
    struct srv_smember *m = srv_t_alloc(sizeof(*m) + n);
    m->node.hash = h;
    m->len = n;
    if (n)
        memcpy(m->p, p, n);
    cm_ht_insert(&s->ht, &m->node);
    return 1;
}

static void srv_smember_destroy(struct cm_ht_node *n, void *arg) {
    (void)arg;
    srv_t_free(n);
}

/* Frees set payload p and its members (last owner, any thread). */
void srv_set_free(void *p) {
    struct srv_set *s = p;
    cm_ht_clear(&s->ht, srv_smember_destroy, NULL);
    cm_ht_fini(&s->ht);
    srv_t_free(s);
}

/* Deep copy of set payload p (caller holds its shard lock or the exclusive lock). */
void *srv_set_dup(const void *p) {
    const struct srv_set *s = p;
    struct srv_set *n = srv_set_new();
    size_t i;
    struct cm_ht_node *node, *tmp;
    cm_ht_foreach_node(&s->ht, i, node, tmp) {
        const struct srv_smember *m = (const struct srv_smember *)node;
        srv_set_add(n, m->p, m->len);
    }
    return n;
}

/* Deletes the key of o when its set became empty, else marks it modified. */
static void srv_set_done(struct srv_db_ref *r, struct srv_obj *o) {
    struct srv_set *s = o->payload;
    if (cm_ht_count(&s->ht) == 0) {
        srv_notify(SRV_NOTIFY_GENERIC, "del", o->key, o->klen);
        srv_db_unlink(r, o);
    } else {
        srv_db_touch(o);
    }
}

/* ---------------------------------------------------------------- SADD, SREM */

void srv_sadd_command(struct srv_client *c) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 0, &bad);
    if (bad)
        return;
    int fresh = o == NULL;
    if (fresh)
        o = srv_obj_create_agg(c->argv[1].p, c->argv[1].len, SRV_TYPE_SET, srv_set_new());
    long long added = 0;
    for (int i = 2; i < c->argc; i++)
        added += srv_set_add(o->payload, c->argv[i].p, c->argv[i].len);
    if (fresh)
        srv_db_insert(&r, o);
    else if (added)
        srv_db_touch(o);
    srv_db_unlock(&r);
    resp_add_int(&c->out, added);
    if (added)
        srv_notify(SRV_NOTIFY_SET, "sadd", c->argv[1].p, c->argv[1].len);
}

void srv_srem_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 0, &bad);
    if (bad)
        return;
    long long removed = 0;
    if (o) {
        struct srv_set *s = o->payload;
        for (int i = 2; i < c->argc && cm_ht_count(&s->ht); i++) {
            struct srv_smember *m = srv_set_find(s, c->argv[i].p, c->argv[i].len);
            if (m) {
                cm_ht_remove(&s->ht, &m->node);
                srv_t_free(m);
                removed++;
            }
        }
        if (removed) {
            srv_notify(SRV_NOTIFY_SET, "srem", c->argv[1].p, c->argv[1].len);
            srv_set_done(&r, o);
        }
    }
    srv_db_unlock(&r);
    resp_add_int(&c->out, removed);
}

/* ---------------------------------------------------------------- reads */

void srv_scard_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 1, &bad);
    if (bad)
        return;
    long long n = o ? (long long)cm_ht_count(&((struct srv_set *)o->payload)->ht) : 0;
    srv_db_unlock(&r);
    resp_add_int(&c->out, n);
}

void srv_sismember_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 1, &bad);
    if (bad)
        return;
    int in = o && srv_set_find(o->payload, c->argv[2].p, c->argv[2].len) != NULL;
    srv_db_unlock(&r);
    resp_add_int(&c->out, in);
}

void srv_smismember_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 1, &bad);
    if (bad)
        return;
    resp_add_array_hdr(&c->out, c->argc - 2);
    for (int i = 2; i < c->argc; i++)
        resp_add_int(&c->out, o && srv_set_find(o->payload, c->argv[i].p, c->argv[i].len));
    srv_db_unlock(&r);
}

/* Replies every member of s, after a set header of n (RESP3 set) or array header. */
static void srv_set_reply_all(struct srv_client *c, const struct srv_set *s, int as_set) {
    long n = (long)cm_ht_count(&s->ht);
    if (as_set)
        resp_add_set_hdr(&c->out, c->proto, n);
    else
        resp_add_array_hdr(&c->out, n);
    size_t i;
    struct cm_ht_node *node, *tmp;
    cm_ht_foreach_node(&s->ht, i, node, tmp) {
        const struct srv_smember *m = (const struct srv_smember *)node;
        resp_add_bulk(&c->out, m->p, m->len);
    }
}

void srv_smembers_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 1, &bad);
    if (bad)
        return;
    if (o)
        srv_set_reply_all(c, o->payload, 1);
    else
        resp_add_set_hdr(&c->out, c->proto, 0);
    srv_db_unlock(&r);
}

/* ---------------------------------------------------------------- SPOP, SRANDMEMBER */

static void srv_spop_with_count(struct srv_client *c) {
    long long count;
    const char *range = "ERR value is out of range, must be positive";
    if (srv_arg_ll(c, 2, &count, range) < 0)
        return;
    if (count < 0) {
        srv_reply_error(c, range);
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 0, &bad);
    if (bad)
        return;
    if (!o || count == 0) {
        srv_db_unlock(&r);
        resp_add_set_hdr(&c->out, c->proto, 0);
        return;
    }
    struct srv_set *s = o->payload;
    srv_notify(SRV_NOTIFY_SET, "spop", c->argv[1].p, c->argv[1].len);
    if ((size_t)count >= cm_ht_count(&s->ht)) {
        srv_set_reply_all(c, s, 1);
        srv_notify(SRV_NOTIFY_GENERIC, "del", c->argv[1].p, c->argv[1].len);
        srv_db_unlink(&r, o);
        srv_db_unlock(&r);
        return;
    }
    resp_add_set_hdr(&c->out, c->proto, (long)count);
    for (long long k = 0; k < count; k++) {
        struct srv_smember *m = (struct srv_smember *)cm_ht_random(&s->ht);
        resp_add_bulk(&c->out, m->p, m->len);
        cm_ht_remove(&s->ht, &m->node);
        srv_t_free(m);
    }
    srv_set_done(&r, o);
    srv_db_unlock(&r);
}

void srv_spop_command(struct srv_client *c) {
    if (c->argc == 3) {
        srv_spop_with_count(c);
        return;
    }
    if (c->argc > 3) {
        srv_reply_syntax_error(c);
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 0, &bad);
    if (bad)
        return;
    if (!o) {
        srv_db_unlock(&r);
        resp_add_null(&c->out, c->proto);
        return;
    }
    struct srv_set *s = o->payload;
    struct srv_smember *m = (struct srv_smember *)cm_ht_random(&s->ht);
    resp_add_bulk(&c->out, m->p, m->len);
    cm_ht_remove(&s->ht, &m->node);
    srv_t_free(m);
    srv_notify(SRV_NOTIFY_SET, "spop", c->argv[1].p, c->argv[1].len);
    srv_set_done(&r, o);
    srv_db_unlock(&r);
}

/* A temporary set of node pointers, to pick distinct random nodes. */
struct srv_pick {
    struct cm_ht_node node;
    const struct cm_ht_node *n;
};

static int srv_pick_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    (void)klen;
    return ((const struct srv_pick *)n)->n == key;
}

/*
 * Distinct random nodes of ht into out; see srv_t.h. When count is more than a third of the
 * table, a partial Fisher-Yates shuffle of all nodes (O(size)); otherwise random picks with a
 * table of those already taken (O(count) expected).
 */
void srv__pick_distinct(const struct cm_ht *ht, size_t count, const struct cm_ht_node **out) {
    size_t size = cm_ht_count(ht);
    if (count * 3 > size) {
        const struct cm_ht_node **all = cm_malloc(size * sizeof(*all));
        size_t i, k = 0;
        struct cm_ht_node *node, *tmp;
        cm_ht_foreach_node(ht, i, node, tmp) all[k++] = node;
        for (i = 0; i < count; i++) {
            size_t j = i + (size_t)(cm_rand64() % (size - i));
            const struct cm_ht_node *t = all[i];
            all[i] = all[j];
            all[j] = t;
            out[i] = all[i];
        }
        cm_free(all);
        return;
    }
    struct srv_pick *picks = cm_malloc(count * sizeof(*picks));
    struct cm_ht seen;
    cm_ht_init(&seen, count);
    size_t got = 0;
    while (got < count) {
        const struct cm_ht_node *n = cm_ht_random(ht);
        uint64_t h = cm_hash64(&n, sizeof(n), 0);
        if (cm_ht_find(&seen, h, n, 0, srv_pick_eq))
            continue;
        picks[got].node.hash = h;
        picks[got].n = n;
        cm_ht_insert(&seen, &picks[got].node);
        out[got++] = n;
    }
    cm_ht_fini(&seen);
    cm_free(picks);
}

/* The count argument of the *RAND* commands; see srv_t.h. */
int srv__rand_count(struct srv_client *c, long long *count) {
    if (srv_arg_ll(c, 2, count, NULL) < 0)
        return -1;
    if (*count == LLONG_MIN) {
        srv_reply_errorf(c, "ERR value is out of range, value must between %lld and %lld",
                         -LLONG_MAX, LLONG_MAX);
        return -1;
    }
    return 0;
}

/* Replies count (< size) distinct random members of s as an array. */
static void srv_srand_distinct(struct srv_client *c, const struct srv_set *s, size_t count) {
    const struct cm_ht_node **v = cm_malloc(count * sizeof(*v));
    srv__pick_distinct(&s->ht, count, v);
    resp_add_array_hdr(&c->out, (long)count);
    for (size_t i = 0; i < count; i++) {
        const struct srv_smember *m = (const struct srv_smember *)v[i];
        resp_add_bulk(&c->out, m->p, m->len);
    }
    cm_free(v);
}

static void srv_srandmember_with_count(struct srv_client *c) {
    long long count;
    if (srv__rand_count(c, &count) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 1, &bad);
    if (bad)
        return;
    if (!o || count == 0) {
        srv_db_unlock(&r);
        resp_add_array_hdr(&c->out, 0);
        return;
    }
    const struct srv_set *s = o->payload;
    size_t size = cm_ht_count(&s->ht);
    if (count < 0) { /* repetitions allowed */
        resp_add_array_hdr(&c->out, (long)-count);
        for (long long k = 0; k < -count; k++) {
            const struct srv_smember *m = (const struct srv_smember *)cm_ht_random(&s->ht);
            resp_add_bulk(&c->out, m->p, m->len);
        }
    } else if ((size_t)count >= size) {
        srv_set_reply_all(c, s, 0);
    } else {
        srv_srand_distinct(c, s, (size_t)count);
    }
    srv_db_unlock(&r);
}

void srv_srandmember_command(struct srv_client *c) {
    if (c->argc == 3) {
        srv_srandmember_with_count(c);
        return;
    }
    if (c->argc > 3) {
        srv_reply_syntax_error(c);
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_SET, 1, &bad);
    if (bad)
        return;
    if (o) {
        const struct srv_smember *m =
            (const struct srv_smember *)cm_ht_random(&((struct srv_set *)o->payload)->ht);
        resp_add_bulk(&c->out, m->p, m->len);
    } else {
        resp_add_null(&c->out, c->proto);
    }
    srv_db_unlock(&r);
}

/* ---------------------------------------------------------------- *SCAN helpers, SSCAN */

/* SSCAN/HSCAN/ZSCAN options after the cursor. */
struct srv_scan_opts {
    unsigned long long cursor;
    long long count;
    const char *pat; /* MATCH pattern, NULL for all */
    size_t plen;
};

/* The *SCAN cursor (argv[2]), parsed like Redis 7.0 (strtoul; "-1" wraps); on error replies
 * "ERR invalid cursor" and returns -1. */
static int srv_scan_cursor(struct srv_client *c, unsigned long long *cursor) {
    char tmp[32], *end;
    const struct srv_arg *a = &c->argv[2];
    if (a->len == 0 || a->len >= sizeof(tmp) || isspace((unsigned char)a->p[0])) {
        srv_reply_error(c, "ERR invalid cursor");
        return -1;
    }
    memcpy(tmp, a->p, a->len);
    tmp[a->len] = '\0';
    errno = 0;
    *cursor = strtoull(tmp, &end, 10); /* like Redis 7.0, "-1" wraps around */
    if (*end != '\0' || errno == ERANGE) {
        srv_reply_error(c, "ERR invalid cursor");
        return -1;
    }
    return 0;
}

/* MATCH and COUNT of *SCAN (argv[3] on); on error replies and returns -1. */
static int srv_scan_parse_opts(struct srv_client *c, struct srv_scan_opts *o) {
    o->count = 10;
    o->pat = NULL;
    o->plen = 0;
    for (int j = 3; j < c->argc; j += 2) {
        if (j + 1 >= c->argc) {
            srv_reply_syntax_error(c);
            return -1;
        }
        if (srv_arg_is(c, j, "count")) {
            if (srv_arg_ll(c, j + 1, &o->count, NULL) < 0)
                return -1;
            if (o->count < 1) {
                srv_reply_syntax_error(c);
                return -1;
            }
        } else if (srv_arg_is(c, j, "match")) {
            int all = c->argv[j + 1].len == 1 && c->argv[j + 1].p[0] == '*';
            o->pat = all ? NULL : c->argv[j + 1].p;
            o->plen = all ? 0 : c->argv[j + 1].len;
        } else {
            srv_reply_syntax_error(c);
            return -1;
        }
    }
    return 0;
}

struct srv_scan_ctx {
    const struct cm_ht_node **v;
    size_t n, cap;
};

static void srv_scan_collect(struct cm_ht_node *node, void *arg) {
    struct srv_scan_ctx *k = arg;
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 16;
        k->v = cm_realloc(k->v, k->cap * sizeof(*k->v));
    }
    k->v[k->n++] = node;
}

/*
 * One *SCAN step over ht: visits buckets from o->cursor until o->count nodes were seen or the
 * table ends, then replies [next cursor, elements], emit writing per_node elements for each
 * node whose key matches. Shard lock held.
 */
static void srv_scan_reply(struct srv_client *c, const struct cm_ht *ht,
                           const struct srv_scan_opts *o, int per_node, srv_scan_key_cb *key,
                           srv_scan_emit_cb *emit) {
    struct srv_scan_ctx k = {NULL, 0, 0};
    uint64_t cursor = o->cursor;
    do
        cursor = cm_ht_scan(ht, cursor, srv_scan_collect, &k);
    while (cursor != 0 && k.n < (size_t)o->count);
    size_t keep = 0;
    for (size_t i = 0; i < k.n; i++) {
        const char *p;
        size_t len;
        key(k.v[i], &p, &len);
        if (!o->pat || cm_glob_match(o->pat, o->plen, p, len, 0))
            k.v[keep++] = k.v[i];
    }
    resp_add_array_hdr(&c->out, 2);
    resp_add_bulk_ll(&c->out, (long long)cursor);
    resp_add_array_hdr(&c->out, (long)(keep * (size_t)per_node));
    for (size_t i = 0; i < keep; i++)
        emit(c, k.v[i]);
    cm_free(k.v);
}

/* The *SCAN command; see srv_t.h. */
void srv__scan_command(struct srv_client *c, const struct srv_scan_type *t) {
    struct srv_scan_opts so;
    if (srv_scan_cursor(c, &so.cursor) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, t->type, 1, &bad);
    if (bad)
        return;
    if (!o) { /* cursor 0, no elements */
        resp_add_array_hdr(&c->out, 2);
        resp_add_bulk(&c->out, "0", 1);
        resp_add_array_hdr(&c->out, 0);
    } else if (srv_scan_parse_opts(c, &so) == 0) {
        const struct cm_ht *ht = (const struct cm_ht *)((const char *)o->payload + t->ht_off);
        srv_scan_reply(c, ht, &so, t->per_node, t->key, t->emit);
    }
    srv_db_unlock(&r);
}

static void srv_smember_key(const struct cm_ht_node *n, const char **p, size_t *len) {
    const struct srv_smember *m = (const struct srv_smember *)n;
    *p = m->p;
    *len = m->len;
}

static void srv_smember_emit(struct srv_client *c, const struct cm_ht_node *n) {
    const struct srv_smember *m = (const struct srv_smember *)n;
    resp_add_bulk(&c->out, m->p, m->len);
}

void srv_sscan_command(struct srv_client *c) {
    static const struct srv_scan_type set = {SRV_TYPE_SET, offsetof(struct srv_set, ht), 1,
                                             srv_smember_key, srv_smember_emit};
    srv__scan_command(c, &set);
}

/* ---------------------------------------------------------------- set algebra, SMOVE */

/*
 * These commands read or write several keys, one shard lock at a time. They are atomic when
 * the dispatcher runs them under the exclusive keyspace lock (as inside EXEC); otherwise, like
 * MGET, each key is read atomically but not all keys at the same instant.
 */

/* Checks that keys argv[first .. first + n) hold sets or nothing; counts the missing ones
 * (read = 1: a "keymiss" event each, as Redis's read lookups). Returns -1 after replying
 * WRONGTYPE. */
static int srv_sets_check(struct srv_client *c, int first, int n, int read, int *missing) {
    int64_t now = srv_now_ms();
    *missing = 0;
    for (int i = first; i < first + n; i++) {
        struct srv_db_ref r;
        srv_db_lock(&r, c->argv[i].p, c->argv[i].len);
        struct srv_obj *o = srv_db_find(&r, now);
        int type = o ? o->type : -1;
        srv_db_unlock(&r);
        if (type >= 0 && type != SRV_TYPE_SET) {
            srv_reply_error(c, SRV_ERR_WRONGTYPE);
            return -1;
        }
        *missing += type < 0;
        if (type < 0 && read)
            srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", c->argv[i].p, c->argv[i].len);
    }
    return 0;
}

#define SRV_SOP_UNION 0
#define SRV_SOP_INTER 1
#define SRV_SOP_DIFF  2

struct srv_sop_ctx {
    struct srv_set *acc;
    const struct srv_set *s; /* NULL = empty set */
    int inter;               /* 1: keep the members of s; 0: drop them */
};

static void srv_sop_filter(struct cm_ht_node *node, void *arg) {
    struct srv_sop_ctx *k = arg;
    struct srv_smember *m = (struct srv_smember *)node;
    int in = k->s && srv_set_find(k->s, m->p, m->len) != NULL;
    if (in != k->inter) {
        cm_ht_remove(&k->acc->ht, node);
        srv_t_free(m);
    }
}

/* Applies the set at key a to acc (a missing key is an empty set): union adds its members,
 * inter keeps only its members, diff removes them. */
static void srv_sop_apply(struct srv_set *acc, const struct srv_arg *a, int op) {
    struct srv_db_ref r;
    srv_db_lock(&r, a->p, a->len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    const struct srv_set *s = o && o->type == SRV_TYPE_SET ? o->payload : NULL;
    if (op == SRV_SOP_UNION && s) {
        size_t i;
        struct cm_ht_node *node, *tmp;
        cm_ht_foreach_node(&s->ht, i, node, tmp) {
            const struct srv_smember *m = (const struct srv_smember *)node;
            srv_set_add(acc, m->p, m->len);
        }
    } else if (op != SRV_SOP_UNION && (s || op == SRV_SOP_INTER)) {
        struct srv_sop_ctx k = {acc, s, op == SRV_SOP_INTER};
        cm_ht_foreach(&acc->ht, srv_sop_filter, &k);
    }
    srv_db_unlock(&r);
}

/* Computes op over keys argv[first .. first + n) into a new set; NULL after an error reply. */
static struct srv_set *srv_sop_compute(struct srv_client *c, int first, int n, int op) {
    int missing;
    if (srv_sets_check(c, first, n, 1, &missing) < 0)
        return NULL;
    struct srv_set *acc = srv_set_new();
    if (op == SRV_SOP_INTER && missing)
        return acc;
    srv_sop_apply(acc, &c->argv[first], SRV_SOP_UNION);
    /* An empty accumulator can only stay empty under INTER and DIFF; UNION must go on. */
    for (int i = first + 1; i < first + n && (op == SRV_SOP_UNION || cm_ht_count(&acc->ht)); i++)
        srv_sop_apply(acc, &c->argv[i], op);
    return acc;
}

/* Stores acc (consumed) at key dst, replacing any value, and sends event; an empty result
 * deletes dst ("del" when it existed). Returns the cardinality. */
static long long srv_sop_store(const struct srv_arg *dst, struct srv_set *acc, const char *event) {
    long long n = (long long)cm_ht_count(&acc->ht);
    struct srv_obj *no = NULL;
    if (n)
        no = srv_obj_create_agg(dst->p, dst->len, SRV_TYPE_SET, acc);
    else
        srv_set_free(acc);
    srv__t_store(dst, no, SRV_NOTIFY_SET, event);
    return n;
}

/* SUNION/SINTER/SDIFF (store = 0) and their STORE forms (destination at argv[1]). */
static void srv_sop_generic(struct srv_client *c, int op, int store) {
    if (store && srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    int first = store ? 2 : 1;
    struct srv_set *acc = srv_sop_compute(c, first, c->argc - first, op);
    if (!acc)
        return;
    if (store) {
        static const char *const ev[] = {"sunionstore", "sinterstore", "sdiffstore"};
        resp_add_int(&c->out, srv_sop_store(&c->argv[1], acc, ev[op]));
        return;
    }
    srv_set_reply_all(c, acc, 1);
    srv_set_free(acc);
}

void srv_sunion_command(struct srv_client *c) {
    srv_sop_generic(c, SRV_SOP_UNION, 0);
}

void srv_sinter_command(struct srv_client *c) {
    srv_sop_generic(c, SRV_SOP_INTER, 0);
}

void srv_sdiff_command(struct srv_client *c) {
    srv_sop_generic(c, SRV_SOP_DIFF, 0);
}

void srv_sunionstore_command(struct srv_client *c) {
    srv_sop_generic(c, SRV_SOP_UNION, 1);
}

void srv_sinterstore_command(struct srv_client *c) {
    srv_sop_generic(c, SRV_SOP_INTER, 1);
}

void srv_sdiffstore_command(struct srv_client *c) {
    srv_sop_generic(c, SRV_SOP_DIFF, 1);
}

void srv_sintercard_command(struct srv_client *c) {
    long long numkeys, limit = 0;
    if (srv_arg_ll(c, 1, &numkeys, "ERR numkeys should be greater than 0") < 0)
        return;
    if (numkeys < 1) {
        srv_reply_error(c, "ERR numkeys should be greater than 0");
        return;
    }
    if (numkeys > c->argc - 2) {
        srv_reply_error(c, "ERR Number of keys can't be greater than number of args");
        return;
    }
    for (int j = 2 + (int)numkeys; j < c->argc; j++) {
        if (srv_arg_is(c, j, "limit") && j + 1 < c->argc) {
            const char *msg = "ERR LIMIT can't be negative";
            if (srv_arg_ll(c, ++j, &limit, msg) < 0)
                return;
            if (limit < 0) {
                srv_reply_error(c, msg);
                return;
            }
        } else {
            srv_reply_syntax_error(c);
            return;
        }
    }
    struct srv_set *acc = srv_sop_compute(c, 2, (int)numkeys, SRV_SOP_INTER);
    if (!acc)
        return;
    long long n = (long long)cm_ht_count(&acc->ht);
    srv_set_free(acc);
    resp_add_int(&c->out, limit && n > limit ? limit : n);
}

/* Adds member m back to the set at key k (creating it), after a failed move. */
static void srv_sop_give_back(const struct srv_arg *k, const struct srv_arg *m) {
    struct srv_db_ref r;
    srv_db_lock(&r, k->p, k->len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    if (!o) {
        o = srv_obj_create_agg(k->p, k->len, SRV_TYPE_SET, srv_set_new());
        srv_set_add(o->payload, m->p, m->len);
        srv_db_insert(&r, o);
    } else if (o->type == SRV_TYPE_SET && srv_set_add(o->payload, m->p, m->len)) {
        srv_db_touch(o);
    }
    srv_db_unlock(&r);
}

void srv_smove_command(struct srv_client *c) {
    const struct srv_arg *src = &c->argv[1], *dst = &c->argv[2], *m = &c->argv[3];
    int64_t now = srv_now_ms();
    struct srv_db_ref r;
    /* Source first: missing gives 0 whatever the destination holds. */
    srv_db_lock(&r, src->p, src->len);
    struct srv_obj *o = srv_db_find(&r, now);
    int stype = o ? o->type : -1;
    int member = o && stype == SRV_TYPE_SET && srv_set_find(o->payload, m->p, m->len);
    srv_db_unlock(&r);
    if (stype < 0) {
        resp_add_int(&c->out, 0);
        return;
    }
    int missing;
    if (stype != SRV_TYPE_SET || srv_sets_check(c, 2, 1, 0, &missing) < 0) {
        if (stype != SRV_TYPE_SET)
            srv_reply_error(c, SRV_ERR_WRONGTYPE);
        return;
    }
    if ((src->len == dst->len && memcmp(src->p, dst->p, src->len) == 0) || !member) {
        resp_add_int(&c->out, member);
        return;
    }
    srv_db_lock(&r, src->p, src->len);
    o = srv_db_find(&r, now);
    struct srv_smember *e =
        o && o->type == SRV_TYPE_SET ? srv_set_find(o->payload, m->p, m->len) : NULL;
    int moved = e != NULL;
    if (moved) {
        cm_ht_remove(&((struct srv_set *)o->payload)->ht, &e->node);
        srv_t_free(e);
        srv_notify(SRV_NOTIFY_SET, "srem", src->p, src->len);
        srv_set_done(&r, o);
    }
    srv_db_unlock(&r);
    if (!moved) { /* removed by another client meanwhile */
        resp_add_int(&c->out, 0);
        return;
    }
    srv_db_lock(&r, dst->p, dst->len);
    o = srv_db_find(&r, now);
    int ok = !o || o->type == SRV_TYPE_SET, added = 1;
    if (!o) {
        o = srv_obj_create_agg(dst->p, dst->len, SRV_TYPE_SET, srv_set_new());
        srv_set_add(o->payload, m->p, m->len);
        srv_db_insert(&r, o);
    } else if (ok && (added = srv_set_add(o->payload, m->p, m->len))) {
        srv_db_touch(o);
    }
    srv_db_unlock(&r);
    if (ok && added)
        srv_notify(SRV_NOTIFY_SET, "sadd", dst->p, dst->len);
    if (!ok) { /* the destination changed type meanwhile: give the member back */
        srv_sop_give_back(src, m);
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        return;
    }
    resp_add_int(&c->out, 1);
}

/* ---------------------------------------------------------------- access for srv_t_zset.c */

/* Calls cb on every member of set payload p (shard lock held; cb must not modify the set). */
void srv__set_foreach(const void *set, srv_member_cb *cb, void *arg) {
    const struct srv_set *s = set;
    size_t i;
    struct cm_ht_node *node, *tmp;
    cm_ht_foreach_node(&s->ht, i, node, tmp) {
        const struct srv_smember *m = (const struct srv_smember *)node;
        cb(m->p, m->len, arg);
    }
}

/* 1 when (p, n) is a member of set payload set. */
int srv__set_has(const void *set, const char *p, size_t n) {
    return srv_set_find(set, p, n) != NULL;
}

/* Number of members of set payload set. */
size_t srv__set_card(const void *set) {
    return cm_ht_count(&((const struct srv_set *)set)->ht);
}
