/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RESP request parser: multibulk ('*') and inline requests, with Redis 7.0's framing rules
 * and error texts (networking.c processMultibulkBuffer / processInlineBuffer, sdssplitargs).
 * Behaviours kept on purpose because Redis has them: header lines end at the first '\r' and
 * the byte after it is skipped unchecked; a NUL before that '\r' makes the line
 * unterminated (Redis uses strchr), for inline lines too; the two bytes after a bulk payload are
 * skipped unchecked; an inline line ends at '\n' with an optional '\r' before it.
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "redis-compat/resp.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

enum {
    ST_START = 0, /* nothing parsed yet */
    ST_MB_COUNT,  /* reading "*<count>\r\n" */
    ST_MB_ARGS,   /* reading bulk headers and payloads */
    ST_INLINE,    /* reading an inline line */
    ST_DONE,      /* a request was returned; the next call starts a new one */
    ST_ERROR,     /* sticky protocol error */
};

#define ARGV_INITIAL_MAX 1024         /* Redis preallocates at most this many argv slots */
#define SCAN_DEAD        ((size_t)-1) /* p->scan: the open line holds a NUL, it never ends */

/* Fills l with Redis 7.0's defaults. */
void resp_limits_default(struct resp_limits *l) {
    l->max_bulk_len = (size_t)512 * 1024 * 1024;
    l->max_multibulk_len = INT_MAX;
    l->max_inline_len = 64 * 1024;
}

/* Initialises p; lim NULL means defaults. Not thread-safe. */
void resp_parser_init(struct resp_parser *p, const struct resp_limits *lim) {
    memset(p, 0, sizeof(*p));
    if (lim)
        p->lim = *lim;
    else
        resp_limits_default(&p->lim);
    if (p->lim.max_multibulk_len > INT_MAX)
        p->lim.max_multibulk_len = INT_MAX; /* argc is an int */
    p->bulklen = -1;
}

/* Frees parser-owned storage. */
void resp_parser_fini(struct resp_parser *p) {
    cm_free(p->argv);
    cm_free(p->scratch);
    p->argv = NULL;
    p->scratch = NULL;
    p->argv_cap = 0;
    p->scratch_cap = 0;
    p->argc = 0;
}

/* Starts over on a new request; storage is kept. */
void resp_parser_reset_request(struct resp_parser *p) {
    p->state = ST_START;
    p->argc = 0;
    p->consumed = 0;
    p->errstr = NULL;
    p->want = 0;
    p->inline_base = NULL;
    p->multibulk = 0;
    p->bulklen = -1;
    p->pos = 0;
    p->scan = 0;
}

/*
 * Strict decimal parse with Redis string2ll() rules: optional '-', no '+', no spaces, no
 * leading zeros, at most 20 characters, must fit a long long. Returns 1 on success.
 */
int resp_string2ll(const char *s, size_t len, long long *out) {
    size_t i = 0;
    int neg = 0;
    unsigned long long v;

    if (len == 0 || len >= 21)
        return 0;
    if (len == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    if (s[0] == '-') {
        neg = 1;
        if (++i == len)
            return 0;
    }
    if (s[i] < '1' || s[i] > '9')
        return 0;
    v = (unsigned long long)(s[i++] - '0');
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return 0;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    } else {
        if (v > (unsigned long long)LLONG_MAX)
            return 0;
        *out = (long long)v;
    }
    return 1;
}

static enum resp_result fail(struct resp_parser *p, const char *msg) {
    p->state = ST_ERROR;
    p->errstr = msg;
    p->argc = 0;
    return RESP_ERROR;
}

static void argv_push(struct resp_parser *p, size_t off, size_t len) {
    if (p->argc == p->argv_cap) {
        int cap = p->argv_cap == 0 ? 8 : p->argv_cap > INT_MAX / 2 ? INT_MAX : p->argv_cap * 2;
        p->argv = cm_realloc(p->argv, (size_t)cap * sizeof(*p->argv));
        p->argv_cap = cap;
    }
    p->argv[p->argc].off = off;
    p->argv[p->argc].len = len;
    p->argc++;
}

static void argv_reserve(struct resp_parser *p, long long n) {
    if (n > ARGV_INITIAL_MAX)
        n = ARGV_INITIAL_MAX;
    if (p->argv_cap < n) {
        p->argv = cm_realloc(p->argv, (size_t)n * sizeof(*p->argv));
        p->argv_cap = (int)n;
    }
}

/*
 * Finds the '\r' that ends the header line starting at p->pos the way Redis's strchr does:
 * a NUL before it means "not found". Returns 1 and *cr, or 0 (p->scan remembers progress).
 */
static int find_cr(struct resp_parser *p, const char *buf, size_t len, size_t *cr) {
    if (p->scan == SCAN_DEAD)
        return 0;
    size_t from = p->scan > p->pos ? p->scan : p->pos;
    const char *hit = from < len ? memchr(buf + from, '\r', len - from) : NULL;
    size_t end = hit ? (size_t)(hit - buf) : len;
    if (end > from && memchr(buf + from, '\0', end - from)) {
        p->scan = SCAN_DEAD; /* Redis's strchr stops at the NUL: this line never ends */
        return 0;
    }
    if (!hit) {
        p->scan = len;
        return 0;
    }
    *cr = end;
    return 1;
}

/*
 * Reads the number on a header line of type c ('*' or '$') at p->pos. Fast path for the
 * common "[1-9][0-9]*\r" shape; anything else goes through find_cr + resp_string2ll.
 * Returns 1 with *v and *next (start of the following line), 0 if incomplete (or if the
 * line is too long: *toobig set), -1 if the number is malformed.
 */
static int read_header(struct resp_parser *p, const char *buf, size_t len, long long *v,
                       size_t *next, int *toobig) {
    size_t i = p->pos + 1;
    if (i < len && buf[i] >= '1' && buf[i] <= '9') {
        long long n = buf[i++] - '0';
        size_t stop = i + 15 < len ? i + 15 : len;
        while (i < stop && buf[i] >= '0' && buf[i] <= '9')
            n = n * 10 + (buf[i++] - '0');
        if (i + 1 < len && buf[i] == '\r') {
            *v = n;
            *next = i + 2;
            return 1;
        }
    }
    size_t cr;
    if (!find_cr(p, buf, len, &cr)) {
        *toobig = len - p->pos > p->lim.max_inline_len;
        return 0;
    }
    if (cr + 2 > len)
        return 0; /* the byte after '\r' has not arrived */
    if (!resp_string2ll(buf + p->pos + 1, cr - p->pos - 1, v))
        return -1;
    *next = cr + 2;
    return 1;
}

static enum resp_result parse_count(struct resp_parser *p, const char *buf, size_t len) {
    long long ll = 0;
    size_t next = 0;
    int toobig = 0;
    int rc = read_header(p, buf, len, &ll, &next, &toobig);
    if (rc == 0) {
        if (toobig)
            return fail(p, "ERR Protocol error: too big mbulk count string");
        return RESP_INCOMPLETE;
    }
    if (rc < 0 || ll > (long long)p->lim.max_multibulk_len)
        return fail(p, "ERR Protocol error: invalid multibulk length");
    if (ll > 10 && p->auth_required)
        return fail(p, "ERR Protocol error: unauthenticated multibulk length");
    p->pos = next;
    p->scan = next;
    if (ll <= 0) {
        p->state = ST_DONE;
        p->consumed = next;
        return RESP_OK;
    }
    p->multibulk = ll;
    argv_reserve(p, ll);
    p->state = ST_MB_ARGS;
    return RESP_INCOMPLETE;
}

static enum resp_result parse_args(struct resp_parser *p, const char *buf, size_t len) {
    while (p->multibulk) {
        if (p->bulklen == -1) {
            long long ll = 0;
            size_t next = 0;
            int toobig = 0;
            if (p->pos >= len)
                return RESP_INCOMPLETE;
            int rc = read_header(p, buf, len, &ll, &next, &toobig);
            if (rc == 0) {
                if (toobig)
                    return fail(p, "ERR Protocol error: too big bulk count string");
                return RESP_INCOMPLETE;
            }
            if (buf[p->pos] != '$') {
                char c = buf[p->pos];
                if (c == '\r' || c == '\n')
                    c = ' '; /* Redis maps CR/LF in error replies to spaces */
                snprintf(p->errbuf, sizeof(p->errbuf), "ERR Protocol error: expected '$', got '%c'",
                         c);
                return fail(p, p->errbuf);
            }
            if (rc < 0 || ll < 0 || (unsigned long long)ll > p->lim.max_bulk_len)
                return fail(p, "ERR Protocol error: invalid bulk length");
            if (ll > 16384 && p->auth_required)
                return fail(p, "ERR Protocol error: unauthenticated bulk length");
            p->pos = next;
            p->bulklen = ll;
        }
        size_t need = (size_t)p->bulklen + 2;
        if (len - p->pos < need) {
            p->want = p->pos + need;
            return RESP_INCOMPLETE;
        }
        argv_push(p, p->pos, (size_t)p->bulklen);
        p->pos += need;
        p->scan = p->pos;
        p->bulklen = -1;
        p->multibulk--;
    }
    p->want = 0;
    p->state = ST_DONE;
    p->consumed = p->pos;
    return RESP_OK;
}

static int is_hex(int c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int hex_val(int c) {
    if (c <= '9')
        return c - '0';
    return (c | 0x20) - 'a' + 10;
}

static int is_space(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/*
 * Splits line[0..n) like Redis's sdssplitargs() (a NUL would end the line, as in the C
 * string Redis passes; parse_inline never lets one through). Decoded bytes go to p->scratch, argv
 * offsets point there. Returns 0, or -1 on unbalanced quotes.
 */
static int split_inline(struct resp_parser *p, const char *line, size_t n) {
    const char *nul = memchr(line, '\0', n);
    const char *s = line, *end = nul ? nul : line + n;
    size_t o = 0;
#define CH(q) ((q) < end ? (unsigned char)*(q) : 0)
    if (p->scratch_cap < n + 1) {
        p->scratch = cm_realloc(p->scratch, n + 1);
        p->scratch_cap = n + 1;
    }
    for (;;) {
        while (CH(s) && is_space(CH(s)))
            s++;
        if (!CH(s))
            return 0;
        int inq = 0, insq = 0, done = 0;
        size_t start = o;
        while (!done) {
            int c = CH(s);
            if (inq) {
                if (c == '\\' && CH(s + 1) == 'x' && is_hex(CH(s + 2)) && is_hex(CH(s + 3))) {
                    p->scratch[o++] = (char)(hex_val(CH(s + 2)) * 16 + hex_val(CH(s + 3)));
                    s += 3;
                } else if (c == '\\' && CH(s + 1)) {
                    s++;
                    switch (CH(s)) {
                    case 'n':
                        c = '\n';
                        break;
                    case 'r':
                        c = '\r';
                        break;
                    case 't':
                        c = '\t';
                        break;
                    case 'b':
                        c = '\b';
                        break;
                    case 'a':
                        c = '\a';
                        break;
                    default:
                        c = CH(s);
                        break;
                    }
                    p->scratch[o++] = (char)c;
                } else if (c == '"') {
                    if (CH(s + 1) && !is_space(CH(s + 1)))
                        return -1; /* closing quote must be followed by a space or the end */
                    done = 1;
                } else if (!c) {
                    return -1; /* unterminated quotes */
                } else {
                    p->scratch[o++] = (char)c;
                }
            } else if (insq) {
                if (c == '\\' && CH(s + 1) == '\'') {
                    s++;
                    p->scratch[o++] = '\'';
                } else if (c == '\'') {
                    if (CH(s + 1) && !is_space(CH(s + 1)))
                        return -1;
                    done = 1;
                } else if (!c) {
                    return -1;
                } else {
                    p->scratch[o++] = (char)c;
                }
            } else {
                switch (c) {
                case ' ':
                case '\n':
                case '\r':
                case '\t':
                case '\0':
                    done = 1;
                    break;
                case '"':
                    inq = 1;
                    break;
                case '\'':
                    insq = 1;
                    break;
                default:
                    p->scratch[o++] = (char)c;
                    break;
                }
            }
            if (CH(s))
                s++;
        }
        argv_push(p, start, o - start);
    }
#undef CH
}

static enum resp_result parse_inline(struct resp_parser *p, const char *buf, size_t len) {
    size_t from = p->scan;
    const char *nl = from < len ? memchr(buf + from, '\n', len - from) : NULL;
    size_t end = nl ? (size_t)(nl - buf) : len;
    if (from == SCAN_DEAD) {
        nl = NULL;
    } else if (end > from && memchr(buf + from, '\0', end - from)) {
        nl = NULL; /* Redis's strchr stops at the NUL: the line never ends */
        p->scan = SCAN_DEAD;
    } else if (!nl) {
        p->scan = len;
    }
    if (!nl) {
        if (len > p->lim.max_inline_len)
            return fail(p, "ERR Protocol error: too big inline request");
        return RESP_INCOMPLETE;
    }
    size_t qlen = (size_t)(nl - buf), lf = 1;
    if (qlen > 0 && buf[qlen - 1] == '\r') {
        qlen--;
        lf = 2;
    }
    p->argc = 0;
    if (split_inline(p, buf, qlen) < 0)
        return fail(p, "ERR Protocol error: unbalanced quotes in request");
    p->inline_base = p->scratch;
    p->consumed = qlen + lf;
    p->state = ST_DONE;
    return RESP_OK;
}

/* See resp.h. Hot path: one call per request, no allocation once argv has grown. */
enum resp_result resp_parse_request(struct resp_parser *p, const char *buf, size_t len) {
    p->want = 0;
    switch (p->state) {
    case ST_ERROR:
        return RESP_ERROR;
    case ST_DONE:
        resp_parser_reset_request(p); /* fall through */
    case ST_START:
        if (len == 0)
            return RESP_INCOMPLETE;
        if (buf[0] != '*') {
            p->state = ST_INLINE;
            return parse_inline(p, buf, len);
        }
        p->state = ST_MB_COUNT;
        /* fall through */
    case ST_MB_COUNT: {
        enum resp_result rc = parse_count(p, buf, len);
        if (p->state != ST_MB_ARGS)
            return rc;
        return parse_args(p, buf, len);
    }
    case ST_MB_ARGS:
        return parse_args(p, buf, len);
    case ST_INLINE:
        return parse_inline(p, buf, len);
    }
    return fail(p, "ERR Protocol error: internal parser state");
}
