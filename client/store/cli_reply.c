/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replies of the hot store commands (get replicas, put start / end, batch forms) built in one
 * arena per reply instead of hiredis's one calloc per value and one malloc per string: a
 * 128-key MC.BATCHPUTSTART reply is about 2,300 values, and freeing them one by one cost
 * more than the rest of the call. The values are ordinary redisReply structs, so the parsing
 * code reads them as any reply; only cli__reply_free() may free them (never freeReplyObject).
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"
#include "common/cm_dec.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define CLI_BLK_MIN (4u << 10) /* first block */
#define CLI_BLK_MAX (1u << 20) /* blocks double up to this, unless one value needs more */

/* One arena block. The first block of a reply holds the root value at data[0] and keeps the
 * chain: next lists the later blocks, cur is the block allocations come from. */
struct cli_blk {
    struct cli_blk *next; /* later blocks (first block: the newest) */
    struct cli_blk *cur;  /* first block only: the block being filled */
    size_t used, cap;     /* bytes of data */
    _Alignas(16) char data[];
};

static struct cli_blk *cli_blk_new(size_t need, size_t prev_cap) {
    size_t cap = prev_cap * 2 < CLI_BLK_MIN ? CLI_BLK_MIN : prev_cap * 2;
    cap = cap > CLI_BLK_MAX ? CLI_BLK_MAX : cap;
    cap = cap < need ? need : cap;
    struct cli_blk *b = malloc(sizeof(*b) + cap);
    if (b != NULL) {
        *b = (struct cli_blk){.cur = b, .cap = cap};
    }
    return b;
}

static void cli_blk_chain_free(struct cli_blk *b) {
    while (b != NULL) {
        struct cli_blk *next = b->next;
        free(b);
        b = next;
    }
}

static void *cli_blk_alloc(struct cli_blk *first, size_t n) {
    n = (n + 15) & ~(size_t)15;
    struct cli_blk *c = first->cur;
    if (c->cap - c->used < n) {
        if ((c = cli_blk_new(n, c->cap)) == NULL) {
            return NULL;
        }
        c->next = first->next;
        first->next = c;
        first->cur = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static struct cli_blk *cli_blk_of(const redisReply *root) {
    return (struct cli_blk *)(void *)((char *)root - offsetof(struct cli_blk, data));
}

/* A zeroed value of extra trailing bytes' room in the reply of task, linked into its parent
 * (the root value starts a new arena). NULL when out of memory. */
static redisReply *cli_value(const redisReadTask *task, int type, size_t extra, void **more) {
    struct cli_blk *first;
    if (task->parent == NULL) {
        if ((first = cli_blk_new(sizeof(redisReply) + extra + 32, 0)) == NULL) {
            return NULL;
        }
    } else {
        const redisReadTask *t = task->parent;
        while (t->parent != NULL) {
            t = t->parent;
        }
        first = cli_blk_of(t->obj);
    }
    redisReply *r = cli_blk_alloc(first, sizeof(*r));
    *more = extra > 0 && r != NULL ? cli_blk_alloc(first, extra) : NULL;
    if (r == NULL || (extra > 0 && *more == NULL)) {
        if (task->parent == NULL) {
            cli_blk_chain_free(first);
        }
        return NULL;
    }
    memset(r, 0, sizeof(*r));
    r->type = type;
    if (task->parent != NULL) {
        redisReply *parent = task->parent->obj;
        parent->element[task->idx] = r;
    }
    return r;
}

static void *cli_create_string(const redisReadTask *task, char *str, size_t len) {
    void *buf;
    redisReply *r = cli_value(task, task->type, len + 1, &buf);
    if (r != NULL) {
        memcpy(buf, str, len);
        ((char *)buf)[len] = '\0';
        r->str = buf;
        r->len = len;
    }
    return r;
}

static void *cli_create_array(const redisReadTask *task, int elements) {
    void *buf = NULL;
    size_t n = elements > 0 ? (size_t)elements : 0;
    redisReply *r = cli_value(task, REDIS_REPLY_ARRAY, n * sizeof(redisReply *), &buf);
    if (r != NULL) {
        r->element = buf;
        r->elements = n;
    }
    return r;
}

static void *cli_create_integer(const redisReadTask *task, long long value) {
    void *unused;
    redisReply *r = cli_value(task, REDIS_REPLY_INTEGER, 0, &unused);
    if (r != NULL) {
        r->integer = value;
    }
    return r;
}

static void *cli_create_nil(const redisReadTask *task) {
    void *unused;
    return cli_value(task, REDIS_REPLY_NIL, 0, &unused);
}

static void cli_free_object(void *obj) {
    cli__reply_free(obj);
}

/* Reply functions of the arena; hiredis calls freeObject only for a root value. */
redisReplyObjectFunctions cli__arena_fns = {
    .createString = cli_create_string,
    .createArray = cli_create_array,
    .createInteger = cli_create_integer,
    .createNil = cli_create_nil,
    .freeObject = cli_free_object,
};

/* Frees a reply from cli__cmd_fast() (NULL is fine). Thread-safe. */
void cli__reply_free(redisReply *r) {
    if (r == NULL) {
        return;
    }
    cli_blk_chain_free(cli_blk_of(r));
}

/* ---- a direct RESP2 reader for arena replies --------------------------------------------- */

/*
 * hiredis's reader spends a few hundred instructions per value (task stack, callbacks); a
 * compact 128-key reply has about 900 values. cli__resp_parse reads one complete RESP2 reply
 * straight out of a buffer into the arena instead. It handles the five RESP2 types and nothing
 * else: anything it does not take (a RESP3 type, nesting deeper than CLI_RP_DEPTH, a malformed
 * length) is left to hiredis's reader, which then reports the error as before.
 */
#define CLI_RP_INTS 8 /* longest array whose integers share its allocation */

struct cli_rp {
    const char *p, *end;
    struct cli_blk *first; /* the arena, NULL until the root value */
};

/* cli_rp_new when the current block is full or there is no arena yet (the root value). */
static redisReply *cli_rp_new_slow(struct cli_rp *s, int type, size_t extra, void **more) {
    if (s->first == NULL && (s->first = cli_blk_new(sizeof(redisReply) + extra + 32, 0)) == NULL) {
        return NULL;
    }
    redisReply *r = cli_blk_alloc(s->first, sizeof(*r));
    *more = extra > 0 && r != NULL ? cli_blk_alloc(s->first, extra) : NULL;
    if (r == NULL || (extra > 0 && *more == NULL)) {
        return NULL;
    }
    *r = (redisReply){.type = type};
    return r;
}

/* A zeroed value with extra trailing bytes at *more; the first one is the root. The common
 * case, one bump of the current block, is inline. */
static inline redisReply *cli_rp_new(struct cli_rp *s, int type, size_t extra, void **more) {
    if (s->first != NULL) {
        struct cli_blk *c = s->first->cur;
        size_t need = sizeof(redisReply) + ((extra + 15) & ~(size_t)15);
        if (c->cap - c->used >= need) {
            redisReply *r = (redisReply *)(void *)(c->data + c->used);
            c->used += need;
            *more = (char *)r + sizeof(redisReply);
            *r = (redisReply){.type = type};
            return r;
        }
    }
    return cli_rp_new_slow(s, type, extra, more);
}

/* Parses the decimal at p (n bytes, optional '-'). Returns false when it is not one. */
static bool cli_rp_ll(const char *p, size_t n, long long *v) {
    bool neg = n > 0 && p[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == n || n - i > 18) {
        return false;
    }
    uint64_t x;
    if (cm_dec_parse(p + i, p + n, &x) != n - i) {
        return false;
    }
    *v = neg ? -(long long)x : (long long)x;
    return true;
}

/* Reads the number and CRLF at p (after a type byte), eight digits a word. Returns the byte
 * past the CRLF with the number in *v, or NULL with *rc 1 when the buffer ends first, -1 when
 * it is not a number of up to 18 digits. */
static const char *cli_rp_num_slow(const char *p, const char *end, long long *v, int *rc) {
    bool neg = p < end && *p == '-';
    p += neg;
    uint64_t x;
    size_t n = cm_dec_parse(p, end, &x);
    p += n;
    if (p + 1 >= end) {
        *rc = 1;
        return NULL;
    }
    if (n == 0 || n > 18 || p[0] != '\r' || p[1] != '\n') {
        *rc = -1;
        return NULL;
    }
    *v = neg ? -(long long)x : (long long)x;
    return p + 2;
}

/* cli_rp_num_slow with one digit (a segment index, a type, a count of four) read inline. */
static inline __attribute__((always_inline)) const char *cli_rp_num(const char *p, const char *end,
                                                                    long long *v, int *rc) {
    if (end - p >= 3 && (unsigned char)(p[0] - '0') < 10 && p[1] == '\r' && p[2] == '\n') {
        *v = p[0] - '0';
        return p + 3;
    }
    return cli_rp_num_slow(p, end, v, rc);
}

/* Reads one value into *out. Returns 0, 1 when the buffer ends first, -1 for what it leaves to
 * hiredis (or out of memory). The cursor lives in a local while this value is read (s->p is
 * written back before a nested call and at the end). */
static int cli_rp_value(struct cli_rp *s, redisReply **out, int depth) {
    const char *p = s->p, *end = s->end;
    if (end - p < 3) {
        return 1;
    }
    char t = *p++;
    void *more;
    long long v = 0;
    int rc = 0;
    redisReply *r;
    if (t == '+' || t == '-') {
        const char *cr = p;
        while (cr < end && *cr != '\r') {
            cr++;
        }
        if (cr + 1 >= end) {
            return 1;
        }
        size_t n = (size_t)(cr - p);
        r = cli_rp_new(s, t == '+' ? REDIS_REPLY_STATUS : REDIS_REPLY_ERROR, n + 1, &more);
        if (r == NULL) {
            return -1;
        }
        char *d = more;
        for (size_t i = 0; i < n; i++) { /* mostly "OK": shorter than a call to memcpy */
            d[i] = p[i];
        }
        d[n] = '\0';
        r->str = more;
        r->len = n;
        s->p = cr + 2;
        *out = r;
        return 0;
    }
    if (t != ':' && t != '$' && t != '*') {
        return -1;
    }
    if ((p = cli_rp_num(p, end, &v, &rc)) == NULL) {
        return rc;
    }
    if (t == ':') {
        if ((r = cli_rp_new(s, REDIS_REPLY_INTEGER, 0, &more)) == NULL) {
            return -1;
        }
        r->integer = v;
    } else if (v == -1) {
        if ((r = cli_rp_new(s, REDIS_REPLY_NIL, 0, &more)) == NULL) {
            return -1;
        }
    } else if (v < -1 || v > INT32_MAX || (t == '*' && depth >= CLI_RP_DEPTH)) {
        return -1;
    } else if (t == '$') {
        if (end - p < v + 2) {
            return 1;
        }
        if (p[v] != '\r' || p[v + 1] != '\n' ||
            (r = cli_rp_new(s, REDIS_REPLY_STRING, (size_t)v + 1, &more)) == NULL) {
            return -1;
        }
        memcpy(more, p, (size_t)v);
        ((char *)more)[v] = '\0';
        r->str = more;
        r->len = (size_t)v;
        p += v + 2;
    } else {
        /* A short array that starts with an integer (a compact replica element: four or six
         * of them) gets its integer values in its own bump: one allocation, not one each. */
        size_t nv = v > 0 && v <= CLI_RP_INTS && end - p >= 1 && *p == ':' ? (size_t)v : 0;
        size_t ptrs = ((size_t)v * sizeof(redisReply *) + 15) & ~(size_t)15;
        r = cli_rp_new(s, REDIS_REPLY_ARRAY, ptrs + nv * sizeof(redisReply), &more);
        if (r == NULL) {
            return -1;
        }
        redisReply **el = more;
        redisReply *vals = nv > 0 ? (redisReply *)(void *)((char *)more + ptrs) : NULL;
        r->element = el;
        r->elements = (size_t)v;
        for (long long i = 0; i < v; i++) {
            if (end - p >= 3 && *p == ':') { /* an integer, without a call of its own */
                long long x = 0;
                if ((p = cli_rp_num(p + 1, end, &x, &rc)) == NULL) {
                    return rc;
                }
                redisReply *e =
                    vals != NULL ? &vals[i] : cli_rp_new(s, REDIS_REPLY_INTEGER, 0, &more);
                if (e == NULL) {
                    return -1;
                }
                *e = (redisReply){.type = REDIS_REPLY_INTEGER, .integer = x};
                el[i] = e;
            } else {
                s->p = p;
                if ((rc = cli_rp_value(s, &el[i], depth + 1)) != 0) {
                    return rc;
                }
                p = s->p;
            }
        }
    }
    s->p = p;
    *out = r;
    return 0;
}

/* Parses one complete RESP2 reply at p (n bytes) into a new arena (*out, freed with
 * cli__reply_free). Returns the bytes it took, 0 when the reply is not complete yet, or -1 when
 * hiredis's reader should read it (a type or shape this reader leaves alone; out of memory).
 * Thread-safe. */
ssize_t cli__resp_parse(const char *p, size_t n, redisReply **out) {
    struct cli_rp s = {p, p + n, NULL};
    redisReply *r = NULL;
    int rc = cli_rp_value(&s, &r, 0);
    if (rc != 0) {
        cli_blk_chain_free(s.first);
        return rc > 0 ? 0 : -1;
    }
    *out = r;
    return s.p - p;
}

/* Starts a scan of a new reply. */
void cli__resp_scan_init(struct cli_rscan *sc) {
    memset(sc, 0, sizeof(*sc));
    sc->left[0] = 1;
}

/*
 * Finds where the reply that starts at buf ends, resuming where the previous call on the same
 * bytes (now n of them) stopped, so a reply that arrives in several reads is scanned once.
 * Returns 1 when it is complete (its length in sc->off), 0 when more bytes are needed, -1 for
 * what cli__resp_parse leaves to hiredis.
 */
int cli__resp_scan(struct cli_rscan *sc, const char *buf, size_t n) {
    for (;;) {
        while (sc->left[sc->depth] == 0) {
            if (sc->depth == 0) {
                return 1;
            }
            sc->depth--;
        }
        const char *p = buf + sc->off, *end = buf + n, *cr = p + 1;
        if (end - p < 3) {
            return 0;
        }
        while (cr < end && *cr != '\r') {
            cr++;
        }
        if (cr + 1 >= end) {
            return 0;
        }
        long long v = 0;
        size_t hdr = (size_t)(cr + 2 - p);
        switch (*p) {
        case '+':
        case '-':
        case ':':
            break;
        case '$':
            if (!cli_rp_ll(p + 1, (size_t)(cr - p - 1), &v) || v < -1) {
                return -1;
            }
            if (v >= 0 && (size_t)(end - p) < hdr + (size_t)v + 2) {
                return 0;
            }
            hdr += v >= 0 ? (size_t)v + 2 : 0;
            break;
        case '*':
            if (!cli_rp_ll(p + 1, (size_t)(cr - p - 1), &v) || v < -1 || v > INT32_MAX) {
                return -1;
            }
            break;
        default:
            return -1;
        }
        sc->off += hdr;
        sc->left[sc->depth]--;
        if (*p == '*' && v > 0) {
            if (sc->depth + 1 >= CLI_RP_DEPTH) {
                return -1;
            }
            sc->left[++sc->depth] = v;
        }
    }
}
