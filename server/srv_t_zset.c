/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sorted set type and its commands: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZCOUNT ZLEXCOUNT
 * ZRANK ZREVRANK ZRANGE (index, BYSCORE, BYLEX, REV, LIMIT, WITHSCORES) ZREVRANGE ZRANGEBYSCORE
 * ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX
 * ZPOPMIN ZPOPMAX ZRANDMEMBER ZSCAN ZRANGESTORE ZUNION ZINTER ZDIFF (and STORE forms)
 * ZINTERCARD ZMPOP. A sorted set is a skip list ordered by (score, member) whose
 * links carry spans (so ranks are O(log n)), plus a cm_ht from member to node for O(1) score
 * lookups. Each node is one allocation: links, then the member bytes.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"
#include "server/srv_t.h"

#include "common/cm_hash.h"
#include "common/cm_ht.h"
#include "common/cm_mem.h"
#include "common/cm_util.h"
#include "redis-compat/resp_write.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SRV_ZSL_MAX_LEVEL 32

struct srv_zn {
    struct cm_ht_node hnode; /* first: member table link */
    double score;
    struct srv_zn *back; /* previous node on level 0, NULL for the first */
    char *ele;           /* member bytes, stored after lev[] */
    size_t len;
    int nlev;
    struct {
        struct srv_zn *fwd;
        size_t span; /* level-0 steps to fwd (to the end when fwd is NULL) */
    } lev[];
};

struct srv_zset {
    struct cm_ht ht;
    struct srv_zn *header; /* sentinel with SRV_ZSL_MAX_LEVEL links */
    struct srv_zn *tail;
    size_t length;
    int level;
};

static struct srv_zn *srv_zn_new(int nlev, double score, const char *p, size_t n) {
    struct srv_zn *z = srv_t_alloc(sizeof(*z) + (size_t)nlev * sizeof(z->lev[0]) + n);
    z->score = score;
    z->back = NULL;
    z->nlev = nlev;
    z->ele = (char *)&z->lev[nlev];
    z->len = n;
    if (n)
        memcpy(z->ele, p, n);
    for (int i = 0; i < nlev; i++) {
        z->lev[i].fwd = NULL;
        z->lev[i].span = 0;
    }
    return z;
}

static struct srv_zset *srv_zset_new(void) {
    struct srv_zset *z = srv_t_alloc(sizeof(*z));
    cm_ht_init(&z->ht, 4);
    z->header = srv_zn_new(SRV_ZSL_MAX_LEVEL, 0, NULL, 0);
    z->tail = NULL;
    z->length = 0;
    z->level = 1;
    return z;
}

/* Level of a new node: 1 + geometric with p = 1/4. */
static int srv_zsl_random_level(void) {
    uint64_t r = cm_rand64();
    int lvl = 1;
    while (lvl < SRV_ZSL_MAX_LEVEL && (r & 3) == 0) {
        lvl++;
        r >>= 2;
    }
    return lvl;
}

/* Orders (score, member) pairs: <0, 0, >0. */
static int srv_zcmp(double s1, const char *p1, size_t n1, double s2, const char *p2, size_t n2) {
    if (s1 != s2)
        return s1 < s2 ? -1 : 1;
    size_t m = n1 < n2 ? n1 : n2;
    int c = m ? memcmp(p1, p2, m) : 0;
    if (c)
        return c;
    return n1 < n2 ? -1 : n1 > n2 ? 1 : 0;
}

/* 1 when node x sorts before (score, p, n). */
static inline int srv_zn_before(const struct srv_zn *x, double score, const char *p, size_t n) {
    return srv_zcmp(x->score, x->ele, x->len, score, p, n) < 0;
}

/* Links node z (levels and member set) into the skip list at its (score, member) place. */
static void srv_zsl_link(struct srv_zset *zs, struct srv_zn *z) {
    struct srv_zn *update[SRV_ZSL_MAX_LEVEL], *x = zs->header;
    size_t rank[SRV_ZSL_MAX_LEVEL];
    for (int i = zs->level - 1; i >= 0; i--) {
        rank[i] = i == zs->level - 1 ? 0 : rank[i + 1];
        while (x->lev[i].fwd && srv_zn_before(x->lev[i].fwd, z->score, z->ele, z->len)) {
            rank[i] += x->lev[i].span;
            x = x->lev[i].fwd;
        }
        update[i] = x;
    }
    if (z->nlev > zs->level) {
        for (int i = zs->level; i < z->nlev; i++) {
            rank[i] = 0;
            update[i] = zs->header;
            update[i]->lev[i].span = zs->length;
        }
        zs->level = z->nlev;
    }
    for (int i = 0; i < z->nlev; i++) {
        z->lev[i].fwd = update[i]->lev[i].fwd;
        update[i]->lev[i].fwd = z;
        z->lev[i].span = update[i]->lev[i].span - (rank[0] - rank[i]);
        update[i]->lev[i].span = (rank[0] - rank[i]) + 1;
    }
    for (int i = z->nlev; i < zs->level; i++)
        update[i]->lev[i].span++;
    z->back = update[0] == zs->header ? NULL : update[0];
    if (z->lev[0].fwd)
        z->lev[0].fwd->back = z;
    else
        zs->tail = z;
    zs->length++;
}

/* Unlinks node z from the skip list (not from the member table); z is not freed. */
static void srv_zsl_unlink(struct srv_zset *zs, struct srv_zn *z) {
    struct srv_zn *update[SRV_ZSL_MAX_LEVEL], *x = zs->header;
    for (int i = zs->level - 1; i >= 0; i--) {
        while (x->lev[i].fwd && x->lev[i].fwd != z &&
               srv_zn_before(x->lev[i].fwd, z->score, z->ele, z->len))
            x = x->lev[i].fwd;
        update[i] = x;
    }
    for (int i = 0; i < zs->level; i++) {
        if (update[i]->lev[i].fwd == z) {
            update[i]->lev[i].span += z->lev[i].span - 1;
            update[i]->lev[i].fwd = z->lev[i].fwd;
        } else {
            update[i]->lev[i].span--;
        }
    }
    if (z->lev[0].fwd)
        z->lev[0].fwd->back = z->back;
    else
        zs->tail = z->back;
    while (zs->level > 1 && zs->header->lev[zs->level - 1].fwd == NULL)
        zs->level--;
    zs->length--;
}

static int srv_zn_eq(const struct cm_ht_node *n, const void *key, size_t klen) {
    const struct srv_zn *z = (const struct srv_zn *)n;
    return z->len == klen && memcmp(z->ele, key, klen) == 0;
}

static struct srv_zn *srv_zset_find(const struct srv_zset *zs, const char *p, size_t n) {
    return (struct srv_zn *)cm_ht_find(&zs->ht, srv_t_hash(p, n), p, n, srv_zn_eq);
}

/* Inserts a new member (absent) with score. */
static void srv_zset_insert(struct srv_zset *zs, const char *p, size_t n, double score) {
    if (score == 0)
        score = 0; /* -0 is stored as 0, as Redis's compact encoding does */
    struct srv_zn *z = srv_zn_new(srv_zsl_random_level(), score, p, n);
    z->hnode.hash = srv_t_hash(p, n);
    cm_ht_insert(&zs->ht, &z->hnode);
    srv_zsl_link(zs, z);
}

/* Changes z's score, moving it only when its neighbours no longer bracket it. */
static void srv_zset_rescore(struct srv_zset *zs, struct srv_zn *z, double score) {
    struct srv_zn *next = z->lev[0].fwd;
    if ((!z->back ||
         srv_zcmp(z->back->score, z->back->ele, z->back->len, score, z->ele, z->len) < 0) &&
        (!next || srv_zcmp(next->score, next->ele, next->len, score, z->ele, z->len) > 0)) {
        z->score = score;
        return;
    }
    srv_zsl_unlink(zs, z);
    z->score = score;
    for (int i = 0; i < z->nlev; i++) {
        z->lev[i].fwd = NULL;
        z->lev[i].span = 0;
    }
    srv_zsl_link(zs, z);
}

/* Removes and frees z. */
static void srv_zset_delete(struct srv_zset *zs, struct srv_zn *z) {
    srv_zsl_unlink(zs, z);
    cm_ht_remove(&zs->ht, &z->hnode);
    srv_t_free(z);
}

/* Frees sorted set payload p: nodes, header and member table (last owner, any thread). */
void srv_zset_free(void *p) {
    struct srv_zset *zs = p;
    struct srv_zn *x = zs->header->lev[0].fwd;
    while (x) {
        struct srv_zn *next = x->lev[0].fwd;
        srv_t_free(x);
        x = next;
    }
    srv_t_free(zs->header);
    cm_ht_fini(&zs->ht);
    srv_t_free(zs);
}

/* Deep copy of sorted set payload p (caller holds its shard lock or the exclusive lock). */
void *srv_zset_dup(const void *p) {
    const struct srv_zset *zs = p;
    struct srv_zset *n = srv_zset_new();
    for (const struct srv_zn *x = zs->tail; x; x = x->back)
        srv_zset_insert(n, x->ele, x->len, x->score);
    return n;
}

/* 1-based rank of z. */
static size_t srv_zsl_rank(const struct srv_zset *zs, const struct srv_zn *z) {
    const struct srv_zn *x = zs->header;
    size_t rank = 0;
    for (int i = zs->level - 1; i >= 0; i--) {
        while (x->lev[i].fwd &&
               (x->lev[i].fwd == z || srv_zn_before(x->lev[i].fwd, z->score, z->ele, z->len))) {
            rank += x->lev[i].span;
            x = x->lev[i].fwd;
        }
        if (x == z)
            return rank;
    }
    return rank;
}

/* Node at 1-based rank (1 .. length). */
static struct srv_zn *srv_zsl_by_rank(const struct srv_zset *zs, size_t rank) {
    struct srv_zn *x = zs->header;
    size_t seen = 0;
    for (int i = zs->level - 1; i >= 0; i--) {
        while (x->lev[i].fwd && seen + x->lev[i].span <= rank) {
            seen += x->lev[i].span;
            x = x->lev[i].fwd;
        }
        if (seen == rank)
            return x;
    }
    return NULL;
}

/* ---------------------------------------------------------------- score and lex ranges */

/* A score range (lex = 0) or a member range (lex = 1, BYLEX: all scores assumed equal). */
struct srv_zrange {
    int lex;
    int minex, maxex;                  /* exclusive bounds */
    double min, max;                   /* score bounds */
    const struct srv_arg *lmin, *lmax; /* lex bounds (argument text, first byte [ ( - +) */
};

static int srv_parse_score_bound(const struct srv_arg *a, double *v, int *ex) {
    const char *p = a->p;
    size_t n = a->len;
    *ex = 0;
    if (n && p[0] == '(') {
        *ex = 1;
        p++;
        n--;
    }
    return cm_str2d(p, n, v) == 0 && !isnan(*v) ? 0 : -1;
}

/* Parses a score range from arguments i (min) and j (max). Returns 0 or -1 (replied). */
static int srv_parse_score_range(struct srv_client *c, int i, int j, struct srv_zrange *rg) {
    rg->lex = 0;
    if (srv_parse_score_bound(&c->argv[i], &rg->min, &rg->minex) < 0 ||
        srv_parse_score_bound(&c->argv[j], &rg->max, &rg->maxex) < 0) {
        srv_reply_error(c, "ERR min or max is not a float");
        return -1;
    }
    return 0;
}

/* A lex bound is "-", "+", or "[value" / "(value". */
static int srv_lex_bound_ok(const struct srv_arg *a, int *ex) {
    if (a->len == 0)
        return 0;
    *ex = a->p[0] == '(';
    if (a->p[0] == '(' || a->p[0] == '[')
        return 1;
    return a->len == 1 && (a->p[0] == '-' || a->p[0] == '+');
}

/* Parses a lex range from arguments i (min) and j (max). Returns 0 or -1 (replied). */
static int srv_parse_lex_range(struct srv_client *c, int i, int j, struct srv_zrange *rg) {
    rg->lex = 1;
    rg->lmin = &c->argv[i];
    rg->lmax = &c->argv[j];
    if (!srv_lex_bound_ok(rg->lmin, &rg->minex) || !srv_lex_bound_ok(rg->lmax, &rg->maxex)) {
        srv_reply_error(c, "ERR min or max not valid string range item");
        return -1;
    }
    return 0;
}

/* Compares z's member with lex bound b (not "-" / "+"). */
static int srv_lex_cmp(const struct srv_zn *z, const struct srv_arg *b) {
    return srv_zcmp(0, z->ele, z->len, 0, b->p + 1, b->len - 1);
}

static int srv_zrange_gte_min(const struct srv_zn *z, const struct srv_zrange *r) {
    if (!r->lex)
        return r->minex ? z->score > r->min : z->score >= r->min;
    if (r->lmin->p[0] == '-' || r->lmin->p[0] == '+')
        return r->lmin->p[0] == '-';
    int cmp = srv_lex_cmp(z, r->lmin);
    return r->minex ? cmp > 0 : cmp >= 0;
}

static int srv_zrange_lte_max(const struct srv_zn *z, const struct srv_zrange *r) {
    if (!r->lex)
        return r->maxex ? z->score < r->max : z->score <= r->max;
    if (r->lmax->p[0] == '-' || r->lmax->p[0] == '+')
        return r->lmax->p[0] == '+';
    int cmp = srv_lex_cmp(z, r->lmax);
    return r->maxex ? cmp < 0 : cmp <= 0;
}

/* First node within r, or NULL. */
static struct srv_zn *srv_zsl_first_in(const struct srv_zset *zs, const struct srv_zrange *r) {
    struct srv_zn *x = zs->header;
    for (int i = zs->level - 1; i >= 0; i--)
        while (x->lev[i].fwd && !srv_zrange_gte_min(x->lev[i].fwd, r))
            x = x->lev[i].fwd;
    x = x->lev[0].fwd;
    return x && srv_zrange_lte_max(x, r) ? x : NULL;
}

/* Last node within r, or NULL. */
static struct srv_zn *srv_zsl_last_in(const struct srv_zset *zs, const struct srv_zrange *r) {
    struct srv_zn *x = zs->header;
    for (int i = zs->level - 1; i >= 0; i--)
        while (x->lev[i].fwd && srv_zrange_lte_max(x->lev[i].fwd, r))
            x = x->lev[i].fwd;
    return x != zs->header && srv_zrange_gte_min(x, r) ? x : NULL;
}

/* Number of nodes within r. */
static size_t srv_zsl_count_in(const struct srv_zset *zs, const struct srv_zrange *r) {
    const struct srv_zn *first = srv_zsl_first_in(zs, r);
    const struct srv_zn *last = first ? srv_zsl_last_in(zs, r) : NULL;
    if (!first || !last)
        return 0;
    size_t a = srv_zsl_rank(zs, first), b = srv_zsl_rank(zs, last);
    return b >= a ? b - a + 1 : 0;
}

/* ---------------------------------------------------------------- replies */

static void srv_reply_score(struct srv_client *c, double d) {
    resp_add_double(&c->out, c->proto, d);
}

/* One range element: member, or member + score (a pair array in RESP3). */
static void srv_zreply_elem(struct srv_client *c, const struct srv_zn *z, int withscores) {
    if (withscores && c->proto == 3)
        resp_add_array_hdr(&c->out, 2);
    resp_add_bulk(&c->out, z->ele, z->len);
    if (withscores)
        srv_reply_score(c, z->score);
}

/* Array header for n range elements. */
static void srv_zreply_hdr(struct srv_client *c, size_t n, int withscores) {
    resp_add_array_hdr(&c->out, (long)(withscores && c->proto != 3 ? 2 * n : n));
}

/* Deletes the key of o when its sorted set became empty, else marks it modified. */
static void srv_zset_done(struct srv_db_ref *r, struct srv_obj *o) {
    if (((struct srv_zset *)o->payload)->length == 0) {
        srv_notify(SRV_NOTIFY_GENERIC, "del", o->key, o->klen);
        srv_db_unlink(r, o);
    } else {
        srv_db_touch(o);
    }
}

/* ---------------------------------------------------------------- ZADD, ZINCRBY */

#define SRV_ZADD_NX   0x01u
#define SRV_ZADD_XX   0x02u
#define SRV_ZADD_GT   0x04u
#define SRV_ZADD_LT   0x08u
#define SRV_ZADD_CH   0x10u
#define SRV_ZADD_INCR 0x20u

/* Outcome of one srv_zset_add. */
#define SRV_ZADD_OUT_NOP     0
#define SRV_ZADD_OUT_ADDED   1
#define SRV_ZADD_OUT_UPDATED 2
#define SRV_ZADD_OUT_SAME    3 /* processed, score unchanged */
#define SRV_ZADD_OUT_NAN     -1

/* Adds or updates one member under flags; *score becomes the resulting score. */
static int srv_zset_add(struct srv_zset *zs, const struct srv_arg *m, double *score,
                        unsigned flags) {
    struct srv_zn *z = srv_zset_find(zs, m->p, m->len);
    if (!z) {
        if (flags & SRV_ZADD_XX)
            return SRV_ZADD_OUT_NOP;
        srv_zset_insert(zs, m->p, m->len, *score);
        return SRV_ZADD_OUT_ADDED;
    }
    if (flags & SRV_ZADD_NX)
        return SRV_ZADD_OUT_NOP;
    double cur = z->score, s = *score;
    if (flags & SRV_ZADD_INCR) {
        s += cur;
        if (isnan(s))
            return SRV_ZADD_OUT_NAN;
    }
    if (s == 0)
        s = 0; /* no -0 */
    if (((flags & SRV_ZADD_LT) && s >= cur) || ((flags & SRV_ZADD_GT) && s <= cur))
        return SRV_ZADD_OUT_NOP;
    *score = s;
    if (s == cur)
        return SRV_ZADD_OUT_SAME;
    srv_zset_rescore(zs, z, s);
    return SRV_ZADD_OUT_UPDATED;
}

/* Parses ZADD's option words from argument 2 on; returns the index of the first score. */
static int srv_zadd_flags(struct srv_client *c, unsigned *flags) {
    static const struct {
        const char *w;
        unsigned f;
    } words[] = {{"nx", SRV_ZADD_NX}, {"xx", SRV_ZADD_XX}, {"gt", SRV_ZADD_GT},
                 {"lt", SRV_ZADD_LT}, {"ch", SRV_ZADD_CH}, {"incr", SRV_ZADD_INCR}};
    int j = 2;
    *flags = 0;
    for (; j < c->argc; j++) {
        unsigned f = 0;
        for (size_t k = 0; k < sizeof(words) / sizeof(words[0]) && !f; k++)
            if (srv_arg_is(c, j, words[k].w))
                f = words[k].f;
        if (!f)
            break;
        *flags |= f;
    }
    return j;
}

/* ZADD (flags from the arguments) and ZINCRBY (incr = 1: ZADD key INCR score member). */
static void srv_zadd_generic(struct srv_client *c, int zincrby) {
    if (srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    unsigned flags = SRV_ZADD_INCR;
    int sidx = zincrby ? 2 : srv_zadd_flags(c, &flags);
    int elements = c->argc - sidx;
    if (elements % 2 || !elements) {
        srv_reply_syntax_error(c);
        return;
    }
    elements /= 2;
    if ((flags & SRV_ZADD_NX) && (flags & SRV_ZADD_XX)) {
        srv_reply_error(c, "ERR XX and NX options at the same time are not compatible");
        return;
    }
    if (((flags & SRV_ZADD_NX) && (flags & (SRV_ZADD_GT | SRV_ZADD_LT))) ||
        ((flags & SRV_ZADD_GT) && (flags & SRV_ZADD_LT))) {
        srv_reply_error(c, "ERR GT, LT, and/or NX options at the same time are not compatible");
        return;
    }
    if ((flags & SRV_ZADD_INCR) && elements > 1) {
        srv_reply_error(c, "ERR INCR option supports a single increment-element pair");
        return;
    }
    double *scores = cm_malloc((size_t)elements * sizeof(*scores));
    for (int j = 0; j < elements; j++) {
        const struct srv_arg *a = &c->argv[sidx + 2 * j];
        if (cm_str2d(a->p, a->len, &scores[j]) != 0 || isnan(scores[j])) {
            cm_free(scores);
            srv_reply_error(c, "ERR value is not a valid float");
            return;
        }
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 0, &bad);
    if (bad) {
        cm_free(scores);
        return;
    }
    long long added = 0, updated = 0, processed = 0;
    double score = 0;
    int nan = 0;
    if (o || !(flags & SRV_ZADD_XX)) {
        int fresh = o == NULL;
        if (fresh)
            o = srv_obj_create_agg(c->argv[1].p, c->argv[1].len, SRV_TYPE_ZSET, srv_zset_new());
        for (int j = 0; j < elements; j++) {
            score = scores[j];
            int rc = srv_zset_add(o->payload, &c->argv[sidx + 2 * j + 1], &score, flags);
            if (rc == SRV_ZADD_OUT_NAN) {
                nan = 1;
                break;
            }
            added += rc == SRV_ZADD_OUT_ADDED;
            updated += rc == SRV_ZADD_OUT_UPDATED;
            processed += rc != SRV_ZADD_OUT_NOP;
        }
        if (fresh && ((struct srv_zset *)o->payload)->length == 0)
            srv_obj_unref(o);
        else if (fresh)
            srv_db_insert(&r, o);
        else if (added || updated)
            srv_db_touch(o);
    }
    srv_db_unlock(&r);
    cm_free(scores);
    if (!nan && (added || updated))
        srv_notify(SRV_NOTIFY_ZSET, zincrby ? "zincr" : "zadd", c->argv[1].p, c->argv[1].len);
    if (nan)
        srv_reply_error(c, "ERR resulting score is not a number (NaN)");
    else if (!(flags & SRV_ZADD_INCR))
        resp_add_int(&c->out, (flags & SRV_ZADD_CH) ? added + updated : added);
    else if (processed)
        srv_reply_score(c, score);
    else
        resp_add_null(&c->out, c->proto);
}

void srv_zadd_command(struct srv_client *c) {
    srv_zadd_generic(c, 0);
}

void srv_zincrby_command(struct srv_client *c) {
    srv_zadd_generic(c, 1);
}

/* ---------------------------------------------------------------- ZREM, ZCARD, ZSCORE */

void srv_zrem_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 0, &bad);
    if (bad)
        return;
    long long removed = 0;
    if (o) {
        struct srv_zset *zs = o->payload;
        for (int i = 2; i < c->argc && zs->length; i++) {
            struct srv_zn *z = srv_zset_find(zs, c->argv[i].p, c->argv[i].len);
            if (z) {
                srv_zset_delete(zs, z);
                removed++;
            }
        }
        if (removed) {
            srv_notify(SRV_NOTIFY_ZSET, "zrem", c->argv[1].p, c->argv[1].len);
            srv_zset_done(&r, o);
        }
    }
    srv_db_unlock(&r);
    resp_add_int(&c->out, removed);
}

void srv_zcard_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 1, &bad);
    if (bad)
        return;
    long long n = o ? (long long)((struct srv_zset *)o->payload)->length : 0;
    srv_db_unlock(&r);
    resp_add_int(&c->out, n);
}

void srv_zscore_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 1, &bad);
    if (bad)
        return;
    const struct srv_zn *z = o ? srv_zset_find(o->payload, c->argv[2].p, c->argv[2].len) : NULL;
    if (z)
        srv_reply_score(c, z->score);
    else
        resp_add_null(&c->out, c->proto);
    srv_db_unlock(&r);
}

void srv_zmscore_command(struct srv_client *c) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 1, &bad);
    if (bad)
        return;
    resp_add_array_hdr(&c->out, c->argc - 2);
    for (int i = 2; i < c->argc; i++) {
        const struct srv_zn *z = o ? srv_zset_find(o->payload, c->argv[i].p, c->argv[i].len) : NULL;
        if (z)
            srv_reply_score(c, z->score);
        else
            resp_add_null(&c->out, c->proto);
    }
    srv_db_unlock(&r);
}

/* ---------------------------------------------------------------- ZRANK, ZCOUNT */

static void srv_zrank_generic(struct srv_client *c, int rev) {
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 1, &bad);
    if (bad)
        return;
    const struct srv_zset *zs = o ? o->payload : NULL;
    const struct srv_zn *z = zs ? srv_zset_find(zs, c->argv[2].p, c->argv[2].len) : NULL;
    if (z) {
        size_t rank = srv_zsl_rank(zs, z);
        resp_add_int(&c->out, (long long)(rev ? zs->length - rank : rank - 1));
    } else {
        resp_add_null(&c->out, c->proto);
    }
    srv_db_unlock(&r);
}

void srv_zrank_command(struct srv_client *c) {
    srv_zrank_generic(c, 0);
}

void srv_zrevrank_command(struct srv_client *c) {
    srv_zrank_generic(c, 1);
}

/* ZCOUNT (lex = 0) and ZLEXCOUNT (lex = 1). */
static void srv_zcount_generic(struct srv_client *c, int lex) {
    struct srv_zrange rg;
    if ((lex ? srv_parse_lex_range : srv_parse_score_range)(c, 2, 3, &rg) < 0)
        return;
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 1, &bad);
    if (bad)
        return;
    long long n = o ? (long long)srv_zsl_count_in(o->payload, &rg) : 0;
    srv_db_unlock(&r);
    resp_add_int(&c->out, n);
}

void srv_zcount_command(struct srv_client *c) {
    srv_zcount_generic(c, 0);
}

void srv_zlexcount_command(struct srv_client *c) {
    srv_zcount_generic(c, 1);
}

/* ---------------------------------------------------------------- ZRANGE family */

#define SRV_ZR_AUTO  0
#define SRV_ZR_RANK  1
#define SRV_ZR_SCORE 2
#define SRV_ZR_LEX   3

struct srv_zrange_req {
    int type; /* SRV_ZR_* */
    int rev;
    int withscores;
    long long offset, limit; /* LIMIT; limit < 0 = no limit */
};

/* Collected range elements. */
struct srv_zvec {
    const struct srv_zn **v;
    size_t n, cap;
};

static void srv_zvec_push(struct srv_zvec *w, const struct srv_zn *z) {
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->v = cm_realloc(w->v, w->cap * sizeof(*w->v));
    }
    w->v[w->n++] = z;
}

/* Collects the elements at 0-based ranks [start, end] (clamped like LRANGE). */
static void srv_zrange_rank(const struct srv_zset *zs, long long start, long long end,
                            const struct srv_zrange_req *q, struct srv_zvec *out) {
    long long len = (long long)zs->length;
    if (start < 0)
        start += len;
    if (end < 0)
        end += len;
    if (start < 0)
        start = 0;
    if (start > end || start >= len)
        return;
    if (end >= len)
        end = len - 1;
    size_t n = (size_t)(end - start + 1);
    const struct srv_zn *z = q->rev ? srv_zsl_by_rank(zs, (size_t)(len - start))
                                    : srv_zsl_by_rank(zs, (size_t)start + 1);
    for (size_t i = 0; i < n && z; i++) {
        srv_zvec_push(out, z);
        z = q->rev ? z->back : z->lev[0].fwd;
    }
}

/* Collects the elements within rg (score or lex), after LIMIT. */
static void srv_zrange_score(const struct srv_zset *zs, const struct srv_zrange *rg,
                             const struct srv_zrange_req *q, struct srv_zvec *out) {
    const struct srv_zn *z = q->rev ? srv_zsl_last_in(zs, rg) : srv_zsl_first_in(zs, rg);
    long long offset = q->offset;
    if (offset < 0)
        z = NULL;
    for (; z && offset > 0; offset--)
        z = q->rev ? z->back : z->lev[0].fwd;
    for (long long lim = q->limit; z && lim != 0; lim--) {
        if (q->rev ? !srv_zrange_gte_min(z, rg) : !srv_zrange_lte_max(z, rg))
            break;
        srv_zvec_push(out, z);
        z = q->rev ? z->back : z->lev[0].fwd;
    }
}

/* Parses the options from argument first on (after min and max). store = 1 for ZRANGESTORE,
 * which takes no WITHSCORES. Returns 0 or -1 (replied). */
static int srv_zrange_opts(struct srv_client *c, int first, int store, struct srv_zrange_req *q) {
    for (int j = first; j < c->argc; j++) {
        int left = c->argc - j - 1;
        if (!store && srv_arg_is(c, j, "withscores")) {
            q->withscores = 1;
        } else if (srv_arg_is(c, j, "limit") && left >= 2) {
            if (srv_arg_ll(c, j + 1, &q->offset, NULL) < 0 ||
                srv_arg_ll(c, j + 2, &q->limit, NULL) < 0)
                return -1;
            j += 2;
        } else if (q->rev < 0 && srv_arg_is(c, j, "rev")) {
            q->rev = 1;
        } else if (q->type == SRV_ZR_AUTO && srv_arg_is(c, j, "bylex")) {
            q->type = SRV_ZR_LEX;
        } else if (q->type == SRV_ZR_AUTO && srv_arg_is(c, j, "byscore")) {
            q->type = SRV_ZR_SCORE;
        } else {
            srv_reply_syntax_error(c);
            return -1;
        }
    }
    if (q->rev < 0)
        q->rev = 0;
    if (q->type == SRV_ZR_AUTO)
        q->type = SRV_ZR_RANK;
    if ((q->offset != 0 || q->limit != -1) && q->type == SRV_ZR_RANK) {
        srv_reply_error(c, "ERR syntax error, LIMIT is only supported in combination with "
                           "either BYSCORE or BYLEX");
        return -1;
    }
    if (q->withscores && q->type == SRV_ZR_LEX) {
        srv_reply_error(c, "ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        return -1;
    }
    return 0;
}

/* Stores zs (consumed; NULL or empty = delete, "del" when dst existed) at key dst, replacing
 * any value, and sends event. Returns the number of members stored. */
static long long srv_zset_store(const struct srv_arg *dst, struct srv_zset *zs, const char *event) {
    long long n = zs ? (long long)zs->length : 0;
    struct srv_obj *no = NULL;
    if (n)
        no = srv_obj_create_agg(dst->p, dst->len, SRV_TYPE_ZSET, zs);
    else if (zs)
        srv_zset_free(zs);
    srv__t_store(dst, no, SRV_NOTIFY_ZSET, event);
    return n;
}

/*
 * ZRANGE and its older forms (store = 0), ZRANGESTORE (store = 1: destination argv[1], then
 * the ZRANGE arguments shifted by one). type/rev preset by the command (SRV_ZR_AUTO / -1 =
 * from the arguments).
 */
static void srv_zrange_generic(struct srv_client *c, int type, int rev, int store) {
    if (store && srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    struct srv_zrange_req q = {type, rev, 0, 0, -1};
    int key = 1 + store, minidx = 2 + store, maxidx = 3 + store;
    if (srv_zrange_opts(c, 4 + store, store, &q) < 0)
        return;
    if (q.rev && q.type != SRV_ZR_RANK) {
        minidx = 3 + store;
        maxidx = 2 + store;
    }
    long long start = 0, end = 0;
    struct srv_zrange rg;
    memset(&rg, 0, sizeof(rg));
    if (q.type == SRV_ZR_RANK) {
        if (srv_arg_ll(c, minidx, &start, NULL) < 0 || srv_arg_ll(c, maxidx, &end, NULL) < 0)
            return;
    } else if (q.type == SRV_ZR_SCORE) {
        if (srv_parse_score_range(c, minidx, maxidx, &rg) < 0)
            return;
    } else if (srv_parse_lex_range(c, minidx, maxidx, &rg) < 0) {
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find_at(c, &r, key, SRV_TYPE_ZSET, 1, &bad);
    if (bad)
        return;
    struct srv_zvec w = {NULL, 0, 0};
    if (o && q.type == SRV_ZR_RANK)
        srv_zrange_rank(o->payload, start, end, &q, &w);
    else if (o)
        srv_zrange_score(o->payload, &rg, &q, &w);
    struct srv_zset *copy = NULL;
    if (store) {
        copy = srv_zset_new();
        for (size_t i = 0; i < w.n; i++)
            srv_zset_insert(copy, w.v[i]->ele, w.v[i]->len, w.v[i]->score);
    } else {
        srv_zreply_hdr(c, w.n, q.withscores);
        for (size_t i = 0; i < w.n; i++)
            srv_zreply_elem(c, w.v[i], q.withscores);
    }
    srv_db_unlock(&r);
    cm_free(w.v);
    if (store)
        resp_add_int(&c->out, srv_zset_store(&c->argv[1], copy, "zrangestore"));
}

void srv_zrange_command(struct srv_client *c) {
    srv_zrange_generic(c, SRV_ZR_AUTO, -1, 0);
}

void srv_zrevrange_command(struct srv_client *c) {
    srv_zrange_generic(c, SRV_ZR_RANK, 1, 0);
}

void srv_zrangebyscore_command(struct srv_client *c) {
    srv_zrange_generic(c, SRV_ZR_SCORE, 0, 0);
}

void srv_zrevrangebyscore_command(struct srv_client *c) {
    srv_zrange_generic(c, SRV_ZR_SCORE, 1, 0);
}

void srv_zrangestore_command(struct srv_client *c) {
    srv_zrange_generic(c, SRV_ZR_AUTO, -1, 1);
}

void srv_zrangebylex_command(struct srv_client *c) {
    srv_zrange_generic(c, SRV_ZR_LEX, 0, 0);
}

void srv_zrevrangebylex_command(struct srv_client *c) {
    srv_zrange_generic(c, SRV_ZR_LEX, 1, 0);
}

/* ---------------------------------------------------------------- ZREMRANGEBY* */

/* ZREMRANGEBYRANK / BYSCORE / BYLEX (type = SRV_ZR_*). */
static void srv_zremrange_generic(struct srv_client *c, int type) {
    long long start = 0, end = 0;
    struct srv_zrange rg;
    memset(&rg, 0, sizeof(rg));
    if (type == SRV_ZR_RANK) {
        if (srv_arg_ll(c, 2, &start, NULL) < 0 || srv_arg_ll(c, 3, &end, NULL) < 0)
            return;
    } else if ((type == SRV_ZR_SCORE ? srv_parse_score_range : srv_parse_lex_range)(c, 2, 3, &rg) <
               0) {
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 0, &bad);
    if (bad)
        return;
    long long removed = 0;
    struct srv_zset *zs = o ? o->payload : NULL;
    struct srv_zn *z = NULL;
    size_t n = 0;
    if (zs && type == SRV_ZR_RANK) {
        long long len = (long long)zs->length;
        if (start < 0)
            start += len;
        if (end < 0)
            end += len;
        if (start < 0)
            start = 0;
        if (start <= end && start < len) {
            if (end >= len)
                end = len - 1;
            z = srv_zsl_by_rank(zs, (size_t)start + 1);
            n = (size_t)(end - start + 1);
        }
    } else if (zs) {
        n = srv_zsl_count_in(zs, &rg);
        z = n ? srv_zsl_first_in(zs, &rg) : NULL;
    }
    for (; z && (size_t)removed < n; removed++) {
        struct srv_zn *next = z->lev[0].fwd;
        srv_zset_delete(zs, z);
        z = next;
    }
    if (removed) {
        const char *ev = type == SRV_ZR_RANK    ? "zremrangebyrank"
                         : type == SRV_ZR_SCORE ? "zremrangebyscore"
                                                : "zremrangebylex";
        srv_notify(SRV_NOTIFY_ZSET, ev, c->argv[1].p, c->argv[1].len);
        srv_zset_done(&r, o);
    }
    srv_db_unlock(&r);
    resp_add_int(&c->out, removed);
}

void srv_zremrangebyrank_command(struct srv_client *c) {
    srv_zremrange_generic(c, SRV_ZR_RANK);
}

void srv_zremrangebyscore_command(struct srv_client *c) {
    srv_zremrange_generic(c, SRV_ZR_SCORE);
}

void srv_zremrangebylex_command(struct srv_client *c) {
    srv_zremrange_generic(c, SRV_ZR_LEX);
}

/* ---------------------------------------------------------------- ZPOPMIN, ZPOPMAX */

static void srv_zpop_generic(struct srv_client *c, int max) {
    long long count = 1;
    int hascount = c->argc == 3;
    if (c->argc > 3) {
        srv_reply_syntax_error(c);
        return;
    }
    const char *range = "ERR value is out of range, must be positive";
    if (hascount && srv_arg_ll(c, 2, &count, range) < 0)
        return;
    if (count < 0) {
        srv_reply_error(c, range);
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 0, &bad);
    if (bad)
        return;
    if (!o || count == 0) {
        srv_db_unlock(&r);
        resp_add_array_hdr(&c->out, 0);
        return;
    }
    struct srv_zset *zs = o->payload;
    size_t n = (size_t)count < zs->length ? (size_t)count : zs->length;
    int nested = hascount && c->proto == 3; /* RESP3 with COUNT: [member, score] pairs */
    resp_add_array_hdr(&c->out, (long)(nested ? n : 2 * n));
    for (size_t i = 0; i < n; i++) {
        struct srv_zn *z = max ? zs->tail : zs->header->lev[0].fwd;
        if (nested)
            resp_add_array_hdr(&c->out, 2);
        resp_add_bulk(&c->out, z->ele, z->len);
        srv_reply_score(c, z->score);
        srv_zset_delete(zs, z);
    }
    srv_notify(SRV_NOTIFY_ZSET, max ? "zpopmax" : "zpopmin", c->argv[1].p, c->argv[1].len);
    srv_zset_done(&r, o);
    srv_db_unlock(&r);
}

void srv_zpopmin_command(struct srv_client *c) {
    srv_zpop_generic(c, 0);
}

void srv_zpopmax_command(struct srv_client *c) {
    srv_zpop_generic(c, 1);
}

/* ---------------------------------------------------------------- ZRANDMEMBER, ZSCAN */

static void srv_zrandmember_with_count(struct srv_client *c) {
    long long count;
    if (srv__rand_count(c, &count) < 0)
        return;
    int withscores = c->argc == 4;
    if (c->argc > 4 || (withscores && !srv_arg_is(c, 3, "withscores"))) {
        srv_reply_syntax_error(c);
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 1, &bad);
    if (bad)
        return;
    if (!o || count == 0) {
        srv_db_unlock(&r);
        resp_add_array_hdr(&c->out, 0);
        return;
    }
    const struct srv_zset *zs = o->payload;
    size_t n = count < 0 ? (size_t)-count : (size_t)count < zs->length ? (size_t)count : zs->length;
    srv_zreply_hdr(c, n, withscores);
    if (count < 0) {
        for (size_t i = 0; i < n; i++)
            srv_zreply_elem(c, (const struct srv_zn *)cm_ht_random(&zs->ht), withscores);
    } else if (n == zs->length) {
        for (const struct srv_zn *z = zs->header->lev[0].fwd; z; z = z->lev[0].fwd)
            srv_zreply_elem(c, z, withscores);
    } else {
        const struct cm_ht_node **v = cm_malloc(n * sizeof(*v));
        srv__pick_distinct(&zs->ht, n, v);
        for (size_t i = 0; i < n; i++)
            srv_zreply_elem(c, (const struct srv_zn *)v[i], withscores);
        cm_free(v);
    }
    srv_db_unlock(&r);
}

void srv_zrandmember_command(struct srv_client *c) {
    if (c->argc >= 3) {
        srv_zrandmember_with_count(c);
        return;
    }
    struct srv_db_ref r;
    int bad;
    struct srv_obj *o = srv_t_find(c, &r, SRV_TYPE_ZSET, 1, &bad);
    if (bad)
        return;
    if (o) {
        const struct srv_zn *z =
            (const struct srv_zn *)cm_ht_random(&((struct srv_zset *)o->payload)->ht);
        resp_add_bulk(&c->out, z->ele, z->len);
    } else {
        resp_add_null(&c->out, c->proto);
    }
    srv_db_unlock(&r);
}

static void srv_zn_key(const struct cm_ht_node *n, const char **p, size_t *len) {
    const struct srv_zn *z = (const struct srv_zn *)n;
    *p = z->ele;
    *len = z->len;
}

/* ZSCAN sends scores as bulk strings in both protocols. */
static void srv_zn_emit(struct srv_client *c, const struct cm_ht_node *n) {
    const struct srv_zn *z = (const struct srv_zn *)n;
    resp_add_bulk(&c->out, z->ele, z->len);
    resp_add_double(&c->out, 2, z->score);
}

void srv_zscan_command(struct srv_client *c) {
    static const struct srv_scan_type zset = {SRV_TYPE_ZSET, offsetof(struct srv_zset, ht), 2,
                                              srv_zn_key, srv_zn_emit};
    srv__scan_command(c, &zset);
}

/* ---------------------------------------------------------------- ZUNION, ZINTER, ZDIFF */

/*
 * ZUNION/ZINTER/ZDIFF, their STORE forms and ZINTERCARD read several keys one shard lock at a
 * time (atomic inside EXEC, where the keyspace lock is exclusive). Sources may be sorted sets
 * or sets (members of a set score 1); a missing key is empty.
 */

#define SRV_ZOP_UNION 0
#define SRV_ZOP_INTER 1
#define SRV_ZOP_DIFF  2

#define SRV_ZAGG_SUM 0
#define SRV_ZAGG_MIN 1
#define SRV_ZAGG_MAX 2

struct srv_zsrc {
    int argi;      /* key argument */
    int type;      /* SRV_TYPE_ZSET, SRV_TYPE_SET, or -1 when missing */
    size_t card;   /* cardinality when checked */
    double weight; /* WEIGHTS, 1 by default */
};

struct srv_zop {
    int op, agg, withscores;
    long long limit; /* ZINTERCARD LIMIT, 0 = none */
    int nsrc;
    struct srv_zsrc *src;
};

static double srv_zagg(double cur, double v, int agg) {
    if (agg == SRV_ZAGG_SUM) {
        double t = cur + v;
        return isnan(t) ? 0 : t; /* inf + -inf */
    }
    if (agg == SRV_ZAGG_MIN)
        return v < cur ? v : cur;
    return v > cur ? v : cur;
}

/* Weighted score; inf * 0 counts as 0 like Redis. */
static double srv_zweight(double score, double weight) {
    double v = score * weight;
    return isnan(v) ? 0 : v;
}

/* Adds (p, n) with score v to acc, aggregating with an existing member. */
static void srv_zop_merge(struct srv_zset *acc, const char *p, size_t n, double v, int agg) {
    struct srv_zn *z = srv_zset_find(acc, p, n);
    if (!z) {
        srv_zset_insert(acc, p, n, v);
        return;
    }
    double t = srv_zagg(z->score, v, agg);
    if (t != z->score)
        srv_zset_rescore(acc, z, t);
}

struct srv_zop_ctx {
    struct srv_zset *acc;
    const struct srv_zsrc *src;
    const void *payload; /* the source's payload (zset or set), NULL when missing */
    int agg;
};

static void srv_zop_merge_member(const char *p, size_t n, void *arg) {
    struct srv_zop_ctx *k = arg;
    srv_zop_merge(k->acc, p, n, srv_zweight(1, k->src->weight), k->agg);
}

static void srv_zop_drop_member(const char *p, size_t n, void *arg) {
    struct srv_zop_ctx *k = arg;
    struct srv_zn *z = srv_zset_find(k->acc, p, n);
    if (z)
        srv_zset_delete(k->acc, z);
}

/* ZINTER step: keeps acc's members present in the source, aggregating their scores. */
static void srv_zop_intersect(struct cm_ht_node *node, void *arg) {
    struct srv_zop_ctx *k = arg;
    struct srv_zn *z = (struct srv_zn *)node;
    double s;
    if (k->payload && k->src->type == SRV_TYPE_ZSET) {
        const struct srv_zn *m = srv_zset_find(k->payload, z->ele, z->len);
        if (!m) {
            srv_zset_delete(k->acc, z);
            return;
        }
        s = m->score;
    } else if (k->payload && srv__set_has(k->payload, z->ele, z->len)) {
        s = 1;
    } else {
        srv_zset_delete(k->acc, z);
        return;
    }
    double t = srv_zagg(z->score, srv_zweight(s, k->src->weight), k->agg);
    if (t != z->score)
        srv_zset_rescore(k->acc, z, t);
}

/* Applies source i to acc under its shard lock. first = 1 for the first source. */
static void srv_zop_apply(struct srv_client *c, const struct srv_zop *q, int i, int first,
                          struct srv_zset *acc) {
    const struct srv_zsrc *src = &q->src[i];
    const struct srv_arg *a = &c->argv[src->argi];
    struct srv_db_ref r;
    srv_db_lock(&r, a->p, a->len);
    struct srv_obj *o = srv_db_find(&r, srv_now_ms());
    int type = o ? o->type : -1;
    struct srv_zop_ctx k = {acc, src, NULL, q->agg};
    if (type == src->type && type >= 0) /* unchanged since the check */
        k.payload = o->payload;
    int op = first ? SRV_ZOP_UNION : q->op;
    if (op == SRV_ZOP_INTER) {
        cm_ht_foreach(&acc->ht, srv_zop_intersect, &k);
    } else if (k.payload && type == SRV_TYPE_SET) {
        srv__set_foreach(k.payload, op == SRV_ZOP_DIFF ? srv_zop_drop_member : srv_zop_merge_member,
                         &k);
    } else if (k.payload) {
        const struct srv_zset *zs = k.payload;
        for (const struct srv_zn *z = zs->header->lev[0].fwd; z; z = z->lev[0].fwd) {
            if (op == SRV_ZOP_DIFF)
                srv_zop_drop_member(z->ele, z->len, &k);
            else
                srv_zop_merge(acc, z->ele, z->len,
                              srv_zweight(z->score, q->op == SRV_ZOP_DIFF ? 1 : src->weight),
                              q->agg);
        }
    }
    srv_db_unlock(&r);
}

/* Checks the sources' types (WRONGTYPE unless zset, set or missing). Returns 0 or -1. */
static int srv_zop_check(struct srv_client *c, struct srv_zop *q) {
    int64_t now = srv_now_ms();
    for (int i = 0; i < q->nsrc; i++) {
        const struct srv_arg *a = &c->argv[q->src[i].argi];
        struct srv_db_ref r;
        srv_db_lock(&r, a->p, a->len);
        struct srv_obj *o = srv_db_find(&r, now);
        q->src[i].type = o ? o->type : -1;
        q->src[i].card = !o                         ? 0
                         : o->type == SRV_TYPE_ZSET ? ((struct srv_zset *)o->payload)->length
                         : o->type == SRV_TYPE_SET  ? srv__set_card(o->payload)
                                                    : 0;
        srv_db_unlock(&r);
        if (!o) /* Redis reads the sources with lookupKeyRead */
            srv_notify(SRV_NOTIFY_KEY_MISS, "keymiss", a->p, a->len);
        if (o && o->type != SRV_TYPE_ZSET && o->type != SRV_TYPE_SET) {
            srv_reply_error(c, SRV_ERR_WRONGTYPE);
            return -1;
        }
    }
    return 0;
}

/* Parses WEIGHTS / AGGREGATE / WITHSCORES / LIMIT from argument j on. Returns 0 or -1. */
static int srv_zop_opts(struct srv_client *c, int j, int store, int card_only, struct srv_zop *q) {
    while (j < c->argc) {
        int remaining = c->argc - j;
        int weighted = q->op != SRV_ZOP_DIFF && !card_only;
        if (weighted && remaining >= q->nsrc + 1 && srv_arg_is(c, j, "weights")) {
            j++;
            for (int i = 0; i < q->nsrc; i++, j++) {
                const struct srv_arg *a = &c->argv[j];
                if (cm_str2d(a->p, a->len, &q->src[i].weight) != 0 || isnan(q->src[i].weight)) {
                    srv_reply_error(c, "ERR weight value is not a float");
                    return -1;
                }
            }
        } else if (weighted && remaining >= 2 && srv_arg_is(c, j, "aggregate")) {
            if (srv_arg_is(c, j + 1, "sum"))
                q->agg = SRV_ZAGG_SUM;
            else if (srv_arg_is(c, j + 1, "min"))
                q->agg = SRV_ZAGG_MIN;
            else if (srv_arg_is(c, j + 1, "max"))
                q->agg = SRV_ZAGG_MAX;
            else {
                srv_reply_syntax_error(c);
                return -1;
            }
            j += 2;
        } else if (!store && !card_only && srv_arg_is(c, j, "withscores")) {
            q->withscores = 1;
            j++;
        } else if (card_only && remaining >= 2 && srv_arg_is(c, j, "limit")) {
            const char *msg = "ERR LIMIT can't be negative";
            if (srv_arg_ll(c, j + 1, &q->limit, msg) < 0)
                return -1;
            if (q->limit < 0) {
                srv_reply_error(c, msg);
                return -1;
            }
            j += 2;
        } else {
            srv_reply_syntax_error(c);
            return -1;
        }
    }
    return 0;
}

static int srv_zsrc_by_card(const void *a, const void *b) {
    const struct srv_zsrc *x = a, *y = b;
    if (x->card != y->card)
        return x->card < y->card ? -1 : 1;
    return x->argi - y->argi; /* stable */
}

/*
 * The ZUNION family: op, the numkeys argument index (the destination, if store, is argv[1]),
 * store = STORE form, card_only = ZINTERCARD.
 */
static void srv_zop_generic(struct srv_client *c, int op, int numkeys_idx, int store, int card_only,
                            const char *name) {
    if (store && srv__agg_room(c, srv_t_arg_bytes(c, 2)) < 0)
        return;
    long long numkeys;
    if (srv_arg_ll(c, numkeys_idx, &numkeys, NULL) < 0)
        return;
    if (numkeys < 1) {
        srv_reply_errorf(c, "ERR at least 1 input key is needed for '%s' command", name);
        return;
    }
    if (numkeys > c->argc - numkeys_idx - 1) {
        srv_reply_syntax_error(c);
        return;
    }
    struct srv_zop q = {op, SRV_ZAGG_SUM, 0, 0, (int)numkeys, NULL};
    q.src = cm_malloc((size_t)numkeys * sizeof(*q.src));
    for (int i = 0; i < q.nsrc; i++) {
        q.src[i].argi = numkeys_idx + 1 + i;
        q.src[i].weight = 1;
    }
    if (srv_zop_check(c, &q) < 0 ||
        srv_zop_opts(c, numkeys_idx + 1 + q.nsrc, store, card_only, &q) < 0) {
        cm_free(q.src);
        return;
    }
    if (op == SRV_ZOP_INTER)
        qsort(q.src, (size_t)q.nsrc, sizeof(*q.src), srv_zsrc_by_card);
    struct srv_zset *acc = srv_zset_new();
    for (int i = 0; i < q.nsrc && (i == 0 || acc->length || op == SRV_ZOP_UNION); i++)
        srv_zop_apply(c, &q, i, i == 0, acc);
    cm_free(q.src);
    if (card_only) {
        long long n = (long long)acc->length;
        srv_zset_free(acc);
        resp_add_int(&c->out, q.limit && n > q.limit ? q.limit : n);
    } else if (store) {
        resp_add_int(&c->out, srv_zset_store(&c->argv[1], acc, name));
    } else {
        srv_zreply_hdr(c, acc->length, q.withscores);
        for (const struct srv_zn *z = acc->header->lev[0].fwd; z; z = z->lev[0].fwd)
            srv_zreply_elem(c, z, q.withscores);
        srv_zset_free(acc);
    }
}

void srv_zunion_command(struct srv_client *c) {
    srv_zop_generic(c, SRV_ZOP_UNION, 1, 0, 0, "zunion");
}

void srv_zinter_command(struct srv_client *c) {
    srv_zop_generic(c, SRV_ZOP_INTER, 1, 0, 0, "zinter");
}

void srv_zdiff_command(struct srv_client *c) {
    srv_zop_generic(c, SRV_ZOP_DIFF, 1, 0, 0, "zdiff");
}

void srv_zunionstore_command(struct srv_client *c) {
    srv_zop_generic(c, SRV_ZOP_UNION, 2, 1, 0, "zunionstore");
}

void srv_zinterstore_command(struct srv_client *c) {
    srv_zop_generic(c, SRV_ZOP_INTER, 2, 1, 0, "zinterstore");
}

void srv_zdiffstore_command(struct srv_client *c) {
    srv_zop_generic(c, SRV_ZOP_DIFF, 2, 1, 0, "zdiffstore");
}

void srv_zintercard_command(struct srv_client *c) {
    srv_zop_generic(c, SRV_ZOP_INTER, 1, 0, 1, "zintercard");
}

/* ---------------------------------------------------------------- ZMPOP */

void srv_zmpop_command(struct srv_client *c) {
    long long numkeys, count;
    int max;
    if (srv__mpop_args(c, "min", "max", &numkeys, &max, &count) < 0)
        return;
    for (int i = 2; i < 2 + (int)numkeys; i++) {
        struct srv_db_ref r;
        int bad;
        struct srv_obj *o = srv_t_find_at(c, &r, i, SRV_TYPE_ZSET, 0, &bad);
        if (bad)
            return;
        if (!o) {
            srv_db_unlock(&r);
            continue;
        }
        struct srv_zset *zs = o->payload;
        size_t n = (size_t)count < zs->length ? (size_t)count : zs->length;
        resp_add_array_hdr(&c->out, 2);
        resp_add_bulk(&c->out, c->argv[i].p, c->argv[i].len);
        resp_add_array_hdr(&c->out, (long)n);
        for (size_t k = 0; k < n; k++) {
            struct srv_zn *z = max ? zs->tail : zs->header->lev[0].fwd;
            resp_add_array_hdr(&c->out, 2);
            resp_add_bulk(&c->out, z->ele, z->len);
            srv_reply_score(c, z->score);
            srv_zset_delete(zs, z);
        }
        srv_notify(SRV_NOTIFY_ZSET, max ? "zpopmax" : "zpopmin", c->argv[i].p, c->argv[i].len);
        srv_zset_done(&r, o);
        srv_db_unlock(&r);
        return;
    }
    resp_add_null_array(&c->out, c->proto);
}
