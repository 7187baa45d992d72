/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for string commands: SET and its options, GET, GETDEL, GETEX, GETSET, MGET,
 * MSET, MSETNX, SETNX, SETEX, PSETEX, STRLEN, APPEND, GETRANGE, SETRANGE, the INCR family,
 * INCRBYFLOAT, the crescent verbs PUT/REMOVE, binary-safe and large values, and a 100,000-pair
 * pipeline. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

TestSuite(strings, .init = it_setup, .fini = it_teardown, .timeout = 60);

static long long wall_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static long long pttl(const char *key) {
    redisReply *r = it_cmd(it_c, "PTTL %s", key);
    IT_TYPE(r, REDIS_REPLY_INTEGER);
    return r->integer;
}

Test(strings, set_get_basic) {
    IT_OK(it_c, "SET k v");
    IT_STR("v", it_c, "GET k");
    IT_OK(it_c, "SET k v2");
    IT_STR("v2", it_c, "GET k");
    IT_NIL(it_c, "GET missing");
    IT_OK(it_c, "SET %s %s", "", "");
    IT_STR("", it_c, "GET %s", "");
    IT_ERR("ERR wrong number of arguments for 'get' command", it_c, "GET a b");
    IT_ERR("ERR wrong number of arguments for 'set' command", it_c, "SET a");
}

Test(strings, set_expire_options) {
    IT_OK(it_c, "SET k v EX 100");
    long long t = pttl("k");
    cr_assert(t > 99000 && t <= 100000, "EX 100 gives pttl %lld", t);
    IT_OK(it_c, "SET k v PX 5000");
    t = pttl("k");
    cr_assert(t > 4000 && t <= 5000, "PX 5000 gives pttl %lld", t);
    IT_OK(it_c, "SET k v EXAT %lld", wall_ms() / 1000 + 200);
    t = pttl("k");
    cr_assert(t > 198000 && t <= 200000, "EXAT now+200 gives pttl %lld", t);
    IT_OK(it_c, "SET k v PXAT %lld", wall_ms() + 30000);
    t = pttl("k");
    cr_assert(t > 28000 && t <= 30000, "PXAT now+30000 gives pttl %lld", t);
    IT_OK(it_c, "SET k v ex 100"); /* options are case-insensitive */
    IT_OK(it_c, "SET k v2 KEEPTTL");
    t = pttl("k");
    cr_assert(t > 90000, "KEEPTTL keeps the ttl: %lld", t);
    IT_STR("v2", it_c, "GET k");
    IT_OK(it_c, "SET k v3");
    IT_INT(-1, it_c, "TTL k");
    /* An absolute time in the past stores then expires the key at once. */
    IT_OK(it_c, "SET k v PXAT 1");
    IT_NIL(it_c, "GET k");
    IT_INT(0, it_c, "EXISTS k");
}

Test(strings, set_expire_errors) {
    const char *invalid = "ERR invalid expire time in 'set' command";
    IT_ERR(invalid, it_c, "SET k v EX 0");
    IT_ERR(invalid, it_c, "SET k v EX -1");
    IT_ERR(invalid, it_c, "SET k v PX 0");
    IT_ERR(invalid, it_c, "SET k v PX -100");
    IT_ERR(invalid, it_c, "SET k v EXAT 0");
    IT_ERR(invalid, it_c, "SET k v PXAT 0");
    IT_ERR(invalid, it_c, "SET k v EX 9999999999999999");
    IT_ERR("ERR value is not an integer or out of range", it_c, "SET k v EX x");
    IT_ERR("ERR value is not an integer or out of range", it_c, "SET k v PX 1.5");
    IT_INT(0, it_c, "EXISTS k");
}

Test(strings, set_syntax_errors) {
    const char *syntax = "ERR syntax error";
    IT_ERR(syntax, it_c, "SET k v NX XX");
    IT_ERR(syntax, it_c, "SET k v EX 10 PX 100");
    IT_ERR(syntax, it_c, "SET k v KEEPTTL EX 10");
    IT_ERR(syntax, it_c, "SET k v EX 10 KEEPTTL");
    IT_ERR(syntax, it_c, "SET k v EX 10 EXAT 10");
    IT_ERR(syntax, it_c, "SET k v foo");
    IT_ERR(syntax, it_c, "SET k v EX");
    IT_ERR(syntax, it_c, "SET k v PXAT");
    IT_INT(0, it_c, "EXISTS k");
}

Test(strings, set_nx_xx_get) {
    IT_NIL(it_c, "SET k v XX");
    IT_INT(0, it_c, "EXISTS k");
    IT_OK(it_c, "SET k v NX");
    IT_NIL(it_c, "SET k v2 NX");
    IT_STR("v", it_c, "GET k");
    IT_OK(it_c, "SET k v3 XX");
    IT_STR("v3", it_c, "GET k");
    /* GET returns the old value (nil if none) and still sets. */
    IT_NIL(it_c, "SET g a GET");
    IT_STR("a", it_c, "SET g b GET");
    IT_STR("b", it_c, "GET g");
    /* NX GET (allowed since 7.0): the old value comes back and nothing is written. */
    IT_STR("b", it_c, "SET g c NX GET");
    IT_STR("b", it_c, "GET g");
    IT_NIL(it_c, "SET newkey x XX GET");
    IT_INT(0, it_c, "EXISTS newkey");
    IT_STR("b", it_c, "SET g d XX GET EX 100");
    cr_assert_gt(pttl("g"), 90000);
}

Test(strings, getdel_getset) {
    IT_OK(it_c, "SET k v");
    IT_STR("v", it_c, "GETDEL k");
    IT_NIL(it_c, "GETDEL k");
    IT_INT(0, it_c, "EXISTS k");
    IT_NIL(it_c, "GETSET g 1");
    IT_STR("1", it_c, "GETSET g 2");
    IT_STR("2", it_c, "GET g");
    IT_OK(it_c, "SET t v EX 100");
    IT_STR("v", it_c, "GETSET t w");
    IT_INT(-1, it_c, "TTL t"); /* GETSET discards the ttl */
    IT_ERR("ERR wrong number of arguments for 'getdel' command", it_c, "GETDEL a b");
    IT_ERR("ERR wrong number of arguments for 'getset' command", it_c, "GETSET a");
}

Test(strings, getex) {
    IT_OK(it_c, "SET k v");
    IT_STR("v", it_c, "GETEX k");
    IT_INT(-1, it_c, "TTL k");
    IT_STR("v", it_c, "GETEX k EX 100");
    cr_assert_gt(pttl("k"), 99000);
    IT_STR("v", it_c, "GETEX k PX 50000");
    long long t = pttl("k");
    cr_assert(t > 49000 && t <= 50000, "pttl %lld", t);
    IT_STR("v", it_c, "GETEX k EXAT %lld", wall_ms() / 1000 + 300);
    cr_assert_gt(pttl("k"), 298000);
    IT_STR("v", it_c, "GETEX k PXAT %lld", wall_ms() + 40000);
    t = pttl("k");
    cr_assert(t > 38000 && t <= 40000, "pttl %lld", t);
    IT_STR("v", it_c, "GETEX k PERSIST");
    IT_INT(-1, it_c, "TTL k");
    IT_NIL(it_c, "GETEX missing EX 10");
    IT_ERR("ERR syntax error", it_c, "GETEX k PERSIST EX 10");
    IT_ERR("ERR syntax error", it_c, "GETEX k EX 10 PX 10");
    IT_ERR("ERR syntax error", it_c, "GETEX k foo");
    IT_ERR("ERR invalid expire time in 'getex' command", it_c, "GETEX k EX 0");
    IT_ERR("ERR invalid expire time in 'getex' command", it_c, "GETEX k PX -1");
    IT_ERR("ERR invalid expire time in 'getex' command", it_c, "GETEX k EXAT 0");
    IT_ERR("ERR value is not an integer or out of range", it_c, "GETEX k EX x");
    /* A past absolute time returns the value and deletes the key. */
    IT_STR("v", it_c, "GETEX k PXAT 1");
    IT_INT(0, it_c, "EXISTS k");
}

Test(strings, mget_mset_msetnx) {
    IT_OK(it_c, "MSET a 1 b 2 c 3");
    redisReply *r = it_cmd(it_c, "MGET a b missing c");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4);
    cr_assert_str_eq(r->element[0]->str, "1");
    cr_assert_str_eq(r->element[1]->str, "2");
    cr_assert_eq(r->element[2]->type, REDIS_REPLY_NIL);
    cr_assert_str_eq(r->element[3]->str, "3");
    IT_OK(it_c, "MSET a 10 a 11"); /* the last one wins */
    IT_STR("11", it_c, "GET a");
    IT_ERR("ERR wrong number of arguments for 'mset' command", it_c, "MSET a");
    IT_ERR("ERR wrong number of arguments for 'mset' command", it_c, "MSET a 1 b");
    IT_ERR("ERR wrong number of arguments for 'mget' command", it_c, "MGET");
    IT_INT(0, it_c, "MSETNX x 1 a 2");
    IT_INT(0, it_c, "EXISTS x");
    IT_INT(1, it_c, "MSETNX x 1 y 2");
    IT_STR("2", it_c, "GET y");
    IT_ERR("ERR wrong number of arguments for 'msetnx' command", it_c, "MSETNX a 1 b");
    IT_OK(it_c, "SET t v EX 100");
    IT_OK(it_c, "MSET t w");
    IT_INT(-1, it_c, "TTL t"); /* MSET clears the ttl */
}

Test(strings, setnx_setex_psetex) {
    IT_INT(1, it_c, "SETNX k v");
    IT_INT(0, it_c, "SETNX k w");
    IT_STR("v", it_c, "GET k");
    IT_OK(it_c, "SETEX e 100 v");
    long long t = pttl("e");
    cr_assert(t > 99000 && t <= 100000, "pttl %lld", t);
    IT_OK(it_c, "PSETEX p 5000 v");
    t = pttl("p");
    cr_assert(t > 4000 && t <= 5000, "pttl %lld", t);
    IT_STR("v", it_c, "GET p");
    IT_ERR("ERR invalid expire time in 'setex' command", it_c, "SETEX e 0 v");
    IT_ERR("ERR invalid expire time in 'setex' command", it_c, "SETEX e -5 v");
    IT_ERR("ERR invalid expire time in 'psetex' command", it_c, "PSETEX e 0 v");
    IT_ERR("ERR value is not an integer or out of range", it_c, "SETEX e x v");
    IT_ERR("ERR wrong number of arguments for 'setex' command", it_c, "SETEX k 10 v x");
    IT_ERR("ERR wrong number of arguments for 'setnx' command", it_c, "SETNX k");
}

Test(strings, strlen_append) {
    IT_INT(0, it_c, "STRLEN missing");
    IT_INT(3, it_c, "APPEND k abc");
    IT_INT(6, it_c, "APPEND k def");
    IT_STR("abcdef", it_c, "GET k");
    IT_INT(6, it_c, "STRLEN k");
    IT_OK(it_c, "SET n 123");
    IT_INT(5, it_c, "APPEND n 45");
    IT_STR("12345", it_c, "GET n");
    IT_INT(5, it_c, "STRLEN n");
    IT_OK(it_c, "SET t v EX 100");
    IT_INT(2, it_c, "APPEND t w");
    cr_assert_gt(pttl("t"), 90000, "APPEND keeps the ttl");
    IT_ERR("ERR wrong number of arguments for 'append' command", it_c, "APPEND k");
}

Test(strings, getrange) {
    IT_OK(it_c, "SET k %s", "Hello World");
    IT_STR("Hello", it_c, "GETRANGE k 0 4");
    IT_STR("World", it_c, "GETRANGE k -5 -1");
    IT_STR("", it_c, "GETRANGE k 5 2");
    IT_STR("Hello World", it_c, "GETRANGE k 0 100");
    IT_STR("Hel", it_c, "GETRANGE k -100 2");
    IT_STR("", it_c, "GETRANGE k -1 -5");
    IT_STR("", it_c, "GETRANGE k 11 20");
    IT_STR("d", it_c, "GETRANGE k -1 -1");
    IT_STR("", it_c, "GETRANGE missing 0 1");
    IT_ERR("ERR value is not an integer or out of range", it_c, "GETRANGE k x 1");
    IT_ERR("ERR wrong number of arguments for 'getrange' command", it_c, "GETRANGE k 0");
}

Test(strings, setrange) {
    IT_OK(it_c, "SET k %s", "Hello World");
    IT_INT(11, it_c, "SETRANGE k 6 Redis");
    IT_STR("Hello Redis", it_c, "GET k");
    IT_INT(5, it_c, "SETRANGE z 3 ab");
    redisReply *r = it_cmd(it_c, "GET z");
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert_eq(r->len, 5);
    cr_assert(memcmp(r->str, "\0\0\0ab", 5) == 0, "SETRANGE pads with zero bytes");
    IT_INT(0, it_c, "SETRANGE empty 0 %s", "");
    IT_INT(0, it_c, "EXISTS empty");
    IT_INT(11, it_c, "SETRANGE k 0 %s", "");
    IT_ERR("ERR offset is out of range", it_c, "SETRANGE k -1 x");
    IT_ERR("ERR string exceeds maximum allowed size (proto-max-bulk-len)", it_c,
           "SETRANGE k 536870912 x");
    IT_ERR("ERR string exceeds maximum allowed size (proto-max-bulk-len)", it_c,
           "SETRANGE k 536870911 xy");
    IT_ERR("ERR value is not an integer or out of range", it_c, "SETRANGE k x y");
    IT_STR("Hello Redis", it_c, "GET k");
}

Test(strings, incr_decr) {
    IT_INT(1, it_c, "INCR n");
    IT_INT(2, it_c, "INCR n");
    IT_INT(1, it_c, "DECR n");
    IT_INT(-1, it_c, "DECR other");
    IT_INT(11, it_c, "INCRBY n 10");
    IT_INT(1, it_c, "INCRBY n -10");
    IT_INT(-2, it_c, "DECRBY n 3");
    IT_INT(5, it_c, "DECRBY n -7");
    IT_STR("5", it_c, "GET n");
    IT_OK(it_c, "SET t 10 EX 100");
    IT_INT(11, it_c, "INCR t");
    cr_assert_gt(pttl("t"), 90000, "INCR keeps the ttl");
    IT_OK(it_c, "SET neg -10");
    IT_INT(-9, it_c, "INCR neg");
}

Test(strings, incr_errors) {
    const char *notint = "ERR value is not an integer or out of range";
    const char *overflow = "ERR increment or decrement would overflow";
    IT_OK(it_c, "SET s abc");
    IT_ERR(notint, it_c, "INCR s");
    IT_ERR(notint, it_c, "DECR s");
    const char *bad[] = {" 1", "1 ", "0x10", "01", "+1", "1.5", "", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        IT_OK(it_c, "SET s %s", bad[i]);
        IT_ERR(notint, it_c, "INCR s");
    }
    IT_OK(it_c, "SET n 5");
    IT_ERR(notint, it_c, "INCRBY n x");
    IT_ERR(notint, it_c, "INCRBY n 1.5");
    IT_ERR(notint, it_c, "INCRBY n 99999999999999999999");
    IT_ERR(notint, it_c, "DECRBY n x");
    IT_OK(it_c, "SET max 9223372036854775807");
    IT_ERR(overflow, it_c, "INCR max");
    IT_ERR(overflow, it_c, "INCRBY max 1");
    IT_OK(it_c, "SET min -9223372036854775808");
    IT_ERR(overflow, it_c, "DECR min");
    IT_ERR(overflow, it_c, "DECRBY min 1");
    IT_ERR(overflow, it_c, "INCRBY min -1");
    IT_ERR("ERR decrement would overflow", it_c, "DECRBY n -9223372036854775808");
    IT_STR("9223372036854775807", it_c, "GET max");
    IT_INT(9223372036854775807LL, it_c, "INCRBY zero 9223372036854775807");
}

Test(strings, incrbyfloat) {
    IT_STR("3", it_c, "INCRBYFLOAT f 3");
    IT_STR("3.5", it_c, "INCRBYFLOAT f 0.5");
    IT_OK(it_c, "SET f 10.50");
    IT_STR("10.6", it_c, "INCRBYFLOAT f 0.1");
    IT_STR("5.6", it_c, "INCRBYFLOAT f -5");
    /* Redis computes in long double and prints with %.17Lg. */
    IT_STR("0.1", it_c, "INCRBYFLOAT h 0.1");
    IT_STR("0.3", it_c, "INCRBYFLOAT h 0.2");
    IT_OK(it_c, "SET ld 10.6");
    IT_STR("5010.60000000000000009", it_c, "INCRBYFLOAT ld 5000");
    IT_OK(it_c, "SET i 5");
    IT_STR("5000", it_c, "INCRBYFLOAT i 4995");
    IT_STR("5000", it_c, "GET i");
    IT_STR("5200", it_c, "INCRBYFLOAT i 2.0e2");
    IT_OK(it_c, "SET t 1 EX 100");
    IT_STR("2", it_c, "INCRBYFLOAT t 1");
    cr_assert_gt(pttl("t"), 90000, "INCRBYFLOAT keeps the ttl");
    IT_OK(it_c, "SET s abc");
    IT_ERR("ERR value is not a valid float", it_c, "INCRBYFLOAT s 1");
    IT_ERR("ERR value is not a valid float", it_c, "INCRBYFLOAT f x");
    IT_ERR("ERR value is not a valid float", it_c, "INCRBYFLOAT f nan");
    IT_ERR("ERR increment would produce NaN or Infinity", it_c, "INCRBYFLOAT f inf");
    IT_ERR("ERR increment would produce NaN or Infinity", it_c, "INCRBYFLOAT f -inf");
    IT_STR("5.6", it_c, "GET f");
    IT_ERR("ERR wrong number of arguments for 'incrbyfloat' command", it_c, "INCRBYFLOAT f");
}

Test(strings, put_remove_verbs) {
    IT_CRESCENT_ONLY();
    IT_OK(it_c, "PUT k v");
    IT_STR("v", it_c, "GET k");
    IT_OK(it_c, "PUT k w");
    IT_STR("w", it_c, "GET k");
    IT_OK(it_c, "SET a 1");
    IT_INT(2, it_c, "REMOVE k a missing");
    IT_INT(0, it_c, "REMOVE k");
    IT_NIL(it_c, "GET k");
    IT_ERR("ERR wrong number of arguments for 'put' command", it_c, "PUT k");
    IT_ERR("ERR wrong number of arguments for 'remove' command", it_c, "REMOVE");
}

Test(strings, binary_safe_values) {
    const char v[] = "a\0b\r\nc\0\r\n\xff";
    size_t vlen = sizeof(v) - 1;
    IT_OK(it_c, "SET %b %b", "bin\0key", (size_t)7, v, vlen);
    redisReply *r = it_cmd(it_c, "GET %b", "bin\0key", (size_t)7);
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert_eq(r->len, vlen);
    cr_assert(memcmp(r->str, v, vlen) == 0, "value with NUL and CRLF round-trips");
    IT_INT(0, it_c, "EXISTS bin");
    IT_INT((long long)vlen * 2, it_c, "APPEND %b %b", "bin\0key", (size_t)7, v, vlen);
    r = it_cmd(it_c, "GET %b", "bin\0key", (size_t)7);
    cr_assert_eq(r->len, vlen * 2);
    cr_assert(memcmp(r->str, v, vlen) == 0 && memcmp(r->str + vlen, v, vlen) == 0);
    r = it_cmd(it_c, "GETRANGE %b 1 5", "bin\0key", (size_t)7);
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert_eq(r->len, 5);
    cr_assert(memcmp(r->str, "\0b\r\nc", 5) == 0);
    IT_INT((long long)vlen * 2, it_c, "STRLEN %b", "bin\0key", (size_t)7);
}

static void big_roundtrip(size_t size) {
    char *v = malloc(size);
    cr_assert_not_null(v);
    for (size_t i = 0; i < size; i++) {
        v[i] = (char)((i * 2654435761u) >> 13);
    }
    IT_OK(it_c, "SET big %b", v, size);
    redisReply *r = it_cmd(it_c, "GET big");
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert_eq(r->len, size, "length %zu", r->len);
    cr_assert(memcmp(r->str, v, size) == 0, "%zu-byte value round-trips byte-exact", size);
    IT_INT((long long)size, it_c, "STRLEN big");
    r = it_cmd(it_c, "GETRANGE big %lld %lld", (long long)size - 10, (long long)size - 1);
    cr_assert_eq(r->len, 10);
    cr_assert(memcmp(r->str, v + size - 10, 10) == 0);
    free(v);
}

Test(strings, value_1mib) {
    big_roundtrip(1u << 20);
}

Test(strings, value_16mib) {
    big_roundtrip(16u << 20);
}

Test(strings, pipeline_100k) {
    enum { N = 100000 };
    for (int i = 0; i < N; i++) {
        cr_assert_eq(redisAppendCommand(it_c, "SET p:%d v%d", i, i * 7), REDIS_OK);
        cr_assert_eq(redisAppendCommand(it_c, "GET p:%d", i), REDIS_OK);
    }
    for (int i = 0; i < N; i++) {
        void *rv = NULL;
        cr_assert_eq(redisGetReply(it_c, &rv), REDIS_OK, "reply %d: %s", i, it_c->errstr);
        redisReply *r = rv;
        cr_assert(r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0, "SET %d", i);
        freeReplyObject(r);
        cr_assert_eq(redisGetReply(it_c, &rv), REDIS_OK, "reply %d: %s", i, it_c->errstr);
        r = rv;
        char want[32];
        snprintf(want, sizeof(want), "v%d", i * 7);
        cr_assert(r->type == REDIS_REPLY_STRING && strcmp(r->str, want) == 0, "GET p:%d wants %s",
                  i, want);
        freeReplyObject(r);
    }
    IT_INT(N, it_c, "DBSIZE");
}

Test(strings, concurrent_incr_is_atomic) {
    /* Four connections (spread over the server's I/O threads) pipeline INCRs on one key. */
    enum { CONNS = 4, PER = 2500 };
    redisContext *cs[CONNS];
    for (int i = 0; i < CONNS; i++) {
        cs[i] = it_connect(&it_srv);
        for (int j = 0; j < PER; j++) {
            cr_assert_eq(redisAppendCommand(cs[i], "INCR counter"), REDIS_OK);
            cr_assert_eq(redisAppendCommand(cs[i], "APPEND log%d x", i), REDIS_OK);
        }
    }
    for (int i = 0; i < CONNS; i++) { /* send everything before reading anything */
        int done = 0;
        while (!done) {
            cr_assert_eq(redisBufferWrite(cs[i], &done), REDIS_OK);
        }
    }
    for (int i = 0; i < CONNS; i++) {
        long long last = 0;
        for (int j = 0; j < PER * 2; j++) {
            void *rv;
            cr_assert_eq(redisGetReply(cs[i], &rv), REDIS_OK);
            redisReply *r = rv;
            cr_assert_eq(r->type, REDIS_REPLY_INTEGER);
            if (j % 2 == 0) {
                cr_assert_gt(r->integer, last, "INCR replies increase per connection");
                last = r->integer;
            } else {
                cr_assert_eq(r->integer, j / 2 + 1);
            }
            freeReplyObject(r);
        }
        it_close(cs[i]);
    }
    IT_STR("10000", it_c, "GET counter");
    IT_INT(PER, it_c, "STRLEN log3");
}
