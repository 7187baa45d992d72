/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the RESP request parser: framing, byte-by-byte splitting, inline quoting,
 * every protocol error text, limits, binary payloads and a long pipeline.
 */
#include "common/fmacros.h"

#include "common/cm_buf.h"
#include "common/cm_mem.h"
#include "redis-compat/resp.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* A parsed request flattened to "argc|arg0|arg1|..." (binary bytes escaped as \xHH). */
static void render(const struct resp_parser *p, const char *buf, struct cm_buf *out) {
    cm_buf_appendf(out, "%d", p->argc);
    for (int i = 0; i < p->argc; i++) {
        const char *a = resp_arg_ptr(p, buf, i);
        cm_buf_append(out, "|", 1);
        for (size_t j = 0; j < p->argv[i].len; j++) {
            unsigned char c = (unsigned char)a[j];
            if (c < 32 || c > 126 || c == '|' || c == '\\')
                cm_buf_appendf(out, "\\x%02x", c);
            else
                cm_buf_append(out, &c, 1);
        }
    }
    cm_buf_append(out, ";", 1);
}

/*
 * Parses the whole stream, feeding it `step` bytes at a time (0 = all at once), into a
 * rendering of every request. Returns the final result (RESP_ERROR stops it) and the
 * error text in *err.
 */
static int parse_stream(const char *data, size_t n, size_t step, struct cm_buf *out,
                        const char **err, const struct resp_limits *lim) {
    static struct resp_parser p; /* static: errstr survives the return */
    resp_parser_fini(&p);
    resp_parser_init(&p, lim);
    struct cm_buf q;
    cm_buf_init(&q);
    size_t fed = 0;
    int rc = RESP_INCOMPLETE;
    *err = NULL;
    while (fed < n || rc == RESP_OK) {
        if (rc != RESP_OK) {
            size_t k = step == 0 || n - fed < step ? n - fed : step;
            cm_buf_append(&q, data + fed, k);
            fed += k;
        }
        rc = resp_parse_request(&p, q.data, q.len);
        if (rc == RESP_OK) {
            render(&p, q.data, out);
            cm_buf_consume(&q, p.consumed);
        } else if (rc == RESP_ERROR) {
            *err = p.errstr;
            break;
        }
    }
    cm_buf_append(out, "", 0);
    cm_buf_append(out, "\0", 1);
    cm_buf_fini(&q);
    return rc;
}

static void expect_parse(const char *data, size_t n, const char *want_render,
                         const char *want_err) {
    struct cm_buf whole;
    cm_buf_init(&whole);
    const char *err;
    parse_stream(data, n, 0, &whole, &err, NULL);
    cr_assert_str_eq(whole.data, want_render, "stream %.*s", (int)n, data);
    if (want_err)
        cr_assert_str_eq(err ? err : "(none)", want_err);
    else
        cr_assert_null(err, "unexpected error %s", err);
    for (size_t step = 1; step <= 7; step++) {
        struct cm_buf part;
        cm_buf_init(&part);
        parse_stream(data, n, step, &part, &err, NULL);
        cr_assert_str_eq(part.data, want_render, "step %zu", step);
        if (want_err)
            cr_assert_str_eq(err ? err : "(none)", want_err, "step %zu", step);
        cm_buf_fini(&part);
    }
    cm_buf_fini(&whole);
}

#define EXPECT(lit, render_, err_) expect_parse(lit, sizeof(lit) - 1, render_, err_)

Test(resp_parse, multibulk_basic) {
    EXPECT("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", "3|SET|key|value;", NULL);
    EXPECT("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", "1|PING;2|ECHO|;", NULL);
    EXPECT("*1\r\n$10\r\n0123456789\r\n", "1|0123456789;", NULL);
}

Test(resp_parse, multibulk_counts_zero_negative_give_empty_commands) {
    EXPECT("*0\r\n*-1\r\n*-5\r\n*1\r\n$1\r\nx\r\n", "0;0;0;1|x;", NULL);
}

Test(resp_parse, binary_payload_with_nul_and_crlf) {
    static const char s[] = "*2\r\n$3\r\nSET\r\n$6\r\na\0\r\nb\0\r\n";
    expect_parse(s, sizeof(s) - 1, "2|SET|a\\x00\\x0d\\x0ab\\x00;", NULL);
}

Test(resp_parse, redis_skips_bytes_after_cr_and_payload_unchecked) {
    /* Redis skips the byte after '\r' in headers and the two bytes after a payload. */
    EXPECT("*1\rX$3\rYfooZZ", "1|foo;", NULL);
}

Test(resp_parse, inline_commands) {
    EXPECT("PING\r\n", "1|PING;", NULL);
    EXPECT("PING\n", "1|PING;", NULL);
    EXPECT("set  a   b \r\n", "3|set|a|b;", NULL);
    EXPECT("\r\n\n", "0;0;", NULL);
    EXPECT("\t  \r\n", "0;", NULL);
    EXPECT("a\rb c\r\n", "3|a|b|c;", NULL); /* a "\\r" inside a line ends a token */
}

Test(resp_parse, inline_quoting_rules) {
    EXPECT("set \"a b\" 'c d'\r\n", "3|set|a b|c d;", NULL);
    EXPECT("x \"\\x41\\x4a\\n\\r\\t\\b\\a\\z\\\"\"\r\n", "2|x|AJ\\x0a\\x0d\\x09\\x08\\x07z\";",
           NULL);
    EXPECT("x \"\\x4\"\r\n", "2|x|x4;", NULL); /* not a valid hex escape: \x is x */
    EXPECT("x 'it\\'s' 'a\\nb'\r\n", "3|x|it's|a\\x5cnb;", NULL);
    EXPECT("x \"\" ''\r\n", "3|x||;", NULL);
    EXPECT("ab\"c d\" e\r\n", "2|abc d|e;", NULL); /* a quote may open mid-token */
    EXPECT("x \"a\"\tb\r\n", "3|x|a|b;", NULL);
}

Test(resp_parse, inline_nul_makes_the_line_unterminated_like_redis) {
    /* Redis finds the '\n' with strchr, which stops at a NUL: the request never completes. */
    static const char s[] = "set a b\0junk\r\nPING\r\n";
    struct resp_parser p;
    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse_request(&p, s, sizeof(s) - 1), RESP_INCOMPLETE);
    char *big = cm_calloc(1, 65537);
    memcpy(big, s, sizeof(s) - 1);
    cr_assert_eq(resp_parse_request(&p, big, 65537), RESP_ERROR);
    cr_assert_str_eq(p.errstr, "ERR Protocol error: too big inline request");
    cm_free(big);
    resp_parser_fini(&p);
}

Test(resp_parse, inline_unbalanced_quotes) {
    EXPECT("set \"abc\r\n", "", "ERR Protocol error: unbalanced quotes in request");
    EXPECT("set 'abc\r\n", "", "ERR Protocol error: unbalanced quotes in request");
    EXPECT("set \"a\"b\r\n", "", "ERR Protocol error: unbalanced quotes in request");
    EXPECT("set 'a'b\r\n", "", "ERR Protocol error: unbalanced quotes in request");
    EXPECT("PING\r\nset \"x\r\n", "1|PING;", "ERR Protocol error: unbalanced quotes in request");
}

Test(resp_parse, multibulk_length_errors) {
    EXPECT("*x\r\n", "", "ERR Protocol error: invalid multibulk length");
    EXPECT("*\r\n", "", "ERR Protocol error: invalid multibulk length");
    EXPECT("*01\r\n", "", "ERR Protocol error: invalid multibulk length");
    EXPECT("*+1\r\n", "", "ERR Protocol error: invalid multibulk length");
    EXPECT("*1 \r\n", "", "ERR Protocol error: invalid multibulk length");
    EXPECT("*2147483648\r\n", "", "ERR Protocol error: invalid multibulk length");
    EXPECT("*99999999999999999999\r\n", "", "ERR Protocol error: invalid multibulk length");
}

Test(resp_parse, bulk_length_errors) {
    EXPECT("*1\r\n$-1\r\n", "", "ERR Protocol error: invalid bulk length");
    EXPECT("*1\r\n$x\r\n", "", "ERR Protocol error: invalid bulk length");
    EXPECT("*1\r\n$\r\n", "", "ERR Protocol error: invalid bulk length");
    EXPECT("*1\r\n$536870913\r\n", "", "ERR Protocol error: invalid bulk length");
    EXPECT("*1\r\nx3\r\n", "", "ERR Protocol error: expected '$', got 'x'");
    EXPECT("*1\r\n:3\r\n", "", "ERR Protocol error: expected '$', got ':'");
    EXPECT("*1\r\n\r\n", "", "ERR Protocol error: expected '$', got ' '");
    EXPECT("*2\r\n$1\r\na\r\n*1\r\n", "", "ERR Protocol error: expected '$', got '*'");
}

Test(resp_parse, max_bulk_len_is_accepted) {
    struct resp_parser p;
    resp_parser_init(&p, NULL);
    static const char s[] = "*1\r\n$536870912\r\n";
    cr_assert_eq(resp_parse_request(&p, s, sizeof(s) - 1), RESP_INCOMPLETE);
    cr_assert_eq(p.want, (size_t)536870912 + 2 + sizeof(s) - 1);
    resp_parser_fini(&p);
}

Test(resp_parse, too_big_lines) {
    struct resp_parser p;
    struct resp_limits lim;
    resp_limits_default(&lim);
    cr_assert_eq(lim.max_inline_len, 65536);
    cr_assert_eq(lim.max_bulk_len, 512u * 1024 * 1024);
    char *big = cm_malloc(70000);
    memset(big, 'a', 70000);

    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse_request(&p, big, 65536), RESP_INCOMPLETE);
    cr_assert_eq(resp_parse_request(&p, big, 65537), RESP_ERROR);
    cr_assert_str_eq(p.errstr, "ERR Protocol error: too big inline request");
    cr_assert_eq(resp_parse_request(&p, big, 10), RESP_ERROR, "errors are sticky");
    resp_parser_reset_request(&p);
    /* A long inline line that does end is accepted, as in Redis. */
    big[69998] = '\r';
    big[69999] = '\n';
    cr_assert_eq(resp_parse_request(&p, big, 70000), RESP_OK);
    cr_assert_eq(p.argc, 1);
    cr_assert_eq(p.argv[0].len, 69998);
    cr_assert_eq(p.consumed, 70000);

    resp_parser_reset_request(&p);
    memset(big, '1', 70000);
    big[0] = '*';
    cr_assert_eq(resp_parse_request(&p, big, 65537), RESP_ERROR);
    cr_assert_str_eq(p.errstr, "ERR Protocol error: too big mbulk count string");

    resp_parser_reset_request(&p);
    memcpy(big, "*1\r\n$", 5);
    cr_assert_eq(resp_parse_request(&p, big, 65536 + 4), RESP_INCOMPLETE);
    cr_assert_eq(resp_parse_request(&p, big, 65537 + 4), RESP_ERROR);
    cr_assert_str_eq(p.errstr, "ERR Protocol error: too big bulk count string");

    /* A NUL before the CR: Redis's strchr never finds the line end. */
    resp_parser_reset_request(&p);
    memcpy(big, "*1\0\r\n", 5);
    cr_assert_eq(resp_parse_request(&p, big, 5), RESP_INCOMPLETE);
    memset(big + 5, 'x', 70000 - 5);
    cr_assert_eq(resp_parse_request(&p, big, 70000), RESP_ERROR);
    cr_assert_str_eq(p.errstr, "ERR Protocol error: too big mbulk count string");
    cm_free(big);
    resp_parser_fini(&p);
}

Test(resp_parse, configured_limits) {
    struct resp_limits lim;
    resp_limits_default(&lim);
    lim.max_bulk_len = 4;
    lim.max_multibulk_len = 2;
    struct cm_buf out;
    cm_buf_init(&out);
    const char *err;
    static const char a[] = "*1\r\n$4\r\nabcd\r\n*1\r\n$5\r\nabcde\r\n";
    parse_stream(a, sizeof(a) - 1, 0, &out, &err, &lim);
    cr_assert_str_eq(out.data, "1|abcd;");
    cr_assert_str_eq(err, "ERR Protocol error: invalid bulk length");
    cm_buf_clear(&out);
    static const char b[] = "*2\r\n$1\r\na\r\n$1\r\nb\r\n*3\r\n";
    parse_stream(b, sizeof(b) - 1, 0, &out, &err, &lim);
    cr_assert_str_eq(out.data, "2|a|b;");
    cr_assert_str_eq(err, "ERR Protocol error: invalid multibulk length");
    cm_buf_fini(&out);
}

Test(resp_parse, unauthenticated_limits) {
    struct resp_parser p;
    resp_parser_init(&p, NULL);
    p.auth_required = 1;
    static const char a[] = "*11\r\n";
    cr_assert_eq(resp_parse_request(&p, a, sizeof(a) - 1), RESP_ERROR);
    cr_assert_str_eq(p.errstr, "ERR Protocol error: unauthenticated multibulk length");
    resp_parser_reset_request(&p);
    static const char b[] = "*1\r\n$16385\r\n";
    cr_assert_eq(resp_parse_request(&p, b, sizeof(b) - 1), RESP_ERROR);
    cr_assert_str_eq(p.errstr, "ERR Protocol error: unauthenticated bulk length");
    resp_parser_reset_request(&p);
    static const char c[] = "*10\r\n$16384\r\n";
    cr_assert_eq(resp_parse_request(&p, c, sizeof(c) - 1), RESP_INCOMPLETE);
    resp_parser_fini(&p);
}

/* A mixed pipeline split at every byte boundary parses exactly like the whole buffer. */
Test(resp_parse, every_split_point_equals_whole_parse) {
    static const char s[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\nv\r\n\0\r\n"
                            "PING\r\n"
                            "*0\r\n"
                            "get \"a\\x00b\" 'c'\n"
                            "*2\r\n$4\r\nECHO\r\n$12\r\nhello world!\r\n"
                            "\r\n"
                            "*1\r\n$4\r\nQUIT\r\n";
    size_t n = sizeof(s) - 1;
    struct cm_buf whole;
    cm_buf_init(&whole);
    const char *err;
    parse_stream(s, n, 0, &whole, &err, NULL);
    cr_assert_null(err);
    cr_assert_str_eq(whole.data, "3|SET|k|v\\x0d\\x0a\\x00;1|PING;0;3|get|a\\x00b|c;2|ECHO|hello "
                                 "world!;0;1|QUIT;");
    for (size_t cut = 1; cut < n; cut++) {
        /* Feed [0,cut) then the rest. */
        struct resp_parser p;
        resp_parser_init(&p, NULL);
        struct cm_buf q, out;
        cm_buf_init(&q);
        cm_buf_init(&out);
        size_t fed = 0;
        size_t cuts[2] = {cut, n};
        for (int k = 0; k < 2; k++) {
            cm_buf_append(&q, s + fed, cuts[k] - fed);
            fed = cuts[k];
            int rc;
            while ((rc = resp_parse_request(&p, q.data, q.len)) == RESP_OK) {
                render(&p, q.data, &out);
                cm_buf_consume(&q, p.consumed);
            }
            cr_assert_eq(rc, RESP_INCOMPLETE, "cut %zu", cut);
        }
        cm_buf_append(&out, "\0", 1);
        cr_assert_str_eq(out.data, whole.data, "cut %zu", cut);
        cr_assert_eq(q.len, 0);
        cm_buf_fini(&q);
        cm_buf_fini(&out);
        resp_parser_fini(&p);
    }
    cm_buf_fini(&whole);
}

/* The caller may parse at an offset instead of consuming (querybuf + qb_pos). */
Test(resp_parse, pipeline_100k_commands) {
    struct cm_buf q;
    cm_buf_init(&q);
    for (int i = 0; i < 100000; i++) {
        char key[32];
        int kl = snprintf(key, sizeof(key), "key:%d", i);
        cm_buf_appendf(&q, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%d\r\n", kl, key, (int)(kl - 4),
                       i);
    }
    struct resp_parser p;
    resp_parser_init(&p, NULL);
    size_t pos = 0;
    int n = 0;
    while (resp_parse_request(&p, q.data + pos, q.len - pos) == RESP_OK) {
        cr_assert_eq(p.argc, 3);
        const char *base = q.data + pos;
        char want[32];
        int wl = snprintf(want, sizeof(want), "key:%d", n);
        cr_assert_eq(p.argv[1].len, (size_t)wl);
        cr_assert_eq(memcmp(resp_arg_ptr(&p, base, 1), want, (size_t)wl), 0);
        pos += p.consumed;
        n++;
    }
    cr_assert_eq(n, 100000);
    cr_assert_eq(pos, q.len);
    resp_parser_fini(&p);
    cm_buf_fini(&q);
}

/* A big bulk arriving in many small reads: the hint is exact and parsing stays linear. */
Test(resp_parse, big_bulk_in_many_reads) {
    size_t payload = 8u << 20;
    struct cm_buf q;
    cm_buf_init(&q);
    cm_buf_appendf(&q, "*2\r\n$3\r\nSET\r\n$%zu\r\n", payload);
    size_t hdr = q.len;
    struct resp_parser p;
    resp_parser_init(&p, NULL);
    cr_assert_eq(resp_parse_request(&p, q.data, q.len), RESP_INCOMPLETE);
    cr_assert_eq(p.want, hdr + payload + 2);
    cm_buf_reserve(&q, p.want - q.len);
    size_t left = payload;
    while (left) {
        size_t k = left < 1000 ? left : 1000;
        cm_buf_reserve(&q, k);
        memset(q.data + q.len, 'v', k);
        q.len += k;
        left -= k;
        cr_assert_eq(resp_parse_request(&p, q.data, q.len), RESP_INCOMPLETE);
    }
    cm_buf_append(&q, "\r\n", 2);
    cr_assert_eq(resp_parse_request(&p, q.data, q.len), RESP_OK);
    cr_assert_eq(p.argc, 2);
    cr_assert_eq(p.argv[1].off, hdr);
    cr_assert_eq(p.argv[1].len, payload);
    cr_assert_eq(p.consumed, q.len);
    resp_parser_fini(&p);
    cm_buf_fini(&q);
}

Test(resp_parse, string2ll_matches_redis) {
    long long v;
    cr_assert(resp_string2ll("0", 1, &v) && v == 0);
    cr_assert(resp_string2ll("-9223372036854775808", 20, &v) && v == LLONG_MIN);
    cr_assert(resp_string2ll("9223372036854775807", 19, &v) && v == LLONG_MAX);
    cr_assert_not(resp_string2ll("9223372036854775808", 19, &v));
    cr_assert_not(resp_string2ll("-0", 2, &v));
    cr_assert_not(resp_string2ll("007", 3, &v));
    cr_assert_not(resp_string2ll("", 0, &v));
    cr_assert_not(resp_string2ll("1a", 2, &v));
}

Test(cm_buf, grow_consume_format) {
    struct cm_buf b;
    cm_buf_init(&b);
    cr_assert_null(b.data);
    cm_buf_append(&b, "hello", 5);
    cm_buf_appendf(&b, " %d %s", 42, "world");
    cr_assert_eq(b.len, 14);
    cr_assert_eq(memcmp(b.data, "hello 42 world", 14), 0);
    cm_buf_consume(&b, 6);
    cr_assert_eq(memcmp(b.data, "42 world", 8), 0);
    cr_assert_eq(b.len, 8);
    for (int i = 0; i < 1000; i++)
        cm_buf_appendf(&b, "%0100d", i);
    cr_assert_eq(b.len, 8 + 100000);
    cr_assert_geq(b.cap, b.len);
    cm_buf_consume(&b, 1u << 30);
    cr_assert_eq(b.len, 0);
    size_t cap = b.cap;
    cm_buf_clear(&b);
    cr_assert_eq(b.cap, cap);
    cm_buf_reserve(&b, 10);
    cr_assert_eq(b.cap, cap);
    cm_buf_fini(&b);
    cr_assert_null(b.data);
    cr_assert_eq(b.cap, 0);
}
