/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RESP2/RESP3 reply reader: bytes in (resp_reader_feed), reply trees out (resp_reader_get).
 * Each element is parsed atomically (its whole line, or header + payload, must be buffered);
 * partial aggregates are kept on an explicit stack, so nesting costs no C recursion and a
 * reply split over many feeds is parsed once. Element arrays grow as elements arrive, so a
 * hostile count cannot make the reader allocate more than the input justifies.
 */
#include "common/fmacros.h"

#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "redis-compat/resp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READER_MAX_DEPTH 1024

/* Initialises r with default limits. */
void resp_reader_init(struct resp_reader *r) {
    memset(r, 0, sizeof(*r));
    r->max_depth = READER_MAX_DEPTH;
    r->max_bulk_len = (size_t)512 * 1024 * 1024;
}

static void reply_clear(struct resp_reply *rep) {
    cm_free(rep->str);
    for (size_t i = 0; i < rep->n; i++)
        reply_clear(&rep->elements[i]);
    cm_free(rep->elements);
}

/* Frees rep and its children. */
void resp_reply_free(struct resp_reply *rep) {
    if (!rep)
        return;
    reply_clear(rep);
    cm_free(rep);
}

/* Frees everything r holds. */
void resp_reader_fini(struct resp_reader *r) {
    cm_free(r->buf);
    resp_reply_free(r->root);
    cm_free(r->stack);
    r->buf = NULL;
    r->root = NULL;
    r->stack = NULL;
    r->len = r->cap = r->pos = r->scan = 0;
    r->depth = r->stack_cap = 0;
}

static int reader_fail(struct resp_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int reader_fail(struct resp_reader *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->errstr, sizeof(r->errstr), fmt, ap);
    va_end(ap);
    r->err = -CM_EPROTOCOL;
    return r->err;
}

/* Copies bytes in; compacts consumed bytes first when that frees at least half the buffer. */
int resp_reader_feed(struct resp_reader *r, const void *buf, size_t n) {
    if (r->err)
        return r->err;
    if (r->pos > 0 && (r->pos == r->len || r->pos >= r->cap / 2)) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->scan = r->scan > r->pos ? r->scan - r->pos : 0;
        r->pos = 0;
    }
    if (r->cap - r->len < n) {
        size_t cap = r->cap ? r->cap : 1024;
        while (cap - r->len < n)
            cap *= 2;
        r->buf = cm_realloc(r->buf, cap);
        r->cap = cap;
    }
    if (n)
        memcpy(r->buf + r->len, buf, n);
    r->len += n;
    return 0;
}

/* Finds "\r\n" of the line at r->pos; returns 1 with *eol (index of '\r'), 0 if incomplete. */
static int find_eol(struct resp_reader *r, size_t *eol) {
    size_t from = r->scan > r->pos ? r->scan : r->pos;
    while (from < r->len) {
        const char *cr = memchr(r->buf + from, '\r', r->len - from);
        if (!cr)
            break;
        size_t i = (size_t)(cr - r->buf);
        if (i + 1 >= r->len) {
            r->scan = i;
            return 0;
        }
        if (r->buf[i + 1] == '\n') {
            *eol = i;
            return 1;
        }
        from = i + 1;
    }
    r->scan = r->len;
    return 0;
}

static char *dup_bytes(const char *s, size_t n) {
    char *d = cm_malloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Slot for the next element: the root or the next entry of the innermost aggregate. */
static struct resp_reply *next_slot(struct resp_reader *r) {
    if (r->depth == 0) {
        r->root = cm_calloc(1, sizeof(*r->root));
        return r->root;
    }
    struct resp_reply *agg = r->stack[r->depth - 1].agg;
    size_t cap = agg->n < 8 ? 8 : agg->n;
    if (agg->n == 0 || (agg->n >= 8 && (agg->n & (agg->n - 1)) == 0)) {
        /* capacity is 8, then powers of two: grow when n reaches one */
        size_t newcap = agg->n == 0 ? 8 : cap * 2;
        size_t exp = r->stack[r->depth - 1].expected;
        if (newcap > exp)
            newcap = exp;
        agg->elements = cm_realloc(agg->elements, newcap * sizeof(*agg->elements));
    }
    struct resp_reply *slot = &agg->elements[agg->n++];
    memset(slot, 0, sizeof(*slot));
    return slot;
}

/* Marks one element complete, popping finished aggregates. Returns 1 when the root is done. */
static int complete(struct resp_reader *r) {
    while (r->depth > 0) {
        struct resp_reader_frame *f = &r->stack[r->depth - 1];
        if (f->agg->n < f->expected)
            return 0;
        r->depth--;
    }
    return 1;
}

static int push_frame(struct resp_reader *r, struct resp_reply *agg, size_t expected) {
    if (r->depth >= r->max_depth)
        return reader_fail(r, "Protocol error: nesting deeper than %d", r->max_depth);
    if (r->depth == r->stack_cap) {
        int cap = r->stack_cap ? r->stack_cap * 2 : 8;
        r->stack = cm_realloc(r->stack, (size_t)cap * sizeof(*r->stack));
        r->stack_cap = cap;
    }
    r->stack[r->depth].agg = agg;
    r->stack[r->depth].expected = expected;
    r->depth++;
    return 0;
}

static enum resp_type agg_type(char c) {
    switch (c) {
    case '%':
        return RESP_REPLY_MAP;
    case '~':
        return RESP_REPLY_SET;
    case '>':
        return RESP_REPLY_PUSH;
    case '|':
        return RESP_REPLY_ATTR;
    default:
        return RESP_REPLY_ARRAY;
    }
}

static int parse_line_item(struct resp_reader *r, struct resp_reply *s, char t, const char *p,
                           size_t n) {
    s->prefix = t;
    switch (t) {
    case '+':
    case '-':
        s->type = t == '+' ? RESP_REPLY_STRING : RESP_REPLY_ERROR;
        s->str = dup_bytes(p, n);
        s->len = n;
        return 0;
    case ':':
        s->type = RESP_REPLY_INTEGER;
        if (!resp_string2ll(p, n, &s->integer))
            return reader_fail(r, "Protocol error: bad integer value");
        return 0;
    case '_':
        s->type = RESP_REPLY_NIL;
        if (n != 0)
            return reader_fail(r, "Protocol error: bad nil value");
        return 0;
    case '#':
        s->type = RESP_REPLY_BOOL;
        if (n != 1 || (p[0] != 't' && p[0] != 'f'))
            return reader_fail(r, "Protocol error: bad bool value");
        s->integer = p[0] == 't';
        return 0;
    case ',': {
        s->type = RESP_REPLY_DOUBLE;
        s->str = dup_bytes(p, n);
        s->len = n;
        char *end;
        s->dval = strtod(s->str, &end);
        if (n == 0 || end != s->str + n || memchr(p, '\0', n))
            return reader_fail(r, "Protocol error: bad double value");
        return 0;
    }
    case '(':
        s->type = RESP_REPLY_BIGNUM;
        for (size_t i = 0; i < n; i++)
            if (!((p[i] >= '0' && p[i] <= '9') || (i == 0 && p[i] == '-' && n > 1)))
                return reader_fail(r, "Protocol error: bad big number");
        if (n == 0)
            return reader_fail(r, "Protocol error: bad big number");
        s->str = dup_bytes(p, n);
        s->len = n;
        return 0;
    }
    return reader_fail(r, "Protocol error: invalid type byte 0x%02x", (unsigned char)t);
}

/*
 * Parses one element at r->pos into a new slot. Returns 1 when an element (or a whole
 * empty aggregate) completed, 2 when an aggregate was opened, 0 if incomplete, < 0 on error.
 */
static int parse_one(struct resp_reader *r) {
    size_t eol;
    if (!find_eol(r, &eol))
        return 0;
    char t = r->buf[r->pos];
    const char *p = r->buf + r->pos + 1;
    size_t n = eol - r->pos - 1;
    long long ll = 0;

    if (t == '$' || t == '!' || t == '=') {
        if (!resp_string2ll(p, n, &ll) || ll < -1 || (ll == -1 && t != '$') ||
            (ll > 0 && (unsigned long long)ll > r->max_bulk_len))
            return reader_fail(r, "Protocol error: bad bulk length");
        if (ll >= 0 && r->len - (eol + 2) < (size_t)ll + 2)
            return 0;
        struct resp_reply *s = next_slot(r);
        s->prefix = t;
        if (ll == -1) {
            s->type = RESP_REPLY_NIL;
            r->pos = eol + 2;
            r->scan = r->pos;
            return 1;
        }
        const char *d = r->buf + eol + 2;
        if (d[ll] != '\r' || d[ll + 1] != '\n')
            return reader_fail(r, "Protocol error: bulk payload not followed by CRLF");
        if (t == '=') {
            if (ll < 4 || d[3] != ':')
                return reader_fail(r, "Protocol error: bad verbatim string");
            s->type = RESP_REPLY_VERBATIM;
            memcpy(s->vtype, d, 3);
            s->str = dup_bytes(d + 4, (size_t)ll - 4);
            s->len = (size_t)ll - 4;
        } else {
            s->type = t == '$' ? RESP_REPLY_BULK : RESP_REPLY_BLOB_ERROR;
            s->str = dup_bytes(d, (size_t)ll);
            s->len = (size_t)ll;
        }
        r->pos = eol + 2 + (size_t)ll + 2;
        r->scan = r->pos;
        return 1;
    }
    if (t == '*' || t == '%' || t == '~' || t == '>' || t == '|') {
        if (!resp_string2ll(p, n, &ll) || ll < -1 || (ll == -1 && t != '*') || ll > (1LL << 40))
            return reader_fail(r, "Protocol error: bad aggregate length");
        struct resp_reply *s = next_slot(r);
        s->prefix = t;
        r->pos = eol + 2;
        r->scan = r->pos;
        if (ll == -1) {
            s->type = RESP_REPLY_NIL;
            return 1;
        }
        s->type = agg_type(t);
        if (ll == 0)
            return 1;
        size_t expected = (size_t)ll * ((t == '%' || t == '|') ? 2 : 1);
        int rc = push_frame(r, s, expected);
        return rc < 0 ? rc : 2;
    }
    struct resp_reply *s = next_slot(r);
    int rc = parse_line_item(r, s, t, p, n);
    if (rc < 0)
        return rc;
    r->pos = eol + 2;
    r->scan = r->pos;
    return 1;
}

/* See resp.h. */
int resp_reader_get(struct resp_reader *r, struct resp_reply **out) {
    *out = NULL;
    if (r->err)
        return r->err;
    for (;;) {
        if (r->pos >= r->len)
            return 0;
        int rc = parse_one(r);
        if (rc <= 0)
            return rc;
        if (rc == 1 && complete(r)) {
            *out = r->root;
            r->root = NULL;
            return 1;
        }
    }
}
