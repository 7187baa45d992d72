/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store client's direct RESP2 reader (client/store/cli_reply.c): cli__resp_parse builds the
 * same values as hiredis's reader with the arena functions, for every RESP2 type; a reply cut
 * at every byte is reported incomplete, and cli__resp_scan, fed the bytes in pieces of every
 * size, finds exactly where it ends; what it leaves to hiredis (RESP3 types, bad lengths) is
 * refused, not misread.
 */
#include "common/fmacros.h"

#include "client/store/cli_store.h"

#include <criterion/criterion.h>
#include <string.h>

/* Compares two reply trees. */
static void same(const redisReply *a, const redisReply *b) {
    cr_assert_eq(a->type, b->type);
    switch (a->type) {
    case REDIS_REPLY_INTEGER:
        cr_assert_eq(a->integer, b->integer);
        break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        cr_assert_eq(a->len, b->len);
        cr_assert(memcmp(a->str, b->str, a->len) == 0);
        cr_assert_eq(a->str[a->len], '\0');
        break;
    case REDIS_REPLY_ARRAY:
        cr_assert_eq(a->elements, b->elements);
        for (size_t i = 0; i < a->elements; i++) {
            same(a->element[i], b->element[i]);
        }
        break;
    default:
        break;
    }
}

/* What hiredis's reader makes of the n bytes at p (with the arena functions). */
static redisReply *hiredis_parse(const char *p, size_t n) {
    redisReader *rd = redisReaderCreateWithFunctions(&cli__arena_fns);
    redisReaderFeed(rd, p, n);
    void *r = NULL;
    cr_assert_eq(redisReaderGetReply(rd, &r), REDIS_OK);
    cr_assert_not_null(r);
    redisReaderFree(rd);
    return r;
}

/* A compact batch reply with one of each RESP2 type, nil bulk and nil array included. */
static const char reply[] =
    "*2\r\n*4\r\n*6\r\n:10000\r\n:0\r\n:0\r\n:0\r\n:139999425114112\r\n:4096\r\n"
    "-OBJECT_NOT_FOUND object not found\r\n+OK\r\n"
    "*5\r\n:-42\r\n$-1\r\n*-1\r\n*0\r\n$0\r\n\r\n"
    "*1\r\n*4\r\n$5\r\nseg-a\r\n$14\r\n127.0.0.1:7000\r\n$3\r\ntcp\r\n"
    "$6\r\nab\r\ncd\r\n";

Test(cli_reply, parse_matches_hiredis) {
    size_t n = sizeof(reply) - 1;
    redisReply *r = NULL;
    cr_assert_eq(cli__resp_parse(reply, n, &r), (ssize_t)n);
    redisReply *h = hiredis_parse(reply, n);
    same(r, h);
    cr_assert_eq(r->element[1]->element[0]->element[3]->len, 6, "a bulk string holding CRLF");
    cli__reply_free(r);
    cli__reply_free(h);
    /* a reply followed by the next one: only the first is taken */
    char two[2 * sizeof(reply)];
    memcpy(two, reply, n);
    memcpy(two + n, ":7\r\n", 4);
    cr_assert_eq(cli__resp_parse(two, n + 4, &r), (ssize_t)n);
    cli__reply_free(r);
}

Test(cli_reply, every_cut_is_incomplete_and_the_scan_resumes) {
    size_t n = sizeof(reply) - 1;
    for (size_t cut = 0; cut < n; cut++) {
        redisReply *r = NULL;
        cr_assert_eq(cli__resp_parse(reply, cut, &r), 0, "cut at %zu", cut);
    }
    for (size_t step = 1; step <= n; step++) { /* the bytes arrive step at a time */
        struct cli_rscan sc;
        cli__resp_scan_init(&sc);
        size_t have = 0;
        int got = 0;
        while (got == 0) {
            have = have + step < n ? have + step : n;
            got = cli__resp_scan(&sc, reply, have);
            cr_assert(got == 1 || have < n, "step %zu: no end found in the whole reply", step);
        }
        cr_assert_eq(got, 1);
        cr_assert_eq(sc.off, n, "step %zu: end at %zu", step, sc.off);
    }
}

Test(cli_reply, leaves_the_rest_to_hiredis) {
    const char *refused[] = {"%1\r\n:1\r\n:2\r\n",       "_\r\n",        ":12a\r\n",      "$-2\r\n",
                             ":1234567890123456789\r\n", "*1\r\n#t\r\n", "$3\r\nabcd\r\n"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        redisReply *r = NULL;
        cr_assert_eq(cli__resp_parse(refused[i], strlen(refused[i]), &r), -1, "%s", refused[i]);
    }
    struct cli_rscan sc;
    cli__resp_scan_init(&sc);
    cr_assert_eq(cli__resp_scan(&sc, "%1\r\n", 4), -1);
    /* nesting deeper than CLI_RP_DEPTH */
    char deep[256] = "";
    for (int i = 0; i <= CLI_RP_DEPTH; i++) {
        strcat(deep, "*1\r\n");
    }
    strcat(deep, ":1\r\n");
    redisReply *r = NULL;
    cr_assert_eq(cli__resp_parse(deep, strlen(deep), &r), -1);
    cli__resp_scan_init(&sc);
    cr_assert_eq(cli__resp_scan(&sc, deep, strlen(deep)), -1);
}
