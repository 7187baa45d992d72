/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The list type and its commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET
 * LREM LTRIM LINSERT LPOS LMOVE RPOPLPUSH LMPOP. A list is a ring buffer of element pointers whose
 * capacity is a power of two: push and pop at either end are O(1) amortized, index access is O(1),
 * and LRANGE is O(k). The buffer doubles when full and halves when a quarter full.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"
#include "server/srv_t.h"

#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"

#include <limits.h>
#include <string.h>

#define SRV_LIST_MIN_CAP 8

struct srv_list {
    struct srv_t_str **buf; /* cap slots; elements at head .. head + len - 1 (mod cap) */
    size_t cap;             /* a power of two */
    size_t head;
    size_t len;
};

static struct srv_list *srv_list_new(void) {
    struct srv_list *l = srv_t_alloc(sizeof(*l));
    l->cap = SRV_LIST_MIN_CAP;
    l->buf = srv_t_alloc(l->cap * sizeof(*l->buf));
    l->head = 0;
    l->len = 0;
    return l;
}

/* Slot of the element at index i (0 <= i < len). */
static inline struct srv_t_str **srv_list_at(const struct srv_list *l, size_t i) {
    return &l->buf[(l->head + i) & (l->cap - 1)];
}

/* Moves the elements into a buffer of cap slots (cap >= len), starting at slot 0. */
static void srv_list_resize(struct srv_list *l, size_t cap) {
    struct srv_t_str **nb = srv_t_alloc(cap * sizeof(*nb));
    for (size_t i = 0; i < l->len; i++)
        nb[i] = *srv_list_at(l, i);
    srv_t_free(l->buf);
    l->buf = nb;
    l->cap = cap;
    l->head = 0;
}

static void srv_list_push(struct srv_list *l, struct srv_t_str *e, int front) {
    if (l->len == l->cap)
        srv_list_resize(l, l->cap * 2);
    if (front) {
        l->head = (l->head - 1) & (l->cap - 1);
        l->buf[l->head] = e;
    } else {
        l->buf[(l->head + l->len) & (l->cap - 1)] = e;
    }
    l->len++;
}

/* Halves the buffer when it is at most a quarter full. */
static void srv_list_maybe_shrink(struct srv_list *l) {
    if (l->cap > SRV_LIST_MIN_CAP && l->len <= l->cap / 4)
        srv_list_resize(l, l->cap / 2);
}

/* Removes and returns the first (front = 1) or last element; the list must not be empty. */
static struct srv_t_str *srv_list_pop(struct srv_list *l, int front) {
    struct srv_t_str *e;
    if (front) {
        e = l->buf[l->head];
        l->head = (l->head + 1) & (l->cap - 1);
    } else {
        e = *srv_list_at(l, l->len - 1);
    }
    l->len--;
    return e;
}

/* Frees list payload p and its elements (last owner, any thread). */
void srv_list_free(void *p) {
    struct srv_list *l = p;
    for (size_t i = 0; i < l->len; i++)
        srv_t_free(*srv_list_at(l, i));
    srv_t_free(l->buf);
    srv_t_free(l);
}

/* Deep copy of list payload p (caller holds its shard lock or the exclusive lock). */
void *srv_list_dup(const void *p) {
    const struct srv_list *l = p;
    struct srv_list *n = srv_t_alloc(sizeof(*n));
    n->cap = l->cap;
    n->buf = srv_t_alloc(n->cap * sizeof(*n->buf));
    n->head = 0;
    n->len = l->len;
    for (size_t i = 0; i < l->len; i++) {
        const struct srv_t_str *e = *srv_list_at(l, i);
        n->buf[i] = srv_t_str_new(e->p, e->len);
    }
    return n;
}

/* Deletes the key of o when its list became empty, else marks it modified. */
static void srv_list_done(struct srv_db_ref *r, struct srv_obj *o) {
    struct srv_list *l = o->payload;
    if (l->len == 0) {
        srv_notify(SRV_NOTIFY_GENERIC, "del", o->key, o->klen);
        srv_db_unlink(r, o);
    } else {
        srv_list_maybe_shrink(l);
        srv_db_touch(o);
    }
}

/* ---------------------------------------------------------------- push */

/* LPUSH/RPUSH (xx = 0) and LPUSHX/RPUSHX (xx = 1). */
static void srv_push_generic(struct srv_client *c, int front, int xx) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 0, &bad);
    if (bad)
        return;
    if (!o && xx) {
        srv_db_unlock(&r);
        resp_add_int(&c->out, 0);
        return;
    }
    int fresh = o == NULL;
    if (fresh)
        o = srv_obj_create_agg(c->argv[1].p, c->argv[1].len, SRV_TYPE_LIST, srv_list_new());
    struct srv_list *l = o->payload;
    for (int i = 2; i < c->argc; i++)
        srv_list_push(l, srv_t_str_new(c->argv[i].p, c->argv[i].len), front);
    if (fresh)
        srv_db_insert(&r, o);
    else
        srv_db_touch(o);
    long long n = (long long)l->len;
    srv_db_unlock(&r);
    resp_add_int(&c->out, n);
    srv_notify(SRV_NOTIFY_LIST, front ? "lpush" : "rpush", c->argv[1].p, c->argv[1].len);
}

void srv_lpush_command(struct srv_client *c) {
    srv_push_generic(c, 1, 0);
}

void srv_rpush_command(struct srv_client *c) {
    srv_push_generic(c, 0, 0);
}

void srv_lpushx_command(struct srv_client *c) {
    srv_push_generic(c, 1, 1);
}

void srv_rpushx_command(struct srv_client *c) {
    srv_push_generic(c, 0, 1);
}

/* ---------------------------------------------------------------- pop */

/* Replies e as a bulk string and frees it. */
static void srv_list_reply_free(struct srv_client *c, struct srv_t_str *e) {
    resp_add_bulk(&c->out, e->p, e->len);
    srv_t_free(e);
}

static void srv_pop_generic(struct srv_client *c, int front) {
    long long count = 1;
    int hascount = c->argc == 3;
    if (c->argc > 3) {
        srv_reply_wrong_arity(c, front ? "lpop" : "rpop");
        return;
    }
    if (hascount && srv_arg_ll(c, 2, &count, "ERR value is out of range, must be positive") < 0)
        return;
    if (count < 0) {
        srv_reply_error(c, "ERR value is out of range, must be positive");
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 0, &bad);
    if (bad)
        return;
    if (!o) {
        srv_db_unlock(&r);
        if (hascount)
            resp_add_null_array(&c->out, c->proto);
        else
            resp_add_null(&c->out, c->proto);
        return;
    }
    struct srv_list *l = o->payload;
    srv_notify(SRV_NOTIFY_LIST, front ? "lpop" : "rpop", c->argv[1].p, c->argv[1].len);
    if (!hascount) {
        srv_list_reply_free(c, srv_list_pop(l, front));
    } else {
        size_t n = (size_t)count < l->len ? (size_t)count : l->len;
        resp_add_array_hdr(&c->out, (long)n);
        for (size_t i = 0; i < n; i++)
            srv_list_reply_free(c, srv_list_pop(l, front));
        if (n == 0) {
            srv_db_unlock(&r);
            return;
        }
    }
    srv_list_done(&r, o);
    srv_db_unlock(&r);
}

void srv_lpop_command(struct srv_client *c) {
    srv_pop_generic(c, 1);
}

void srv_rpop_command(struct srv_client *c) {
    srv_pop_generic(c, 0);
}

/* ---------------------------------------------------------------- reads */

void srv_llen_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 1, &bad);
    if (bad)
        return;
    long long n = o ? (long long)((struct srv_list *)o->payload)->len : 0;
    srv_db_unlock(&r);
    resp_add_int(&c->out, n);
}

/*
 * Clamps the inclusive range [*start, *end] (negative = from the end) to a list of len
 * elements. Returns 0 when the range is empty.
 */
static int srv_list_range(long long *start, long long *end, long long len) {
    if (*start < 0)
        *start += len;
    if (*end < 0)
        *end += len;
    if (*start < 0)
        *start = 0;
    if (*start > *end || *start >= len)
        return 0;
    if (*end >= len)
        *end = len - 1;
    return 1;
}

void srv_lrange_command(struct srv_client *c) {
    long long start, end;
    if (srv_arg_ll(c, 2, &start, NULL) < 0 || srv_arg_ll(c, 3, &end, NULL) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 1, &bad);
    if (bad)
        return;
    if (!o || !srv_list_range(&start, &end, (long long)((struct srv_list *)o->payload)->len)) {
        srv_db_unlock(&r);
        resp_add_array_hdr(&c->out, 0);
        return;
    }
    const struct srv_list *l = o->payload;
    resp_add_array_hdr(&c->out, (long)(end - start + 1));
    for (long long i = start; i <= end; i++) {
        const struct srv_t_str *e = *srv_list_at(l, (size_t)i);
        resp_add_bulk(&c->out, e->p, e->len);
    }
    srv_db_unlock(&r);
}

/* Converts index (negative = from the end) to a position; -1 when out of range. */
static long long srv_list_index(long long index, size_t len) {
    if (index < 0)
        index += (long long)len;
    return index < 0 || index >= (long long)len ? -1 : index;
}

void srv_lindex_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 1, &bad);
    if (bad)
        return;
    long long index;
    if (!o) {
        srv_db_unlock(&r);
        resp_add_null(&c->out, c->proto);
        return;
    }
    if (srv_arg_ll(c, 2, &index, NULL) < 0) {
        srv_db_unlock(&r);
        return;
    }
    const struct srv_list *l = o->payload;
    long long pos = srv_list_index(index, l->len);
    if (pos < 0) {
        resp_add_null(&c->out, c->proto);
    } else {
        const struct srv_t_str *e = *srv_list_at(l, (size_t)pos);
        resp_add_bulk(&c->out, e->p, e->len);
    }
    srv_db_unlock(&r);
}

/* ---------------------------------------------------------------- LSET, LREM, LTRIM */

void srv_lset_command(struct srv_client *c) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 0, &bad);
    if (bad)
        return;
    long long index;
    if (!o) {
        srv_db_unlock(&r);
        srv_reply_error(c, "ERR no such key");
        return;
    }
    if (srv_arg_ll(c, 2, &index, NULL) < 0) {
        srv_db_unlock(&r);
        return;
    }
    struct srv_list *l = o->payload;
    long long pos = srv_list_index(index, l->len);
    if (pos < 0) {
        srv_db_unlock(&r);
        srv_reply_error(c, "ERR index out of range");
        return;
    }
    struct srv_t_str **slot = srv_list_at(l, (size_t)pos);
    srv_t_free(*slot);
    *slot = srv_t_str_new(c->argv[3].p, c->argv[3].len);
    srv_db_touch(o);
    srv_db_unlock(&r);
    srv_notify(SRV_NOTIFY_LIST, "lset", c->argv[1].p, c->argv[1].len);
    srv_reply_ok(c);
}

static int srv_list_elem_eq(const struct srv_t_str *e, const struct srv_arg *a) {
    return e->len == a->len && memcmp(e->p, a->p, a->len) == 0;
}

/*
 * Removes up to limit (0 = all) elements equal to v, scanning from the head (dir = 1) or the
 * tail (dir = -1), and compacts the survivors in place. Returns the number removed.
 */
static size_t srv_list_remove(struct srv_list *l, const struct srv_arg *v, size_t limit, int dir) {
    size_t removed = 0, w = 0;
    for (size_t k = 0; k < l->len; k++) {
        size_t i = dir > 0 ? k : l->len - 1 - k;
        struct srv_t_str *e = *srv_list_at(l, i);
        if ((limit == 0 || removed < limit) && srv_list_elem_eq(e, v)) {
            srv_t_free(e);
            removed++;
            continue;
        }
        size_t to = dir > 0 ? w : l->len - 1 - w;
        *srv_list_at(l, to) = e;
        w++;
    }
    if (dir < 0) /* survivors sit at the tail end: move the head up */
        l->head = (l->head + removed) & (l->cap - 1);
    l->len -= removed;
    return removed;
}

void srv_lrem_command(struct srv_client *c) {
    long long count;
    if (srv_arg_ll(c, 2, &count, NULL) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 0, &bad);
    if (bad)
        return;
    size_t removed = 0;
    if (o) {
        size_t limit = count == LLONG_MIN ? (size_t)LLONG_MAX + 1
                       : count < 0        ? (size_t)-count
                                          : (size_t)count;
        removed = srv_list_remove(o->payload, &c->argv[3], limit, count < 0 ? -1 : 1);
        if (removed) {
            srv_notify(SRV_NOTIFY_LIST, "lrem", c->argv[1].p, c->argv[1].len);
            srv_list_done(&r, o);
        }
    }
    srv_db_unlock(&r);
    resp_add_int(&c->out, (long long)removed);
}

void srv_ltrim_command(struct srv_client *c) {
    long long start, end;
    if (srv_arg_ll(c, 2, &start, NULL) < 0 || srv_arg_ll(c, 3, &end, NULL) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 0, &bad);
    if (bad)
        return;
    if (o) {
        struct srv_list *l = o->payload;
        long long len = (long long)l->len;
        size_t ltrim, rtrim;
        if (srv_list_range(&start, &end, len)) {
            ltrim = (size_t)start;
            rtrim = (size_t)(len - end - 1);
        } else {
            ltrim = l->len;
            rtrim = 0;
        }
        for (size_t i = 0; i < ltrim; i++)
            srv_t_free(srv_list_pop(l, 1));
        for (size_t i = 0; i < rtrim; i++)
            srv_t_free(srv_list_pop(l, 0));
        srv_notify(SRV_NOTIFY_LIST, "ltrim", c->argv[1].p, c->argv[1].len);
        if (ltrim || rtrim)
            srv_list_done(&r, o);
    }
    srv_db_unlock(&r);
    srv_reply_ok(c);
}

/* ---------------------------------------------------------------- LINSERT, LPOS */

/* Inserts e so that it ends up at index pos (0 .. len), shifting the shorter side. */
static void srv_list_insert_at(struct srv_list *l, size_t pos, struct srv_t_str *e) {
    if (l->len == l->cap)
        srv_list_resize(l, l->cap * 2);
    if (pos < l->len / 2) { /* move the first pos elements one slot towards the front */
        l->head = (l->head - 1) & (l->cap - 1);
        for (size_t i = 0; i < pos; i++)
            *srv_list_at(l, i) = *srv_list_at(l, i + 1);
    } else { /* move the elements from pos one slot towards the back */
        for (size_t i = l->len; i > pos; i--)
            *srv_list_at(l, i) = *srv_list_at(l, i - 1);
    }
    *srv_list_at(l, pos) = e;
    l->len++;
}

void srv_linsert_command(struct srv_client *c) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    int after;
    if (srv_arg_is(c, 2, "after")) {
        after = 1;
    } else if (srv_arg_is(c, 2, "before")) {
        after = 0;
    } else {
        srv_reply_syntax_error(c);
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 0, &bad);
    if (bad)
        return;
    long long reply = 0;
    if (o) {
        struct srv_list *l = o->payload;
        reply = -1;
        for (size_t i = 0; i < l->len; i++) {
            if (srv_list_elem_eq(*srv_list_at(l, i), &c->argv[3])) {
                srv_list_insert_at(l, i + (size_t)after,
                                   srv_t_str_new(c->argv[4].p, c->argv[4].len));
                srv_db_touch(o);
                reply = (long long)l->len;
                srv_notify(SRV_NOTIFY_LIST, "linsert", c->argv[1].p, c->argv[1].len);
                break;
            }
        }
    }
    srv_db_unlock(&r);
    resp_add_int(&c->out, reply);
}

/* LPOS options. */
struct srv_lpos {
    long long rank;   /* 1-based match to start from; negative = from the tail */
    long long count;  /* -1 = no COUNT, 0 = all matches */
    long long maxlen; /* 0 = whole list */
};

static int srv_lpos_opts(struct srv_client *c, struct srv_lpos *q) {
    q->rank = 1;
    q->count = -1;
    q->maxlen = 0;
    for (int j = 3; j < c->argc; j++) {
        int more = j + 1 < c->argc;
        if (more && srv_arg_is(c, j, "rank")) {
            if (srv_arg_ll(c, ++j, &q->rank, NULL) < 0)
                return -1;
            if (q->rank == LLONG_MIN) /* Redis 7.0 takes it as the first match from the tail */
                q->rank = -1;
            if (q->rank == 0) {
                srv_reply_error(c, "ERR RANK can't be zero: use 1 to start from the first match, "
                                   "2 from the second ... or use negative to start from the end "
                                   "of the list");
                return -1;
            }
        } else if (more && (srv_arg_is(c, j, "count") || srv_arg_is(c, j, "maxlen"))) {
            int is_count = srv_arg_is(c, j, "count");
            const char *msg =
                is_count ? "ERR COUNT can't be negative" : "ERR MAXLEN can't be negative";
            long long v;
            if (srv_arg_ll(c, ++j, &v, msg) < 0)
                return -1;
            if (v < 0) {
                srv_reply_error(c, msg);
                return -1;
            }
            *(is_count ? &q->count : &q->maxlen) = v;
        } else {
            srv_reply_syntax_error(c);
            return -1;
        }
    }
    return 0;
}

void srv_lpos_command(struct srv_client *c) {
    struct srv_lpos q;
    if (srv_lpos_opts(c, &q) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_LIST, 1, &bad);
    if (bad)
        return;
    if (!o) {
        srv_db_unlock(&r);
        if (q.count >= 0)
            resp_add_array_hdr(&c->out, 0);
        else
            resp_add_null(&c->out, c->proto);
        return;
    }
    const struct srv_list *l = o->payload;
    int rev = q.rank < 0;
    unsigned long long rank = rev ? (unsigned long long)-q.rank : (unsigned long long)q.rank;
    size_t cap = 8, n = 0;
    long long *found = cm_malloc(cap * sizeof(*found));
    unsigned long long matches = 0;
    for (size_t k = 0; k < l->len && (q.maxlen == 0 || k < (size_t)q.maxlen); k++) {
        size_t i = rev ? l->len - 1 - k : k;
        if (!srv_list_elem_eq(*srv_list_at(l, i), &c->argv[2]) || ++matches < rank)
            continue;
        if (n == cap) {
            cap *= 2;
            found = cm_realloc(found, cap * sizeof(*found));
        }
        found[n++] = (long long)i;
        if (q.count < 0 || (q.count > 0 && n >= (size_t)q.count))
            break;
    }
    srv_db_unlock(&r);
    if (q.count >= 0) {
        resp_add_array_hdr(&c->out, (long)n);
        for (size_t i = 0; i < n; i++)
            resp_add_int(&c->out, found[i]);
    } else if (n) {
        resp_add_int(&c->out, found[0]);
    } else {
        resp_add_null(&c->out, c->proto);
    }
    cm_free(found);
}

/* ---------------------------------------------------------------- LMOVE, RPOPLPUSH */

/*
 * LMOVE touches two keys one shard lock at a time: atomic under the exclusive keyspace lock
 * (inside EXEC), otherwise each step is atomic on its own key.
 */

/* Type of the key a (-1 when missing). */
static int srv_key_type(const struct srv_arg *a) {
    struct srv_db_ref r;
    srv_db_lock(&r, a->p, a->len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    int type = o ? o->type : -1;
    srv_db_unlock(&r);
    return type;
}

/*
 * Pushes e at key k (front or back), creating the list. Returns 0, or -1 without pushing when
 * k holds another type. reply = 1 first appends e as a bulk reply (while e is still ours).
 */
static int srv_list_push_key(struct srv_client *c, const struct srv_arg *k, struct srv_t_str *e,
                             int front, int reply) {
    struct srv_db_ref r;
    srv_db_lock(&r, k->p, k->len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    if (o && o->type != SRV_TYPE_LIST) {
        srv_db_unlock(&r);
        return -1;
    }
    if (reply)
        resp_add_bulk(&c->out, e->p, e->len);
    if (!o) {
        o = srv_obj_create_agg(k->p, k->len, SRV_TYPE_LIST, srv_list_new());
        srv_list_push(o->payload, e, front);
        srv_db_insert(&r, o);
    } else {
        srv_list_push(o->payload, e, front);
        srv_db_touch(o);
    }
    srv_db_unlock(&r);
    return 0;
}

/* Moves one element within the list at k (source and destination are the same key). */
static void srv_lmove_same(struct srv_client *c, const struct srv_arg *k, int from_front,
                           int to_front) {
    struct srv_db_ref r;
    srv_db_lock(&r, k->p, k->len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    if (!o || o->type != SRV_TYPE_LIST) {
        srv_db_unlock(&r);
        if (o)
            srv_reply_error(c, SRV_ERR_WRONGTYPE);
        else
            resp_add_null(&c->out, c->proto);
        return;
    }
    struct srv_t_str *e = srv_list_pop(o->payload, from_front);
    resp_add_bulk(&c->out, e->p, e->len);
    srv_list_push(o->payload, e, to_front);
    srv_db_touch(o);
    srv_db_unlock(&r);
    srv_notify(SRV_NOTIFY_LIST, to_front ? "lpush" : "rpush", k->p, k->len);
    srv_notify(SRV_NOTIFY_LIST, from_front ? "lpop" : "rpop", k->p, k->len);
}

static void srv_lmove_generic(struct srv_client *c, int from_front, int to_front) {
    const struct srv_arg *src = &c->argv[1], *dst = &c->argv[2];
    if (src->len == dst->len && memcmp(src->p, dst->p, src->len) == 0) {
        srv_lmove_same(c, src, from_front, to_front);
        return;
    }
    int stype = srv_key_type(src);
    if (stype < 0) {
        resp_add_null(&c->out, c->proto);
        return;
    }
    int dtype = stype == SRV_TYPE_LIST ? srv_key_type(dst) : -1;
    if (stype != SRV_TYPE_LIST || (dtype >= 0 && dtype != SRV_TYPE_LIST)) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        return;
    }
    struct srv_db_ref r;
    srv_db_lock(&r, src->p, src->len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    struct srv_t_str *e = NULL;
    int emptied = 0;
    if (o && o->type == SRV_TYPE_LIST) {
        e = srv_list_pop(o->payload, from_front);
        emptied = ((struct srv_list *)o->payload)->len == 0;
        if (emptied) /* Redis sends "del" after the push events: below */
            srv_db_unlink(&r, o);
        else
            srv_list_done(&r, o);
    }
    srv_db_unlock(&r);
    if (!e) { /* emptied or replaced by another client meanwhile */
        resp_add_null(&c->out, c->proto);
        return;
    }
    if (srv_list_push_key(c, dst, e, to_front, 1) < 0) {
        /* the destination changed type meanwhile: give the element back */
        if (srv_list_push_key(c, src, e, from_front, 0) < 0)
            srv_t_free(e);
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        return;
    }
    /* Redis's order: the push on the destination, the pop on the source, its "del". */
    srv_notify(SRV_NOTIFY_LIST, to_front ? "lpush" : "rpush", dst->p, dst->len);
    srv_notify(SRV_NOTIFY_LIST, from_front ? "lpop" : "rpop", src->p, src->len);
    if (emptied)
        srv_notify(SRV_NOTIFY_GENERIC, "del", src->p, src->len);
}

/* Parses LEFT/RIGHT at argument i into *front; replies a syntax error and returns -1. */
static int srv_list_side(struct srv_client *c, int i, int *front) {
    if (srv_arg_is(c, i, "left"))
        *front = 1;
    else if (srv_arg_is(c, i, "right"))
        *front = 0;
    else {
        srv_reply_syntax_error(c);
        return -1;
    }
    return 0;
}

void srv_lmove_command(struct srv_client *c) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    int from, to;
    if (srv_list_side(c, 3, &from) < 0 || srv_list_side(c, 4, &to) < 0)
        return;
    srv_lmove_generic(c, from, to);
}

void srv_rpoplpush_command(struct srv_client *c) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    srv_lmove_generic(c, 0, 1);
}

/* ---------------------------------------------------------------- LMPOP */

/* The LMPOP/ZMPOP arguments; see srv_t.h. */
int srv__mpop_args(struct srv_client *c, const char *w0, const char *w1, long long *numkeys,
                   int *where, long long *count) {
    const char *nk = "ERR numkeys should be greater than 0";
    if (srv_arg_ll(c, 1, numkeys, nk) < 0)
        return -1;
    if (*numkeys < 1) {
        srv_reply_error(c, nk);
        return -1;
    }
    if (*numkeys >= c->argc - 2) {
        srv_reply_syntax_error(c);
        return -1;
    }
    int wi = 2 + (int)*numkeys;
    if (srv_arg_is(c, wi, w0)) {
        *where = 0;
    } else if (srv_arg_is(c, wi, w1)) {
        *where = 1;
    } else {
        srv_reply_syntax_error(c);
        return -1;
    }
    *count = -1;
    for (int j = wi + 1; j < c->argc; j++) {
        if (*count == -1 && srv_arg_is(c, j, "count") && j + 1 < c->argc) {
            const char *msg = "ERR count should be greater than 0";
            if (srv_arg_ll(c, ++j, count, msg) < 0)
                return -1;
            if (*count < 1) {
                srv_reply_error(c, msg);
                return -1;
            }
        } else {
            srv_reply_syntax_error(c);
            return -1;
        }
    }
    if (*count == -1)
        *count = 1;
    return 0;
}

void srv_lmpop_command(struct srv_client *c) {
    long long numkeys, count;
    int right;
    if (srv__mpop_args(c, "left", "right", &numkeys, &right, &count) < 0)
        return;
    for (int i = 2; i < 2 + (int)numkeys; i++) {
        struct srv_db_ref r;
        int bad;
        struct srv_obj *o = srv_t_find_at(c, &r, i, SRV_TYPE_LIST, 0, &bad);
        if (bad)
            return;
        if (!o) {
            srv_db_unlock(&r);
            continue;
        }
        struct srv_list *l = o->payload;
        size_t n = (size_t)count < l->len ? (size_t)count : l->len;
        resp_add_array_hdr(&c->out, 2);
        resp_add_bulk(&c->out, c->argv[i].p, c->argv[i].len);
        resp_add_array_hdr(&c->out, (long)n);
        for (size_t k = 0; k < n; k++)
            srv_list_reply_free(c, srv_list_pop(l, !right));
        srv_notify(SRV_NOTIFY_LIST, right ? "rpop" : "lpop", c->argv[i].p, c->argv[i].len);
        srv_list_done(&r, o);
        srv_db_unlock(&r);
        return;
    }
    resp_add_null_array(&c->out, c->proto);
}
