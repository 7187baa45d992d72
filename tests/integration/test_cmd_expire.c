/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for expiry: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with the Redis 7 NX/XX/GT/LT
 * options, TTL, PTTL, PERSIST, EXPIRETIME, PEXPIRETIME, and keys vanishing after short TTLs
 * (for reads, for EXISTS/DBSIZE and for active expiry). */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

TestSuite(expire, .init = it_setup, .fini = it_teardown, .timeout = 30);

static long long wall_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static long long int_reply(const char *fmt, const char *key) {
    redisReply *r = it_cmd(it_c, fmt, key);
    IT_TYPE(r, REDIS_REPLY_INTEGER);
    return r->integer;
}

Test(expire, ttl_pttl_missing_and_persistent) {
    IT_INT(-2, it_c, "TTL nosuch");
    IT_INT(-2, it_c, "PTTL nosuch");
    IT_OK(it_c, "SET k v");
    IT_INT(-1, it_c, "TTL k");
    IT_INT(-1, it_c, "PTTL k");
    IT_ERR("ERR wrong number of arguments for 'ttl' command", it_c, "TTL");
}

Test(expire, expire_and_pexpire) {
    IT_OK(it_c, "SET k v");
    IT_INT(1, it_c, "EXPIRE k 100");
    IT_INT(100, it_c, "TTL k");
    long long p = int_reply("PTTL %s", "k");
    cr_assert(p > 99000 && p <= 100000, "pttl %lld", p);
    IT_INT(1, it_c, "PEXPIRE k 50000");
    p = int_reply("PTTL %s", "k");
    cr_assert(p > 49000 && p <= 50000, "pttl %lld", p);
    IT_INT(0, it_c, "EXPIRE nosuch 10");
    IT_INT(0, it_c, "PEXPIRE nosuch 10");
    IT_ERR("ERR value is not an integer or out of range", it_c, "EXPIRE k x");
    IT_ERR("ERR value is not an integer or out of range", it_c, "PEXPIRE k 1.5");
    IT_ERR("ERR invalid expire time in 'expire' command", it_c, "EXPIRE k 9223372036854775807");
    IT_ERR("ERR invalid expire time in 'expire' command", it_c, "EXPIRE k 9223372036854775");
    IT_ERR("ERR invalid expire time in 'pexpire' command", it_c, "PEXPIRE k 9223372036854775807");
    IT_ERR("ERR invalid expire time in 'expireat' command", it_c, "EXPIREAT k 9223372036854775807");
    IT_ERR("ERR wrong number of arguments for 'expire' command", it_c, "EXPIRE k");
}

Test(expire, expireat_and_expiretime) {
    IT_OK(it_c, "SET k v");
    IT_INT(-1, it_c, "EXPIRETIME k");
    IT_INT(-1, it_c, "PEXPIRETIME k");
    IT_INT(-2, it_c, "EXPIRETIME nosuch");
    IT_INT(-2, it_c, "PEXPIRETIME nosuch");
    IT_INT(1, it_c, "EXPIREAT k 4000000000");
    IT_INT(4000000000LL, it_c, "EXPIRETIME k");
    IT_INT(4000000000000LL, it_c, "PEXPIRETIME k");
    IT_INT(1, it_c, "PEXPIREAT k 4000000000123");
    IT_INT(4000000000123LL, it_c, "PEXPIRETIME k");
    IT_INT(4000000000LL, it_c, "EXPIRETIME k");
    long long at = wall_ms() + 60000;
    IT_INT(1, it_c, "PEXPIREAT k %lld", at);
    long long p = int_reply("PTTL %s", "k");
    cr_assert(p > 58000 && p <= 60000, "pttl %lld", p);
    IT_INT(at, it_c, "PEXPIRETIME k");
    IT_INT(0, it_c, "EXPIREAT nosuch 4000000000");
}

Test(expire, non_positive_deletes) {
    IT_OK(it_c, "SET k v");
    IT_INT(1, it_c, "EXPIRE k -1");
    IT_INT(0, it_c, "EXISTS k");
    IT_OK(it_c, "SET k v");
    IT_INT(1, it_c, "PEXPIRE k 0");
    IT_INT(0, it_c, "EXISTS k");
    IT_OK(it_c, "SET k v");
    IT_INT(1, it_c, "EXPIREAT k 1");
    IT_INT(0, it_c, "EXISTS k");
    IT_OK(it_c, "SET k v");
    IT_INT(1, it_c, "PEXPIREAT k %lld", wall_ms() - 1000);
    IT_NIL(it_c, "GET k");
    IT_INT(0, it_c, "DBSIZE");
}

Test(expire, options_nx_xx_gt_lt) {
    IT_OK(it_c, "SET k v");
    IT_INT(0, it_c, "EXPIRE k 100 XX"); /* no ttl yet */
    IT_INT(0, it_c, "EXPIRE k 100 GT"); /* no ttl counts as infinite */
    IT_INT(1, it_c, "EXPIRE k 100 LT");
    IT_INT(100, it_c, "TTL k");
    IT_INT(0, it_c, "EXPIRE k 50 NX");
    IT_INT(1, it_c, "EXPIRE k 200 GT");
    IT_INT(0, it_c, "EXPIRE k 50 GT");
    IT_INT(1, it_c, "EXPIRE k 50 LT");
    IT_INT(0, it_c, "EXPIRE k 60 LT");
    IT_INT(50, it_c, "TTL k");
    IT_INT(1, it_c, "EXPIRE k 70 XX");
    IT_INT(1, it_c, "PEXPIRE k 80000 xx gt");
    IT_INT(1, it_c, "PERSIST k");
    IT_INT(1, it_c, "EXPIRE k 10 NX");
    IT_INT(1, it_c, "PEXPIREAT k 4000000000000 GT");
    IT_INT(0, it_c, "EXPIREAT k 3000000000 GT");
    IT_INT(1, it_c, "EXPIREAT k 3000000000 LT");
    const char *nx = "ERR NX and XX, GT or LT options at the same time are not compatible";
    IT_ERR(nx, it_c, "EXPIRE k 10 NX XX");
    IT_ERR(nx, it_c, "EXPIRE k 10 NX GT");
    IT_ERR(nx, it_c, "PEXPIRE k 10 NX LT");
    IT_ERR("ERR GT and LT options at the same time are not compatible", it_c, "EXPIRE k 10 GT LT");
    IT_ERR("ERR Unsupported option foo", it_c, "EXPIRE k 10 foo");
    IT_INT(3000000000LL, it_c, "EXPIRETIME k");
}

Test(expire, persist) {
    IT_OK(it_c, "SET k v EX 100");
    IT_INT(1, it_c, "PERSIST k");
    IT_INT(-1, it_c, "TTL k");
    IT_INT(0, it_c, "PERSIST k");
    IT_INT(0, it_c, "PERSIST nosuch");
    IT_STR("v", it_c, "GET k");
}

/* Polls until EXISTS key is 0 or limit_ms pass; returns the elapsed milliseconds. */
static long long wait_gone(const char *key, long long limit_ms) {
    long long start = it_now_ms();
    while (it_now_ms() - start < limit_ms) {
        redisReply *r = redisCommand(it_c, "EXISTS %s", key);
        cr_assert_not_null(r);
        long long n = r->integer;
        freeReplyObject(r);
        if (n == 0) {
            break;
        }
        it_sleep_ms(10);
    }
    return it_now_ms() - start;
}

Test(expire, short_ttl_expires) {
    IT_OK(it_c, "SET a v PX 150");
    IT_OK(it_c, "SET b v");
    IT_INT(1, it_c, "PEXPIRE b 200");
    IT_OK(it_c, "PSETEX c 100 v");
    IT_STR("v", it_c, "GET a");
    long long waited = wait_gone("a", 3000);
    cr_assert(waited >= 100 && waited < 3000, "a expired after %lld ms (ttl 150)", waited);
    IT_NIL(it_c, "GET a");
    IT_INT(-2, it_c, "TTL a");
    waited = wait_gone("b", 3000);
    cr_assert_lt(waited, 3000);
    IT_NIL(it_c, "GET b");
    IT_NIL(it_c, "GET c");
    IT_INT(0, it_c, "DBSIZE");
}

Test(expire, active_expiry_without_access) {
    /* Keys nobody reads must still go away (active expiry), visible in DBSIZE. */
    for (int i = 0; i < 50; i++) {
        IT_OK(it_c, "SET k%d v PX 100", i);
    }
    IT_OK(it_c, "SET keep v");
    long long start = it_now_ms();
    long long n = -1;
    while (it_now_ms() - start < 5000) {
        redisReply *r = redisCommand(it_c, "DBSIZE");
        cr_assert_not_null(r);
        n = r->integer;
        freeReplyObject(r);
        if (n == 1) {
            break;
        }
        it_sleep_ms(50);
    }
    cr_assert_eq(n, 1, "50 expired keys are reclaimed within 5 s without access, dbsize %lld", n);
    redisReply *info = it_cmd(it_c, "INFO stats");
    const char *p = strstr(info->str, "\r\nexpired_keys:");
    cr_assert_not_null(p, "INFO stats has expired_keys");
    cr_assert_geq(atoll(p + 15), 50, "expired_keys counts them: %s", p);
}

Test(expire, overwrite_clears_ttl) {
    IT_OK(it_c, "SET k v PX 200");
    IT_OK(it_c, "SET k w");
    it_sleep_ms(300);
    IT_STR("w", it_c, "GET k");
    IT_INT(-1, it_c, "TTL k");
}

Test(expire, ttl_rounds_to_nearest_second) {
    IT_OK(it_c, "SET k v PX 1800");
    IT_INT(2, it_c, "TTL k");
    IT_OK(it_c, "SET k v PX 1400");
    IT_INT(1, it_c, "TTL k");
    IT_INT(1, it_c, "PEXPIREAT k 4000000000600");
    IT_INT(4000000001LL, it_c, "EXPIRETIME k");
    IT_INT(1, it_c, "PEXPIREAT k 4000000000400");
    IT_INT(4000000000LL, it_c, "EXPIRETIME k");
}

Test(expire, expired_keys_are_invisible) {
    /* More keys than one active-expiry cycle reclaims, so some are logically expired but still
     * stored when we look: every read path must hide them. */
    for (int i = 0; i < 300; i += 100) {
        for (int j = i; j < i + 100; j++) {
            cr_assert_eq(redisAppendCommand(it_c, "SET gone:%d v PX 50", j), REDIS_OK);
        }
        for (int j = i; j < i + 100; j++) {
            void *rv;
            cr_assert_eq(redisGetReply(it_c, &rv), REDIS_OK);
            freeReplyObject(rv);
        }
    }
    IT_OK(it_c, "SET keep v");
    it_sleep_ms(120);
    redisReply *r = it_cmd(it_c, "KEYS *");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 1, "KEYS hides expired keys, got %zu", r->elements);
    cr_assert_str_eq(r->element[0]->str, "keep");
    r = it_cmd(it_c, "SCAN 0 COUNT 1000");
    cr_assert_str_eq(r->element[0]->str, "0");
    cr_assert_eq(r->element[1]->elements, 1, "SCAN hides expired keys, got %zu",
                 r->element[1]->elements);
    IT_STR("keep", it_c, "RANDOMKEY");
    r = it_cmd(it_c, "MGET gone:0 gone:150 gone:299 keep");
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_NIL);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_NIL);
    cr_assert_eq(r->element[2]->type, REDIS_REPLY_NIL);
    cr_assert_str_eq(r->element[3]->str, "v");
    IT_INT(1, it_c, "EXISTS gone:1 gone:2 keep");
    IT_INT(0, it_c, "STRLEN gone:3");
    IT_STATUS("none", it_c, "TYPE gone:4");
    IT_INT(0, it_c, "DEL gone:5");
    IT_ERR("ERR no such key", it_c, "RENAME gone:6 x");
    IT_NIL(it_c, "SET gone:7 w XX");
    IT_INT(1, it_c, "INCR gone:8"); /* starts from 0, not from the expired value */
    IT_INT(-1, it_c, "TTL gone:8");
}
