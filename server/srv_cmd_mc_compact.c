/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compact reply form of the hot store commands (MC.(BATCH)GETREPLICAS, MC.(BATCH)PUTSTART,
 * MC.(BATCH)UPSERTSTART), chosen per connection with MC.REPLYFORMAT COMPACT (the store library
 * does so on every connection it opens). A replica is four integers (segment index, type,
 * addr, size) instead of an 8-field map, and each distinct segment's name, endpoint, protocol
 * and descriptor blob is sent once per reply, in a table at its end: a 128-key batch reply
 * shrinks from ~2,900 RESP values to ~900, and the segment descriptor is written once, not
 * 128 times. Wire form: docs/store.md, "Compact replies".
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_mc.h"
#include "server/srv_reply.h"

#include "common/cm_dec.h"
#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"

#include <string.h>

void srv_mc_replyformat_command(struct srv_client *c) {
    if (srv_arg_is(c, 1, "compact")) {
        c->flags |= SRV_CLIENT_MC_COMPACT;
    } else if (srv_arg_is(c, 1, "full")) {
        c->flags &= ~SRV_CLIENT_MC_COMPACT;
    } else {
        srv_reply_syntax_error(c);
        return;
    }
    srv_reply_ok(c);
}

/* Whether c asked for compact replies (MC.REPLYFORMAT COMPACT). */
bool srv_mc_compact(const struct srv_client *c) {
    return (c->flags & SRV_CLIENT_MC_COMPACT) != 0;
}

void srv_mc_segtab_init(struct srv_mc_segtab *t) {
    t->e = t->local;
    t->n = 0;
    t->cap = SRV_MC_SEGTAB_LOCAL;
    t->last = 0;
}

static bool srv_mc_streq(const char *a, const char *b) {
    return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

/* Whether entry e stands for d's segment: the same seg_gen (equal only while name, endpoint,
 * protocol and descriptor are all the same), or for LOCAL_DISK replicas, which have no
 * seg_gen (0), the same name, endpoint and protocol. */
static bool srv_mc_segref_is(const struct srv_mc_segref *e, const struct pool_replica_desc *d) {
    if (d->seg_gen != 0 || e->gen != 0)
        return e->gen == d->seg_gen;
    return e->desc_len == d->seg_desc_len && srv_mc_streq(e->segment, d->segment) &&
           srv_mc_streq(e->endpoint, d->endpoint) && srv_mc_streq(e->protocol, d->protocol);
}

/* Index of d's segment in t, added when new. */
static size_t srv_mc_segtab_index(struct srv_mc_segtab *t, const struct pool_replica_desc *d) {
    if (t->last < t->n && srv_mc_segref_is(&t->e[t->last], d))
        return t->last;
    for (size_t i = 0; i < t->n; i++) {
        if (srv_mc_segref_is(&t->e[i], d))
            return t->last = i;
    }
    if (t->n == t->cap) {
        size_t cap = 2 * t->cap;
        struct srv_mc_segref *e = cm_malloc(cap * sizeof(*e));
        memcpy(e, t->e, t->n * sizeof(*e));
        if (t->e != t->local)
            cm_free(t->e);
        t->e = e;
        t->cap = cap;
    }
    t->e[t->n] = (struct srv_mc_segref){d->seg_gen,  d->segment,  d->endpoint,
                                        d->protocol, d->seg_desc, d->seg_desc_len};
    return t->last = t->n++;
}

/* Writes ":<v>\r\n"; returns the end. Single digits (segment index, type, promote) are one
 * store, longer values (addresses, sizes) go eight digits a word (cm_dec.h); either may store
 * up to 8 bytes past the end, inside SRV_MC_CBYTES's slack. */
static inline char *srv_mc_cint(char *o, long long v) {
    *o++ = ':';
    if (v >= 0 && v < 10)
        *o++ = (char)('0' + v);
    else
        o += cm_dec_i64(o, (int64_t)v);
    *o++ = '\r';
    *o++ = '\n';
    return o;
}

/* Writes "*<n>\r\n"; returns the end. */
static char *srv_mc_carr(char *o, long long n) {
    *o++ = '*';
    o += cm_dec_i64(o, (int64_t)n);
    *o++ = '\r';
    *o++ = '\n';
    return o;
}

/* Writes the four integers of each of d[0..n): segment index, type, addr, size. */
static char *srv_mc_creplicas(char *o, struct srv_mc_segtab *t, const struct pool_replica_desc *d,
                              size_t n) {
    for (size_t i = 0; i < n; i++) {
        o = srv_mc_cint(o, (long long)srv_mc_segtab_index(t, &d[i]));
        o = srv_mc_cint(o, (long long)d[i].type);
        o = srv_mc_cint(o, (long long)d[i].addr);
        o = srv_mc_cint(o, (long long)d[i].size);
    }
    return o;
}

/* Each replica takes at most 4 integers of 23 bytes; the header and lease 2 more; the last
 * integer may store 8 bytes past its end (cm_dec_i64), inside the 32 spare bytes. */
#define SRV_MC_CBYTES(n) (32 + (2 + 4 * (n)) * 24)

void srv_mc_compact_get(struct srv_client *c, struct srv_mc_segtab *t, int64_t lease_ttl_ms,
                        const struct pool_replica_desc *d, size_t n, int promote) {
    cm_buf_reserve(&c->out, SRV_MC_CBYTES(n));
    char *o = c->out.data + c->out.len;
    o = srv_mc_carr(o, (long long)(2 + 4 * n));
    o = srv_mc_cint(o, lease_ttl_ms);
    o = srv_mc_cint(o, promote != 0);
    o = srv_mc_creplicas(o, t, d, n);
    c->out.len = (size_t)(o - c->out.data);
}

void srv_mc_compact_put(struct srv_client *c, struct srv_mc_segtab *t,
                        const struct pool_replica_desc *d, size_t n) {
    cm_buf_reserve(&c->out, SRV_MC_CBYTES(n));
    char *o = c->out.data + c->out.len;
    o = srv_mc_carr(o, (long long)(4 * n));
    o = srv_mc_creplicas(o, t, d, n);
    c->out.len = (size_t)(o - c->out.data);
}

static void srv_mc_cstr(struct srv_client *c, const void *p, size_t n) {
    resp_add_bulk(&c->out, p != NULL ? p : "", p != NULL ? n : 0);
}

void srv_mc_segtab_write(struct srv_client *c, struct srv_mc_segtab *t) {
    resp_add_array_hdr(&c->out, (long)t->n);
    for (size_t i = 0; i < t->n; i++) {
        const struct srv_mc_segref *s = &t->e[i];
        resp_add_array_hdr(&c->out, 4);
        srv_mc_cstr(c, s->segment, s->segment != NULL ? strlen(s->segment) : 0);
        srv_mc_cstr(c, s->endpoint, s->endpoint != NULL ? strlen(s->endpoint) : 0);
        srv_mc_cstr(c, s->protocol, s->protocol != NULL ? strlen(s->protocol) : 0);
        srv_mc_cstr(c, s->desc, s->desc_len);
    }
    if (t->e != t->local)
        cm_free(t->e);
    srv_mc_segtab_init(t);
}
