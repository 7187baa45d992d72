/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compact replies of the hot store commands (MC.REPLYFORMAT COMPACT, asked for on every main
 * master connection; docs/store.md "Compact replies"): [elements, segment table], where a
 * replica is four integers (segment index, type, addr, size) and each distinct segment's name,
 * endpoint, protocol and descriptor blob come once in the table. The table also caches, for
 * the length of one reply, whether a segment is the store's own and its opened peer, so a
 * 128-key batch looks a segment up once instead of 128 times.
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool cli_is_str(const redisReply *v) {
    return v != NULL && (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS);
}

/* Opens compact reply r: checks its outer shape and segment table, sets c->elems to its first
 * element (the key's element, or the array of per-key elements of a batch form). Returns 0,
 * -ENOMEM or -CRESCENT_STORE_ERPC_FAIL. The caller closes c with cli__creply_close(). */
int cli__creply_open(const redisReply *r, struct cli_creply *c) {
    memset(c, 0, sizeof(*c));
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[1]->type != REDIS_REPLY_ARRAY) {
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: malformed compact reply");
    }
    const redisReply *t = r->element[1];
    c->segs = calloc(t->elements ? t->elements : 1, sizeof(*c->segs));
    if (c->segs == NULL) {
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->elements; i++) {
        const redisReply *e = t->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 4) {
            free(c->segs);
            c->segs = NULL;
            return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: malformed compact segment table");
        }
        for (int k = 0; k < 4; k++) {
            if (!cli_is_str(e->element[k])) {
                free(c->segs);
                c->segs = NULL;
                return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: malformed compact segment");
            }
            c->segs[i].f[k] = e->element[k];
        }
        c->segs[i].own = -1;
        c->segs[i].iface = -1;
    }
    c->nsegs = t->elements;
    c->elems = r->element[0];
    return 0;
}

/* Opens the reply r of a batch hot command, compact or full: its per-key elements must be an
 * array of n. Sets *elems to that array (inside c when compact). On failure closes c, frees r
 * and returns the master's error, -ENOMEM or -CRESCENT_STORE_ERPC_FAIL ("<what>: bad reply");
 * else 0, and the caller closes c and frees r. */
int cli__batch_reply_open(struct crescent_store *st, redisReply *r, bool compact, size_t n,
                          const char *what, struct cli_creply *c, const redisReply **elems) {
    memset(c, 0, sizeof(*c));
    *elems = r;
    int err;
    if ((err = cli__reply_err(r)) == 0 && compact && (err = cli__creply_open(r, c)) == 0) {
        *elems = c->elems;
    }
    if (err < 0 || (*elems)->type != REDIS_REPLY_ARRAY || (*elems)->elements != n) {
        cli__creply_close(st, c);
        cli__reply_free(r);
        return err < 0 ? err : cli_fail(CRESCENT_STORE_ERPC_FAIL, "%s: bad reply", what);
    }
    return 0;
}

/* Checks element e of c: an array of off + 4n integers whose segment indexes are in the table.
 * Returns n, the key's error code (e is an error), or -CRESCENT_STORE_ERPC_FAIL. */
int cli__creply_count(const struct cli_creply *c, const redisReply *e, size_t off) {
    int err = cli__reply_err(e);
    if (err < 0) {
        return err;
    }
    if (e->type != REDIS_REPLY_ARRAY || e->elements < off || (e->elements - off) % 4 != 0) {
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: malformed compact element");
    }
    bool ok = true;
    for (size_t i = 0; i < off; i++) {
        ok &= e->element[i]->type == REDIS_REPLY_INTEGER;
    }
    for (size_t i = off; i < e->elements; i += 4) { /* one replica: index in range, 4 integers */
        redisReply *const *v = e->element + i;
        ok &= v[0]->type == REDIS_REPLY_INTEGER && v[1]->type == REDIS_REPLY_INTEGER &&
              v[2]->type == REDIS_REPLY_INTEGER && v[3]->type == REDIS_REPLY_INTEGER &&
              (unsigned long long)v[0]->integer < c->nsegs;
    }
    if (!ok) {
        return cli_fail(CRESCENT_STORE_ERPC_FAIL, "master: malformed compact element");
    }
    return (int)((e->elements - off) / 4);
}

static void cli_copy(char *dst, size_t cap, const redisReply *v) {
    size_t n = v->len < cap - 1 ? v->len : cap - 1;
    memcpy(dst, v->str, n);
    dst[n] = '\0';
}

/* Fills reps (at most max) from the replicas of element e (after off integers); complete is the
 * status the command implies (readable for a get, being written for a put start). desc points
 * into the reply. Returns the count or a negative code as cli__creply_count(). */
int cli__creply_replicas(const struct cli_creply *c, const redisReply *e, size_t off, bool complete,
                         struct cli_replica *reps, size_t max) {
    int n = cli__creply_count(c, e, off);
    for (int i = 0; i < n && (size_t)i < max; i++) {
        redisReply *const *v = e->element + off + 4 * (size_t)i;
        const struct cli_cseg *s = &c->segs[v[0]->integer];
        struct cli_replica *r = &reps[i];
        cli_copy(r->segment, sizeof(r->segment), s->f[0]);
        cli_copy(r->endpoint, sizeof(r->endpoint), s->f[1]);
        cli_copy(r->protocol, sizeof(r->protocol), s->f[2]);
        r->desc = s->f[3]->len > 0 ? s->f[3]->str : NULL;
        r->desc_len = s->f[3]->len;
        r->memory = v[1]->integer == 0; /* MEMORY */
        r->complete = complete;
        r->addr = (uint64_t)v[2]->integer;
        r->size = (uint64_t)v[3]->integer;
    }
    return n < 0 ? n : (size_t)n < max ? n : (int)max;
}

/* Whether segment i of c is one of st's own segments (looked up once per reply). */
bool cli__cseg_own(struct crescent_store *st, struct cli_creply *c, size_t i) {
    struct cli_cseg *s = &c->segs[i];
    if (s->own < 0) {
        char name[256];
        cli_copy(name, sizeof(name), s->f[0]);
        s->own = cli__is_own_segment(st, name) ? 1 : 0;
    }
    return s->own == 1;
}

/* The opened peer of segment i of c (opened on first use; c holds one reference until
 * cli__creply_close), or NULL when it cannot be opened. */
struct cli_peer *cli__cseg_peer(struct crescent_store *st, struct cli_creply *c, size_t i) {
    struct cli_cseg *s = &c->segs[i];
    if (s->peer == NULL && !s->open_failed) {
        struct cli_replica r;
        cli_copy(r.segment, sizeof(r.segment), s->f[0]);
        cli_copy(r.endpoint, sizeof(r.endpoint), s->f[1]);
        cli_copy(r.protocol, sizeof(r.protocol), s->f[2]);
        r.desc = s->f[3]->len > 0 ? s->f[3]->str : NULL;
        r.desc_len = s->f[3]->len;
        if (cli__peer_open(st, &r, &s->peer) < 0) {
            s->peer = NULL;
            s->open_failed = true;
        } else {
            s->iface = cli__iface(s->peer->seg);
        }
    }
    return s->peer;
}

/* Drops the peers c opened (one that saw a failed transfer is forgotten, as cli__peer_put);
 * the table stays readable (cli__creply_replicas). */
void cli__creply_drop_peers(struct crescent_store *st, struct cli_creply *c) {
    for (size_t i = 0; c->segs != NULL && i < c->nsegs; i++) {
        if (c->segs[i].peer != NULL) {
            cli__peer_put(st, c->segs[i].peer, c->segs[i].failed);
            c->segs[i].peer = NULL;
        }
    }
}

/* cli__creply_drop_peers, then frees c's table. */
void cli__creply_close(struct crescent_store *st, struct cli_creply *c) {
    cli__creply_drop_peers(st, c);
    free(c->segs);
    c->segs = NULL;
    c->nsegs = 0;
}
