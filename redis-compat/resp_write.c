/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RESP reply writer (see resp_write.h). Headers are formatted with a table-driven integer
 * formatter straight into the buffer's free space: no snprintf on the hot path.
 */
#include "common/fmacros.h"

#include "common/cm_mem.h"
#include "redis-compat/resp_write.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char digits2[201] = "0001020304050607080910111213141516171819"
                                 "2021222324252627282930313233343536373839"
                                 "4041424344454647484950515253545556575859"
                                 "6061626364656667686970717273747576777879"
                                 "8081828384858687888990919293949596979899";

/* Decimal text of v into dst (at least 21 bytes, no NUL). Returns the length. Thread-safe. */
size_t resp_ll2str(char *dst, long long v) {
    char tmp[24];
    char *e = tmp + sizeof(tmp), *s = e;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    while (u >= 100) {
        unsigned i = (unsigned)(u % 100) * 2;
        u /= 100;
        *--s = digits2[i + 1];
        *--s = digits2[i];
    }
    if (u < 10) {
        *--s = (char)('0' + u);
    } else {
        unsigned i = (unsigned)u * 2;
        *--s = digits2[i + 1];
        *--s = digits2[i];
    }
    if (v < 0)
        *--s = '-';
    size_t n = (size_t)(e - s);
    memcpy(dst, s, n);
    return n;
}

/* Appends "<c><v>\r\n". */
static inline void add_hdr(struct cm_buf *b, char c, long long v) {
    cm_buf_reserve(b, 24);
    char *d = b->data + b->len;
    d[0] = c;
    size_t n = resp_ll2str(d + 1, v);
    d[n + 1] = '\r';
    d[n + 2] = '\n';
    b->len += n + 3;
}

/* Appends raw bytes. */
void resp_add_raw(struct cm_buf *b, const void *p, size_t n) {
    cm_buf_append(b, p, n);
}

/* "+s\r\n". */
void resp_add_simple(struct cm_buf *b, const char *s) {
    size_t n = strlen(s);
    cm_buf_reserve(b, n + 3);
    char *d = b->data + b->len;
    d[0] = '+';
    memcpy(d + 1, s, n);
    d[n + 1] = '\r';
    d[n + 2] = '\n';
    b->len += n + 3;
}

/* Error codes that Redis and its clients know; words with '_' (Mooncake codes) count too. */
static const char *const known_codes[] = {
    "ERR",        "WRONGTYPE",   "NOAUTH",       "NOPERM",     "WRONGPASS", "NOSCRIPT",
    "BUSY",       "BUSYKEY",     "LOADING",      "MOVED",      "ASK",       "TRYAGAIN",
    "CROSSSLOT",  "CLUSTERDOWN", "EXECABORT",    "OOM",        "READONLY",  "NOREPLICAS",
    "MASTERDOWN", "MISCONF",     "NOPROTO",      "UNBLOCKED",  "NOTBUSY",   "NOGOODSLAVE",
    "NOTLEADER",  "UNKILLABLE",  "NOMASTERLINK", "INVALIDARG", NULL,
};

/* 1 if msg starts with an error code word followed by a space or the end of msg. */
static int starts_with_code(const char *msg, size_t len) {
    size_t i = 0;
    int underscore = 0;
    while (i < len && msg[i] != ' ') {
        char c = msg[i];
        if (c == '_')
            underscore = 1;
        else if (!((c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')))
            return 0;
        i++;
    }
    if (i < 2)
        return 0;
    if (underscore)
        return 1;
    for (const char *const *k = known_codes; *k; k++)
        if (strlen(*k) == i && memcmp(*k, msg, i) == 0)
            return 1;
    return 0;
}

/*
 * Error reply. Rule (Redis addReplyErrorLength plus code detection): a msg starting with '-'
 * already carries its code and is sent as is; a msg whose first word is a known error code
 * (ERR, WRONGTYPE, NOAUTH, ..., or an upper-case word with '_' such as OBJECT_NOT_FOUND) gets
 * just a '-'; any other msg gets "-ERR ". So "EXEC without MULTI" becomes
 * "-ERR EXEC without MULTI". CR and LF inside msg become spaces.
 */
void resp_add_error(struct cm_buf *b, const char *msg, size_t len) {
    cm_buf_reserve(b, len + 7);
    char *d = b->data + b->len;
    size_t o = 0;
    if (len == 0 || msg[0] != '-') {
        d[o++] = '-';
        if (!starts_with_code(msg, len)) {
            memcpy(d + o, "ERR ", 4);
            o += 4;
        }
    }
    for (size_t i = 0; i < len; i++) {
        char c = msg[i];
        d[o++] = (c == '\r' || c == '\n') ? ' ' : c;
    }
    d[o++] = '\r';
    d[o++] = '\n';
    b->len += o;
}

/* Formatted error reply (same rules as resp_add_error). */
void resp_add_errorf(struct cm_buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        resp_add_error(b, small, (size_t)n);
        return;
    }
    char *big = cm_malloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    resp_add_error(b, big, (size_t)n);
    cm_free(big);
}

/* ":v\r\n". */
void resp_add_int(struct cm_buf *b, long long v) {
    add_hdr(b, ':', v);
}

/* "$n\r\n<p>\r\n". */
void resp_add_bulk(struct cm_buf *b, const void *p, size_t n) {
    cm_buf_reserve(b, n + 26);
    char *d = b->data + b->len;
    d[0] = '$';
    size_t h = resp_ll2str(d + 1, (long long)n) + 1;
    d[h++] = '\r';
    d[h++] = '\n';
    if (n)
        memcpy(d + h, p, n);
    h += n;
    d[h++] = '\r';
    d[h++] = '\n';
    b->len += h;
}

/* Bulk string of strlen(s) bytes. */
void resp_add_bulk_cstr(struct cm_buf *b, const char *s) {
    resp_add_bulk(b, s, strlen(s));
}

/* "$n\r\n" only. */
void resp_add_bulk_hdr(struct cm_buf *b, size_t n) {
    add_hdr(b, '$', (long long)n);
}

/* Bulk string of the decimal text of v. */
void resp_add_bulk_ll(struct cm_buf *b, long long v) {
    char tmp[24];
    size_t n = resp_ll2str(tmp, v);
    resp_add_bulk(b, tmp, n);
}

/* Double, Redis 7.0 style: %.17g, and explicit "inf"/"-inf". */
void resp_add_double(struct cm_buf *b, int proto, double d) {
    char tmp[64];
    int n;
    if (isinf(d))
        n = snprintf(tmp, sizeof(tmp), "%s", d > 0 ? "inf" : "-inf");
    else
        n = snprintf(tmp, sizeof(tmp), "%.17g", d);
    if (proto == 3) {
        cm_buf_reserve(b, (size_t)n + 3);
        b->data[b->len++] = ',';
        cm_buf_append(b, tmp, (size_t)n);
        cm_buf_append(b, "\r\n", 2);
    } else {
        resp_add_bulk(b, tmp, (size_t)n);
    }
}

/* Null bulk string. */
void resp_add_null(struct cm_buf *b, int proto) {
    if (proto == 3)
        cm_buf_append(b, "_\r\n", 3);
    else
        cm_buf_append(b, "$-1\r\n", 5);
}

/* Null array. */
void resp_add_null_array(struct cm_buf *b, int proto) {
    if (proto == 3)
        cm_buf_append(b, "_\r\n", 3);
    else
        cm_buf_append(b, "*-1\r\n", 5);
}

/* Array header. */
void resp_add_array_hdr(struct cm_buf *b, long n) {
    add_hdr(b, '*', n);
}

/* Map header (n pairs). */
void resp_add_map_hdr(struct cm_buf *b, int proto, long n) {
    if (proto == 3)
        add_hdr(b, '%', n);
    else
        add_hdr(b, '*', (long long)n * 2);
}

/* Set header. */
void resp_add_set_hdr(struct cm_buf *b, int proto, long n) {
    add_hdr(b, proto == 3 ? '~' : '*', n);
}

/* Boolean. */
void resp_add_bool(struct cm_buf *b, int proto, int v) {
    if (proto == 3)
        cm_buf_append(b, v ? "#t\r\n" : "#f\r\n", 4);
    else
        cm_buf_append(b, v ? ":1\r\n" : ":0\r\n", 4);
}

/* Verbatim string; ext is exactly 3 characters ("txt", "mkd"). */
void resp_add_verbatim(struct cm_buf *b, int proto, const char *p, size_t n, const char *ext) {
    if (proto != 3) {
        resp_add_bulk(b, p, n);
        return;
    }
    add_hdr(b, '=', (long long)n + 4);
    cm_buf_reserve(b, n + 6);
    memcpy(b->data + b->len, ext, 3);
    b->data[b->len + 3] = ':';
    b->len += 4;
    cm_buf_append(b, p, n);
    cm_buf_append(b, "\r\n", 2);
}

/* Push header. */
void resp_add_push_hdr(struct cm_buf *b, int proto, long n) {
    add_hdr(b, proto == 3 ? '>' : '*', n);
}

/* Attribute header; nothing for RESP2. */
void resp_add_attr_hdr(struct cm_buf *b, int proto, long n) {
    if (proto == 3)
        add_hdr(b, '|', n);
}
