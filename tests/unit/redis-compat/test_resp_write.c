/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for the RESP writer (byte-exact RESP2 and RESP3 output) and the reply reader
 * (every RESP3 type, round trips of writer output, split feeds, protocol errors).
 */
#include "common/fmacros.h"

#include "common/cm_buf.h"
#include "common/cm_errno.h"
#include "common/cm_mem.h"
#include "redis-compat/resp.h"
#include "redis-compat/resp_write.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static struct cm_buf b;

static void setup(void) {
    cm_buf_init(&b);
}

static void teardown(void) {
    cm_buf_fini(&b);
}

#define EXPECT_BUF(lit)                                                                        \
    do {                                                                                       \
        cr_assert_eq(b.len, sizeof(lit) - 1, "len %zu: %.*s", b.len, (int)b.len, b.data);      \
        cr_assert_eq(memcmp(b.data, lit, sizeof(lit) - 1), 0, "got %.*s", (int)b.len, b.data); \
        cm_buf_clear(&b);                                                                      \
    } while (0)

TestSuite(resp_write, .init = setup, .fini = teardown);

Test(resp_write, scalars) {
    resp_add_simple(&b, "OK");
    EXPECT_BUF("+OK\r\n");
    resp_add_int(&b, 0);
    EXPECT_BUF(":0\r\n");
    resp_add_int(&b, -42);
    EXPECT_BUF(":-42\r\n");
    resp_add_int(&b, LLONG_MIN);
    EXPECT_BUF(":-9223372036854775808\r\n");
    resp_add_int(&b, LLONG_MAX);
    EXPECT_BUF(":9223372036854775807\r\n");
    resp_add_bulk(&b, "a\0\r\nb", 5);
    EXPECT_BUF("$5\r\na\0\r\nb\r\n");
    resp_add_bulk(&b, NULL, 0);
    EXPECT_BUF("$0\r\n\r\n");
    resp_add_bulk_cstr(&b, "hello");
    EXPECT_BUF("$5\r\nhello\r\n");
    resp_add_bulk_hdr(&b, 1234567);
    EXPECT_BUF("$1234567\r\n");
    resp_add_bulk_ll(&b, -7);
    EXPECT_BUF("$2\r\n-7\r\n");
    resp_add_array_hdr(&b, 3);
    EXPECT_BUF("*3\r\n");
    resp_add_array_hdr(&b, -1);
    EXPECT_BUF("*-1\r\n");
}

Test(resp_write, ll2str_all_widths) {
    char tmp[24];
    long long v = 1;
    for (int i = 0; i < 19; i++, v = i < 19 ? v * 10 : v) {
        char want[32];
        int n = snprintf(want, sizeof(want), "%lld", v - 1);
        cr_assert_eq(resp_ll2str(tmp, v - 1), (size_t)n);
        cr_assert_eq(memcmp(tmp, want, (size_t)n), 0);
        n = snprintf(want, sizeof(want), "%lld", -v);
        cr_assert_eq(resp_ll2str(tmp, -v), (size_t)n);
        cr_assert_eq(memcmp(tmp, want, (size_t)n), 0);
    }
}

Test(resp_write, errors_follow_redis_rules) {
    resp_add_error(&b, "syntax error", 12);
    EXPECT_BUF("-ERR syntax error\r\n");
    resp_add_error(&b, "ERR syntax error", 16);
    EXPECT_BUF("-ERR syntax error\r\n");
    resp_add_error(&b, "-WRONGTYPE Operation", 20);
    EXPECT_BUF("-WRONGTYPE Operation\r\n");
    resp_add_error(&b, "WRONGTYPE Operation", 19);
    EXPECT_BUF("-WRONGTYPE Operation\r\n");
    resp_add_error(&b, "NOAUTH Authentication required.", 31);
    EXPECT_BUF("-NOAUTH Authentication required.\r\n");
    resp_add_error(&b, "OBJECT_NOT_FOUND key k", 22);
    EXPECT_BUF("-OBJECT_NOT_FOUND key k\r\n");
    resp_add_error(&b, "EXEC without MULTI", 18);
    EXPECT_BUF("-ERR EXEC without MULTI\r\n");
    resp_add_error(&b, "Protocol error: x", 17);
    EXPECT_BUF("-ERR Protocol error: x\r\n");
    resp_add_error(&b, "bad\r\nthing", 10);
    EXPECT_BUF("-ERR bad  thing\r\n");
    resp_add_error(&b, "", 0);
    EXPECT_BUF("-ERR \r\n");
    resp_add_errorf(&b, "unknown command '%s', with args beginning with: ", "FOO");
    EXPECT_BUF("-ERR unknown command 'FOO', with args beginning with: \r\n");
    resp_add_errorf(&b, "WRONGPASS %s", "invalid username-password pair or user is disabled.");
    EXPECT_BUF("-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    char big[1000];
    memset(big, 'x', sizeof(big));
    resp_add_errorf(&b, "%.*s", 1000, big);
    cr_assert_eq(b.len, 1000 + 7);
    cr_assert_eq(memcmp(b.data, "-ERR xxx", 8), 0);
}

Test(resp_write, resp2_vs_resp3) {
    resp_add_null(&b, 2);
    EXPECT_BUF("$-1\r\n");
    resp_add_null(&b, 3);
    EXPECT_BUF("_\r\n");
    resp_add_null_array(&b, 2);
    EXPECT_BUF("*-1\r\n");
    resp_add_null_array(&b, 3);
    EXPECT_BUF("_\r\n");
    resp_add_map_hdr(&b, 2, 3);
    EXPECT_BUF("*6\r\n");
    resp_add_map_hdr(&b, 3, 3);
    EXPECT_BUF("%3\r\n");
    resp_add_set_hdr(&b, 2, 2);
    EXPECT_BUF("*2\r\n");
    resp_add_set_hdr(&b, 3, 2);
    EXPECT_BUF("~2\r\n");
    resp_add_bool(&b, 2, 1);
    EXPECT_BUF(":1\r\n");
    resp_add_bool(&b, 2, 0);
    EXPECT_BUF(":0\r\n");
    resp_add_bool(&b, 3, 1);
    EXPECT_BUF("#t\r\n");
    resp_add_bool(&b, 3, 0);
    EXPECT_BUF("#f\r\n");
    resp_add_push_hdr(&b, 2, 3);
    EXPECT_BUF("*3\r\n");
    resp_add_push_hdr(&b, 3, 3);
    EXPECT_BUF(">3\r\n");
    resp_add_attr_hdr(&b, 3, 1);
    EXPECT_BUF("|1\r\n");
    resp_add_attr_hdr(&b, 2, 1);
    cr_assert_eq(b.len, 0);
    resp_add_verbatim(&b, 2, "hi", 2, "txt");
    EXPECT_BUF("$2\r\nhi\r\n");
    resp_add_verbatim(&b, 3, "hi", 2, "txt");
    EXPECT_BUF("=6\r\ntxt:hi\r\n");
}

Test(resp_write, doubles_like_redis_7_0) {
    resp_add_double(&b, 2, 1.5);
    EXPECT_BUF("$3\r\n1.5\r\n");
    resp_add_double(&b, 3, 1.5);
    EXPECT_BUF(",1.5\r\n");
    resp_add_double(&b, 2, 0.1);
    EXPECT_BUF("$19\r\n0.10000000000000001\r\n");
    resp_add_double(&b, 3, 3.0);
    EXPECT_BUF(",3\r\n");
    resp_add_double(&b, 2, INFINITY);
    EXPECT_BUF("$3\r\ninf\r\n");
    resp_add_double(&b, 2, -INFINITY);
    EXPECT_BUF("$4\r\n-inf\r\n");
    resp_add_double(&b, 3, INFINITY);
    EXPECT_BUF(",inf\r\n");
    resp_add_double(&b, 3, -INFINITY);
    EXPECT_BUF(",-inf\r\n");
}

/* ---- reader ---- */

static struct resp_reply *read_one(const char *data, size_t n, size_t step) {
    struct resp_reader r;
    resp_reader_init(&r);
    struct resp_reply *rep = NULL;
    size_t fed = 0;
    int rc = 0;
    while (rc == 0 && fed < n) {
        size_t k = step == 0 || n - fed < step ? n - fed : step;
        cr_assert_eq(resp_reader_feed(&r, data + fed, k), 0);
        fed += k;
        rc = resp_reader_get(&r, &rep);
        cr_assert_geq(rc, 0, "reader error %s", r.errstr);
        if (fed < n)
            cr_assert_eq(rc, 0, "complete before the end (fed %zu of %zu)", fed, n);
    }
    cr_assert_eq(rc, 1);
    struct resp_reply *extra;
    cr_assert_eq(resp_reader_get(&r, &extra), 0);
    resp_reader_fini(&r);
    return rep;
}

Test(resp_reader, every_type) {
    static const char s[] =
        "*15\r\n+OK\r\n-ERR bad\r\n:-12\r\n$3\r\na\0b\r\n$-1\r\n*-1\r\n_\r\n"
        ",3.25\r\n#t\r\n!5\r\nERR x\r\n=7\r\nmkd:abc\r\n(123456789012345678901234"
        "\r\n%1\r\n+k\r\n:1\r\n~2\r\n:1\r\n:2\r\n>2\r\n+message\r\n*0\r\n";
    for (size_t step = 0; step < 4; step++) {
        struct resp_reply *rep = read_one(s, sizeof(s) - 1, step);
        cr_assert_eq(rep->type, RESP_REPLY_ARRAY);
        cr_assert_eq(rep->n, 15);
        struct resp_reply *e = rep->elements;
        cr_assert_eq(e[0].type, RESP_REPLY_STRING);
        cr_assert_str_eq(e[0].str, "OK");
        cr_assert_eq(e[1].type, RESP_REPLY_ERROR);
        cr_assert_str_eq(e[1].str, "ERR bad");
        cr_assert_eq(e[2].type, RESP_REPLY_INTEGER);
        cr_assert_eq(e[2].integer, -12);
        cr_assert_eq(e[3].type, RESP_REPLY_BULK);
        cr_assert_eq(e[3].len, 3);
        cr_assert_eq(memcmp(e[3].str, "a\0b", 3), 0);
        cr_assert_eq(e[4].type, RESP_REPLY_NIL);
        cr_assert_eq(e[4].prefix, '$');
        cr_assert_eq(e[5].type, RESP_REPLY_NIL);
        cr_assert_eq(e[5].prefix, '*');
        cr_assert_eq(e[6].type, RESP_REPLY_NIL);
        cr_assert_eq(e[6].prefix, '_');
        cr_assert_eq(e[7].type, RESP_REPLY_DOUBLE);
        cr_assert_float_eq(e[7].dval, 3.25, 1e-12);
        cr_assert_eq(e[8].type, RESP_REPLY_BOOL);
        cr_assert_eq(e[8].integer, 1);
        cr_assert_eq(e[9].type, RESP_REPLY_BLOB_ERROR);
        cr_assert_str_eq(e[9].str, "ERR x");
        cr_assert_eq(e[10].type, RESP_REPLY_VERBATIM);
        cr_assert_str_eq(e[10].vtype, "mkd");
        cr_assert_str_eq(e[10].str, "abc");
        cr_assert_eq(e[11].type, RESP_REPLY_BIGNUM);
        cr_assert_str_eq(e[11].str, "123456789012345678901234");
        cr_assert_eq(e[12].type, RESP_REPLY_MAP);
        cr_assert_eq(e[12].n, 2);
        cr_assert_str_eq(e[12].elements[0].str, "k");
        cr_assert_eq(e[12].elements[1].integer, 1);
        cr_assert_eq(e[13].type, RESP_REPLY_SET);
        cr_assert_eq(e[13].n, 2);
        cr_assert_eq(e[13].elements[1].integer, 2);
        cr_assert_eq(e[14].type, RESP_REPLY_PUSH);
        cr_assert_eq(e[14].n, 2);
        cr_assert_eq(e[14].elements[1].type, RESP_REPLY_ARRAY);
        cr_assert_eq(e[14].elements[1].n, 0);
        resp_reply_free(rep);
    }
}

Test(resp_reader, round_trips_writer_output) {
    for (int proto = 2; proto <= 3; proto++) {
        cm_buf_clear(&b);
        resp_add_array_hdr(&b, 8);
        resp_add_simple(&b, "PONG");
        resp_add_int(&b, 99);
        resp_add_bulk(&b, "x\r\ny", 4);
        resp_add_null(&b, proto);
        resp_add_double(&b, proto, 2.5);
        resp_add_bool(&b, proto, 1);
        resp_add_map_hdr(&b, proto, 1);
        resp_add_bulk_cstr(&b, "field");
        resp_add_verbatim(&b, proto, "text", 4, "txt");
        resp_add_error(&b, "oops", 4);
        struct resp_reply *rep = read_one(b.data, b.len, 0);
        cr_assert_eq(rep->n, 8);
        struct resp_reply *e = rep->elements;
        cr_assert_str_eq(e[0].str, "PONG");
        cr_assert_eq(e[1].integer, 99);
        cr_assert_eq(e[2].len, 4);
        cr_assert_eq(memcmp(e[2].str, "x\r\ny", 4), 0);
        cr_assert_eq(e[3].type, RESP_REPLY_NIL);
        if (proto == 3) {
            cr_assert_eq(e[4].type, RESP_REPLY_DOUBLE);
            cr_assert_eq(e[5].type, RESP_REPLY_BOOL);
            cr_assert_eq(e[6].type, RESP_REPLY_MAP);
            cr_assert_eq(e[6].elements[1].type, RESP_REPLY_VERBATIM);
        } else {
            cr_assert_eq(e[4].type, RESP_REPLY_BULK);
            cr_assert_str_eq(e[4].str, "2.5");
            cr_assert_eq(e[5].type, RESP_REPLY_INTEGER);
            cr_assert_eq(e[6].type, RESP_REPLY_ARRAY);
            cr_assert_eq(e[6].elements[1].type, RESP_REPLY_BULK);
        }
        cr_assert_eq(e[5].integer, 1);
        cr_assert_eq(e[6].n, 2);
        cr_assert_str_eq(e[6].elements[1].str, "text");
        cr_assert_eq(e[7].type, RESP_REPLY_ERROR);
        cr_assert_str_eq(e[7].str, "ERR oops");
        resp_reply_free(rep);
    }
}

Test(resp_reader, many_replies_in_one_feed_and_big_arrays) {
    struct resp_reader r;
    resp_reader_init(&r);
    cm_buf_clear(&b);
    resp_add_array_hdr(&b, 1000);
    for (int i = 0; i < 1000; i++)
        resp_add_int(&b, i);
    for (int i = 0; i < 100; i++)
        resp_add_simple(&b, "OK");
    cr_assert_eq(resp_reader_feed(&r, b.data, b.len), 0);
    struct resp_reply *rep;
    cr_assert_eq(resp_reader_get(&r, &rep), 1);
    cr_assert_eq(rep->n, 1000);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(rep->elements[i].integer, i);
    resp_reply_free(rep);
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(resp_reader_get(&r, &rep), 1);
        cr_assert_str_eq(rep->str, "OK");
        resp_reply_free(rep);
    }
    cr_assert_eq(resp_reader_get(&r, &rep), 0);
    cr_assert_null(rep);
    resp_reader_fini(&r);
}

static void expect_reader_error(const char *s, size_t n) {
    struct resp_reader r;
    resp_reader_init(&r);
    struct resp_reply *rep;
    resp_reader_feed(&r, s, n);
    cr_assert_eq(resp_reader_get(&r, &rep), -CM_EPROTOCOL, "input %.*s", (int)n, s);
    cr_assert_null(rep);
    cr_assert_neq(r.errstr[0], '\0');
    cr_assert_eq(resp_reader_feed(&r, "+OK\r\n", 5), -CM_EPROTOCOL, "sticky");
    resp_reader_fini(&r);
}

#define EXPECT_ERR(lit) expect_reader_error(lit, sizeof(lit) - 1)

Test(resp_reader, protocol_errors) {
    EXPECT_ERR("?\r\n");
    EXPECT_ERR(":abc\r\n");
    EXPECT_ERR("$-2\r\n");
    EXPECT_ERR("$3\r\nabcd\r\n");
    EXPECT_ERR("#x\r\n");
    EXPECT_ERR(",1.5x\r\n");
    EXPECT_ERR("_x\r\n");
    EXPECT_ERR("=3\r\nabc\r\n");
    EXPECT_ERR("%-1\r\n");
    EXPECT_ERR("*1\r\n(12a\r\n");
    /* Nesting limit: 1025 nested arrays. */
    struct cm_buf deep;
    cm_buf_init(&deep);
    for (int i = 0; i < 1025; i++)
        cm_buf_append(&deep, "*1\r\n", 4);
    expect_reader_error(deep.data, deep.len);
    cm_buf_fini(&deep);
}

Test(resp_reader, huge_count_does_not_preallocate) {
    static const char s[] = "*2000000000\r\n:1\r\n";
    struct resp_reader r;
    resp_reader_init(&r);
    struct resp_reply *rep;
    size_t before = cm_mem_used();
    resp_reader_feed(&r, s, sizeof(s) - 1);
    cr_assert_eq(resp_reader_get(&r, &rep), 0);
    cr_assert_lt(cm_mem_used() - before, 64 * 1024);
    resp_reader_fini(&r);
}
