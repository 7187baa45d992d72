/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest common subsequence of
 * two string values, by the classic dynamic-programming table, with Redis 7.0's replies, limits
 * (the table may not exceed proto-max-bulk-len) and errors. Runs under the exclusive keyspace
 * lock so both keys are read at one instant.
 */
#include "common/fmacros.h"

#include "server/srv_client.h"
#include "server/srv_cmd.h"
#include "server/srv_db.h"
#include "server/srv_reply.h"
#include "server/srv_server.h"

#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"

#include <stdint.h>
#include <string.h>

struct srv_lcs_opts {
    int getlen, getidx, withmatchlen;
    long long minmatchlen;
};

/* One matching range of the IDX reply: a[a0..a1] equals b[b0..b1]. */
struct srv_lcs_range {
    uint32_t a0, a1, b0, b1;
};

struct srv_lcs_ranges {
    struct srv_lcs_range *v;
    size_t n, cap;
};

/* Parses the options from argv[3]. Returns 0 or -1 (replied). */
static int srv_lcs_parse(struct srv_client *c, struct srv_lcs_opts *o) {
    for (int j = 3; j < c->argc; j++) {
        if (srv_arg_is(c, j, "idx")) {
            o->getidx = 1;
        } else if (srv_arg_is(c, j, "len")) {
            o->getlen = 1;
        } else if (srv_arg_is(c, j, "withmatchlen")) {
            o->withmatchlen = 1;
        } else if (srv_arg_is(c, j, "minmatchlen") && j + 1 < c->argc) {
            if (srv_arg_ll(c, j + 1, &o->minmatchlen, NULL) < 0)
                return -1;
            if (o->minmatchlen < 0)
                o->minmatchlen = 0;
            j++;
        } else {
            srv_reply_syntax_error(c);
            return -1;
        }
    }
    if (o->getlen && o->getidx) {
        srv_reply_error(c, "ERR If you want both the length and indexes, please just use IDX.");
        return -1;
    }
    return 0;
}

/* Fills t[(i)*(bl+1)+j] with the LCS length of a[0..i) and b[0..j). */
static void srv_lcs_table(uint32_t *t, const unsigned char *a, uint32_t al, const unsigned char *b,
                          uint32_t bl) {
    size_t w = (size_t)bl + 1;
    for (uint32_t j = 0; j <= bl; j++)
        t[j] = 0;
    for (uint32_t i = 1; i <= al; i++) {
        uint32_t *row = t + (size_t)i * w, *up = row - w;
        row[0] = 0;
        for (uint32_t j = 1; j <= bl; j++) {
            if (a[i - 1] == b[j - 1])
                row[j] = up[j - 1] + 1;
            else
                row[j] = up[j] > row[j - 1] ? up[j] : row[j - 1];
        }
    }
}

static void srv_lcs_add_range(struct srv_lcs_ranges *rs, const struct srv_lcs_range *r) {
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 16;
        rs->v = cm_realloc(rs->v, rs->cap * sizeof(*rs->v));
    }
    rs->v[rs->n++] = *r;
}

/*
 * Walks the table back from the end: writes the LCS into out (its length bytes) and, when rs is
 * not NULL, the matching ranges of at least minlen bytes, last ranges first.
 */
static void srv_lcs_walk(const uint32_t *t, const unsigned char *a, uint32_t al,
                         const unsigned char *b, uint32_t bl, char *out, long long minlen,
                         struct srv_lcs_ranges *rs) {
    size_t w = (size_t)bl + 1;
    uint32_t i = al, j = bl, k = t[(size_t)al * w + bl];
    struct srv_lcs_range cur = {0};
    int open = 0;
    while (i > 0 && j > 0) {
        int emit = 0;
        if (a[i - 1] == b[j - 1]) {
            out[--k] = (char)a[i - 1];
            if (!open) {
                cur = (struct srv_lcs_range){i - 1, i - 1, j - 1, j - 1};
                open = 1;
            } else { /* a match right after a match extends the range backwards */
                cur.a0--;
                cur.b0--;
            }
            emit = cur.a0 == 0 || cur.b0 == 0;
            i--;
            j--;
        } else {
            if (t[(size_t)(i - 1) * w + j] > t[(size_t)i * w + j - 1])
                i--;
            else
                j--;
            emit = open;
        }
        if (emit) {
            uint32_t len = cur.a1 - cur.a0 + 1;
            if (rs && (minlen == 0 || len >= minlen))
                srv_lcs_add_range(rs, &cur);
            open = 0;
        }
    }
}

static void srv_lcs_reply_idx(struct srv_client *c, const struct srv_lcs_ranges *rs,
                              const struct srv_lcs_opts *o, uint32_t len) {
    resp_add_map_hdr(&c->out, c->proto, 2);
    resp_add_bulk_cstr(&c->out, "matches");
    resp_add_array_hdr(&c->out, (long)rs->n);
    for (size_t i = 0; i < rs->n; i++) {
        const struct srv_lcs_range *r = &rs->v[i];
        resp_add_array_hdr(&c->out, 2 + o->withmatchlen);
        resp_add_array_hdr(&c->out, 2);
        resp_add_int(&c->out, r->a0);
        resp_add_int(&c->out, r->a1);
        resp_add_array_hdr(&c->out, 2);
        resp_add_int(&c->out, r->b0);
        resp_add_int(&c->out, r->b1);
        if (o->withmatchlen)
            resp_add_int(&c->out, (long long)(r->a1 - r->a0 + 1));
    }
    resp_add_bulk_cstr(&c->out, "len");
    resp_add_int(&c->out, len);
}

/* Computes and replies for the two values (a, b may be NULL when al/bl are 0). */
static void srv_lcs_compute(struct srv_client *c, const struct srv_lcs_opts *o,
                            const unsigned char *a, uint32_t al, const unsigned char *b,
                            uint32_t bl) {
    unsigned long long cells = ((unsigned long long)al + 1) * ((unsigned long long)bl + 1);
    if (cells * sizeof(uint32_t) > (unsigned long long)srv_cfg.proto_max_bulk_len) {
        srv_reply_error(c, "ERR Insufficient memory, transient memory for LCS exceeds "
                           "proto-max-bulk-len");
        return;
    }
    uint32_t *t = cm_try_malloc((size_t)cells * sizeof(uint32_t));
    if (!t) {
        srv_reply_error(c, "ERR Insufficient memory, failed allocating transient memory for LCS");
        return;
    }
    srv_lcs_table(t, a, al, b, bl);
    uint32_t len = t[(size_t)al * ((size_t)bl + 1) + bl];
    if (o->getlen && !o->getidx) {
        resp_add_int(&c->out, len);
        cm_free(t);
        return;
    }
    char *out = cm_malloc(len ? len : 1);
    struct srv_lcs_ranges rs = {0};
    srv_lcs_walk(t, a, al, b, bl, out, o->minmatchlen, o->getidx ? &rs : NULL);
    if (o->getidx)
        srv_lcs_reply_idx(c, &rs, o, len);
    else
        resp_add_bulk(&c->out, out, len);
    cm_free(rs.v);
    cm_free(out);
    cm_free(t);
}

void srv_lcs_command(struct srv_client *c) {
    struct srv_obj *v[2] = {NULL, NULL};
    int wrong = 0;
    int64_t now = srv_now_ms();
    for (int k = 0; k < 2; k++) {
        struct srv_db_ref r;
        srv_db_lock(&r, c->argv[1 + k].p, c->argv[1 + k].len);
        struct srv_obj *o = srv_db_find(&r, now);
        if (o && o->type != SRV_TYPE_STRING)
            wrong = 1;
        else if (o)
            srv_obj_ref(o); /* pinned: never modified in place */
        v[k] = o && o->type == SRV_TYPE_STRING ? o : NULL;
        srv_db_unlock(&r);
    }
    struct srv_lcs_opts o = {0};
    if (wrong)
        srv_reply_error(c, "ERR The specified keys must contain string values");
    else if (srv_lcs_parse(c, &o) == 0)
        srv_lcs_compute(
            c, &o, v[0] ? (const unsigned char *)srv_obj_val(v[0]) : NULL, v[0] ? v[0]->vlen : 0,
            v[1] ? (const unsigned char *)srv_obj_val(v[1]) : NULL, v[1] ? v[1]->vlen : 0);
    for (int k = 0; k < 2; k++)
        if (v[k])
            srv_obj_unref(v[k]);
}
