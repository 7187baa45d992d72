/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for SCAN: cursor protocol, MATCH, COUNT, TYPE, error strings, and the
 * guarantee that a full iteration returns every key present for the whole scan at least once,
 * even while other keys are being added. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(scan, .init = it_setup, .fini = it_teardown, .timeout = 60);

/* Runs a full SCAN with one option (opt val, e.g. "MATCH" "k*"), marks seen[i] for every key
 * "key:<i>" returned, adds add_while keys "extra:<n>" during the scan, and returns the number of
 * keys returned. */
static size_t full_scan(const char *opt, const char *val, unsigned char *seen, size_t n,
                        int add_while) {
    char cursor[32] = "0";
    size_t total = 0;
    int rounds = 0, added = 0;
    do {
        redisReply *r = it_cmd(it_c, "SCAN %s %s %s", cursor, opt, val);
        IT_TYPE(r, REDIS_REPLY_ARRAY);
        cr_assert_eq(r->elements, 2, "SCAN replies [cursor, keys]");
        IT_TYPE(r->element[0], REDIS_REPLY_STRING);
        IT_TYPE(r->element[1], REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            const char *k = r->element[1]->element[i]->str;
            total++;
            if (strncmp(k, "key:", 4) == 0) {
                size_t idx = (size_t)atol(k + 4);
                cr_assert_lt(idx, n);
                seen[idx]++;
            }
        }
        if (add_while > 0 && added < add_while) {
            for (int j = 0; j < 20 && added < add_while; j++, added++) {
                IT_OK(it_c, "SET extra:%d v", added);
            }
        }
        cr_assert_lt(++rounds, 100000, "SCAN terminates");
    } while (strcmp(cursor, "0") != 0);
    return total;
}

Test(scan, empty_db) {
    redisReply *r = it_cmd(it_c, "SCAN 0");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_str_eq(r->element[0]->str, "0");
    cr_assert_eq(r->element[1]->elements, 0);
}

Test(scan, full_iteration_returns_every_key) {
    enum { N = 1000 };
    for (int i = 0; i < N; i += 100) {
        for (int j = i; j < i + 100; j++) {
            cr_assert_eq(redisAppendCommand(it_c, "SET key:%d v", j), REDIS_OK);
        }
        for (int j = i; j < i + 100; j++) {
            void *rv;
            cr_assert_eq(redisGetReply(it_c, &rv), REDIS_OK);
            freeReplyObject(rv);
        }
    }
    unsigned char seen[N] = {0};
    full_scan("COUNT", "10", seen, N, 0);
    for (int i = 0; i < N; i++) {
        cr_assert_geq(seen[i], 1, "key:%d returned by the scan", i);
    }
}

Test(scan, keys_added_during_scan) {
    enum { N = 500 };
    for (int i = 0; i < N; i++) {
        IT_OK(it_c, "SET key:%d v", i);
    }
    unsigned char seen[N] = {0};
    full_scan("COUNT", "7", seen, N, 2000); /* grows the table (rehash) while iterating */
    for (int i = 0; i < N; i++) {
        cr_assert_geq(seen[i], 1, "key:%d present throughout is returned", i);
    }
    IT_INT(N + 2000, it_c, "DBSIZE");
}

Test(scan, match_and_count) {
    for (int i = 0; i < 300; i++) {
        IT_OK(it_c, "SET key:%d v", i);
        IT_OK(it_c, "SET other:%d v", i);
    }
    unsigned char seen[300] = {0};
    size_t total = full_scan("MATCH", "key:*", seen, 300, 0);
    cr_assert_geq(total, 300);
    for (int i = 0; i < 300; i++) {
        cr_assert_geq(seen[i], 1, "key:%d", i);
    }
    /* MATCH filters after sampling: every returned key matches. */
    redisReply *r = it_cmd(it_c, "SCAN 0 MATCH other:1* COUNT 1000");
    cr_assert_str_eq(r->element[0]->str, "0", "COUNT 1000 covers 600 keys in one call");
    cr_assert_eq(r->element[1]->elements, 111, "other:1, other:10-19, other:100-199");
    for (size_t i = 0; i < r->element[1]->elements; i++) {
        cr_assert(strncmp(r->element[1]->element[i]->str, "other:1", 7) == 0);
    }
    r = it_cmd(it_c, "SCAN 0 COUNT 1000");
    cr_assert_eq(r->element[1]->elements, 600);
}

Test(scan, type_filter) {
    IT_OK(it_c, "MSET a 1 b 2 c 3");
    redisReply *r = it_cmd(it_c, "SCAN 0 TYPE string COUNT 100");
    cr_assert_eq(r->element[1]->elements, 3);
    r = it_cmd(it_c, "SCAN 0 TYPE list COUNT 100");
    cr_assert_str_eq(r->element[0]->str, "0");
    cr_assert_eq(r->element[1]->elements, 0);
    r = it_cmd(it_c, "SCAN 0 TYPE STRING MATCH a COUNT 100");
    cr_assert_eq(r->element[1]->elements, 1);
    cr_assert_str_eq(r->element[1]->element[0]->str, "a");
}

Test(scan, errors) {
    IT_ERR("ERR invalid cursor", it_c, "SCAN x");
    IT_ERR("ERR invalid cursor", it_c, "SCAN 18446744073709551616");
    IT_ERR("ERR syntax error", it_c, "SCAN 0 COUNT 0");
    IT_ERR("ERR syntax error", it_c, "SCAN 0 COUNT -1");
    IT_ERR("ERR value is not an integer or out of range", it_c, "SCAN 0 COUNT x");
    IT_ERR("ERR syntax error", it_c, "SCAN 0 foo");
    IT_ERR("ERR syntax error", it_c, "SCAN 0 MATCH");
    IT_ERR("ERR wrong number of arguments for 'scan' command", it_c, "SCAN");
}
