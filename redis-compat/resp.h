/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RESP request parser and RESP2/RESP3 reply reader: pure, I/O-free feed/get codecs
 * (CONTRIBUTING.md, "Layout"). The request parser follows Redis 7.0's processMultibulkBuffer /
 * processInlineBuffer behaviour byte for byte, including its exact protocol error texts.
 * The reply reader builds a tree of struct resp_reply for tests and client code.
 * See docs/api/resp.md.
 *
 * DESIGN: the request parser never copies multibulk arguments: it returns offsets into the
 * caller's buffer. It remembers how far it got (argument count, bulk length, search position),
 * so a request that arrives in many reads is parsed in time linear in its size, and the
 * caller may realloc or move its buffer between calls as long as the bytes keep their
 * offsets relative to the start of the current request.
 */
#ifndef CRESCENT_REDIS_COMPAT_RESP_H
#define CRESCENT_REDIS_COMPAT_RESP_H

#include <stddef.h>

/* Parser limits; resp_limits_default() gives Redis 7.0's defaults. */
struct resp_limits {
    size_t max_bulk_len;      /* largest bulk argument, bytes (proto-max-bulk-len, 512 MiB) */
    size_t max_multibulk_len; /* largest '*' count (Redis: INT_MAX) */
    size_t max_inline_len;    /* longest unterminated inline / header line (64 KiB) */
};

/* Fills l with Redis's defaults: 512 MiB bulks, INT_MAX elements, 64 KiB inline lines. */
void resp_limits_default(struct resp_limits *l);

/* One argument: bytes [off, off+len) of the request base (see resp_arg_ptr()). */
struct resp_arg {
    size_t off;
    size_t len;
};

/* Result of resp_parse_request(). */
enum resp_result {
    RESP_OK = 0,         /* a complete request is in argc/argv */
    RESP_INCOMPLETE = 1, /* more bytes are needed */
    RESP_ERROR = -1,     /* protocol error in errstr; close the connection after replying */
};

/*
 * Request parser state. Fields marked "out" are results the caller reads; "in" fields may
 * be set by the caller; the rest is private. Not thread-safe: one parser per connection.
 */
struct resp_parser {
    int argc;                /* out: number of arguments (0 = empty command, ignore it) */
    struct resp_arg *argv;   /* out: argc entries, owned by the parser */
    size_t consumed;         /* out (RESP_OK): bytes the request occupied */
    const char *errstr;      /* out (RESP_ERROR): Redis's error text, no '-' and no CRLF */
    size_t want;             /* out (RESP_INCOMPLETE): total bytes the request needs, or 0 */
    const char *inline_base; /* out: NULL, or the base of argv offsets for inline requests */
    int auth_required;       /* in: apply Redis's unauthenticated limits (10 args, 16 KiB) */
    /* private */
    int state;
    int argv_cap;
    long long multibulk; /* arguments still expected */
    long long bulklen;   /* length of the bulk being read, -1 while reading its header */
    size_t pos;          /* parse position, relative to the request start */
    size_t scan;         /* line-terminator search resumes here */
    char *scratch;       /* unescaped inline arguments */
    size_t scratch_cap;
    struct resp_limits lim;
    char errbuf[64];
};

/* Initialises p with limits lim (NULL: defaults). No allocation until the first request. */
void resp_parser_init(struct resp_parser *p, const struct resp_limits *lim);

/* Frees the argv and scratch storage. p may be re-initialised afterwards. */
void resp_parser_fini(struct resp_parser *p);

/*
 * Parses the next request from buf[0..len), where buf starts at the first byte of the
 * current, not yet consumed request (the caller may pass querybuf + qb_pos instead of
 * moving memory). Returns:
 *  - RESP_OK: p->argc / p->argv describe the request, p->consumed bytes belong to it. The
 *    next call starts a new request automatically (no reset needed), so the caller must
 *    then pass the buffer starting p->consumed bytes further. Argument bytes are at
 *    resp_arg_ptr(p, buf, i): inside buf for multibulk requests, inside parser storage for
 *    inline requests (their quotes and escapes are decoded). argv stays valid until the next
 *    call to any resp_parser_* function.
 *  - RESP_INCOMPLETE: call again with the same bytes plus more; p->want, when non-zero, is
 *    the total size the request needs (use it to pre-size the buffer for big bulks).
 *  - RESP_ERROR: p->errstr holds Redis's reply text, e.g. "ERR Protocol error: invalid bulk
 *    length". The error is sticky until resp_parser_reset_request(); reply and close.
 * Multibulk counts <= 0 give RESP_OK with argc 0, as does an empty inline line.
 * Allocates only when argv or the inline scratch must grow (aborts on OOM). Not thread-safe.
 */
enum resp_result resp_parse_request(struct resp_parser *p, const char *buf, size_t len);

/* Forgets the current request (also clears a sticky error). Keeps allocated storage. */
void resp_parser_reset_request(struct resp_parser *p);

/* Pointer to argument i of the request just parsed from buf. */
static inline const char *resp_arg_ptr(const struct resp_parser *p, const char *buf, int i) {
    return (p->inline_base ? p->inline_base : buf) + p->argv[i].off;
}

/* Redis's string2ll(): strict decimal long long (no '+', spaces or leading zeros). 1 = ok. */
int resp_string2ll(const char *s, size_t len, long long *out);

/* ------------------------------------------------------------------------------------------ */
/* Reply reader (RESP2 + RESP3)                                                               */
/* ------------------------------------------------------------------------------------------ */

/* Reply types. */
enum resp_type {
    RESP_REPLY_STRING = 1, /* '+' simple string */
    RESP_REPLY_ERROR,      /* '-' simple error */
    RESP_REPLY_INTEGER,    /* ':' */
    RESP_REPLY_BULK,       /* '$' */
    RESP_REPLY_ARRAY,      /* '*' */
    RESP_REPLY_NIL,        /* '_', '$-1', '*-1' (prefix says which) */
    RESP_REPLY_DOUBLE,     /* ',' */
    RESP_REPLY_BOOL,       /* '#' */
    RESP_REPLY_BLOB_ERROR, /* '!' */
    RESP_REPLY_VERBATIM,   /* '=' */
    RESP_REPLY_BIGNUM,     /* '(' */
    RESP_REPLY_MAP,        /* '%': elements are key, value, key, value, ... */
    RESP_REPLY_SET,        /* '~' */
    RESP_REPLY_PUSH,       /* '>' */
    RESP_REPLY_ATTR,       /* '|': returned as its own reply, elements as for MAP */
};

/* One reply node; aggregates own their elements array. */
struct resp_reply {
    enum resp_type type;
    char prefix;                 /* the type byte on the wire: '+', '$', '_', '*', ... */
    char vtype[4];               /* VERBATIM: format, e.g. "txt" */
    long long integer;           /* INTEGER; BOOL (0 or 1) */
    double dval;                 /* DOUBLE */
    char *str;                   /* string types, DOUBLE and BIGNUM text; NUL-terminated */
    size_t len;                  /* bytes in str (VERBATIM: without the "txt:" prefix) */
    struct resp_reply *elements; /* aggregates: n entries (a MAP/ATTR with k pairs has 2k) */
    size_t n;
};

/* Reader state: private; use the functions. Not thread-safe. */
struct resp_reader {
    char *buf;
    size_t len, cap, pos, scan;
    int err;
    char errstr[128];
    struct resp_reply *root;
    struct resp_reader_frame {
        struct resp_reply *agg;
        size_t expected;
    } * stack;
    int depth, stack_cap, max_depth;
    size_t max_bulk_len;
};

/* Initialises r (nesting limit 1024, bulk limit 512 MiB). No allocation. */
void resp_reader_init(struct resp_reader *r);

/* Frees buffered bytes and any partial reply. */
void resp_reader_fini(struct resp_reader *r);

/*
 * Appends n bytes of reply stream (copied). Returns 0, or the sticky negative error of an
 * earlier protocol violation (-CM_EPROTOCOL). Aborts on OOM.
 */
int resp_reader_feed(struct resp_reader *r, const void *buf, size_t n);

/*
 * Extracts the next complete reply. Returns 1 and stores it in *out (caller frees with
 * resp_reply_free()), 0 when more bytes are needed (*out = NULL), or -CM_EPROTOCOL on a
 * protocol violation, with r->errstr describing it; the error is sticky.
 */
int resp_reader_get(struct resp_reader *r, struct resp_reply **out);

/* Frees a reply returned by resp_reader_get() and everything under it. NULL is fine. */
void resp_reply_free(struct resp_reply *rep);

#endif
