/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for the aggregate types: lists (LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN
 * LRANGE LINDEX LSET LREM LTRIM LINSERT LPOS LMOVE RPOPLPUSH LMPOP), sets (SADD SREM SCARD
 * SISMEMBER SMISMEMBER SMEMBERS SPOP SRANDMEMBER SSCAN SUNION SINTER SDIFF and their STORE forms,
 * SINTERCARD SMOVE), hashes (HSET HMSET HSETNX HGET HMGET HDEL HLEN HEXISTS HSTRLEN HGETALL
 * HKEYS HVALS HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN) and sorted sets (ZADD with NX XX GT LT CH
 * INCR, ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZCOUNT ZLEXCOUNT ZRANK ZREVRANK ZRANGE with BYSCORE
 * BYLEX REV LIMIT WITHSCORES, ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX
 * ZREVRANGEBYLEX ZREMRANGEBYRANK/SCORE/LEX ZPOPMIN ZPOPMAX ZRANDMEMBER ZSCAN ZRANGESTORE ZUNION
 * ZINTER ZDIFF and their STORE forms, ZINTERCARD ZMPOP): replies, exact error strings, WRONGTYPE
 * across types, TYPE names, empty aggregates deleting their key, COPY/RENAME of aggregates,
 * WATCH aborted by an in-place change, RESP3 encodings (maps, sets, doubles, score pairs) on
 * the wire, a randomized list model, concurrent LMOVE/SMOVE from four connections, a
 * 100,000-element list, and aggregates kept within --memory.
 * Every expectation holds for redis-server 7.0 too (CRESCENT_TEST_SERVER=redis). */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(types, .init = it_setup, .fini = it_teardown, .timeout = 60);

#define WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"
#define NOT_INT   "ERR value is not an integer or out of range"
#define NOT_FLOAT "ERR value is not a valid float"
#define NOT_POS   "ERR value is out of range, must be positive"

static char rep_buf[8192];

/* Runs a command on it_c and returns its reply rendered by it_reply_str (static buffer). */
static const char *rep(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(it_c, fmt, ap);
    va_end(ap);
    cr_assert(r != NULL, "no reply to %s", fmt);
    it_reply_str(r, rep_buf, sizeof(rep_buf));
    freeReplyObject(r);
    return rep_buf;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs a command that returns an array of strings; returns them sorted, joined by ",". */
static const char *rep_sorted(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(it_c, fmt, ap);
    va_end(ap);
    cr_assert(r != NULL && r->type == REDIS_REPLY_ARRAY, "array expected for %s", fmt);
    char **v = calloc(r->elements + 1, sizeof(*v));
    for (size_t i = 0; i < r->elements; i++) {
        cr_assert_eq(r->element[i]->type, REDIS_REPLY_STRING);
        v[i] = r->element[i]->str;
    }
    qsort(v, r->elements, sizeof(*v), cmp_str);
    rep_buf[0] = '\0';
    for (size_t i = 0; i < r->elements; i++) {
        if (i)
            strcat(rep_buf, ",");
        strncat(rep_buf, v[i], sizeof(rep_buf) - strlen(rep_buf) - 2);
    }
    free(v);
    freeReplyObject(r);
    return rep_buf;
}

/* Sends a RESP2 inline command on a raw socket and returns the raw reply (static buffer). */
static const char *raw(int fd, const char *cmd) {
    static char buf[4096];
    char line[512];
    snprintf(line, sizeof(line), "%s\r\n", cmd);
    it_raw_send(fd, line, strlen(line));
    size_t len;
    char *got = it_raw_read(fd, &len);
    snprintf(buf, sizeof(buf), "%s", got);
    free(got);
    return buf;
}

/* A raw connection switched to RESP3 (HELLO 3 reply discarded). */
static int raw3_open(void) {
    int fd = it_raw_open(it_srv.port);
    it_raw_send(fd, "HELLO 3\r\n", 9);
    size_t len;
    free(it_raw_read(fd, &len));
    return fd;
}

/* ---------------------------------------------------------------- lists */

Test(types, list_push_pop) {
    IT_INT(3, it_c, "RPUSH l a b c");
    IT_INT(5, it_c, "LPUSH l y z");
    cr_assert_str_eq(rep("LRANGE l 0 -1"), "[\"z\", \"y\", \"a\", \"b\", \"c\"]");
    IT_INT(5, it_c, "LLEN l");
    IT_STR("z", it_c, "LPOP l");
    IT_STR("c", it_c, "RPOP l");
    cr_assert_str_eq(rep("LPOP l 2"), "[\"y\", \"a\"]");
    cr_assert_str_eq(rep("RPOP l 0"), "[]");
    cr_assert_str_eq(rep("RPOP l 10"), "[\"b\"]");
    IT_INT(0, it_c, "EXISTS l"); /* popping the last element deletes the key */
    IT_NIL(it_c, "LPOP l");
    cr_assert_str_eq(rep("LPOP l 3"), "(nil)"); /* null array */
    IT_INT(0, it_c, "LPUSHX l a");
    IT_INT(0, it_c, "RPUSHX l a");
    IT_INT(0, it_c, "EXISTS l");
    IT_INT(1, it_c, "RPUSH l m");
    IT_INT(2, it_c, "RPUSHX l n");
    IT_INT(4, it_c, "LPUSHX l k j");
    cr_assert_str_eq(rep("LRANGE l 0 -1"), "[\"j\", \"k\", \"m\", \"n\"]");
    IT_INT(0, it_c, "LLEN nokey");
    IT_ERR(NOT_POS, it_c, "LPOP l -1");
    IT_ERR(NOT_POS, it_c, "RPOP l x");
    IT_ERR("ERR wrong number of arguments for 'lpop' command", it_c, "LPOP l 1 2");
    IT_ERR("ERR wrong number of arguments for 'lpush' command", it_c, "LPUSH l");
}

Test(types, list_range_index) {
    IT_INT(6, it_c, "RPUSH l 0 1 2 3 4 5");
    cr_assert_str_eq(rep("LRANGE l 1 2"), "[\"1\", \"2\"]");
    cr_assert_str_eq(rep("LRANGE l -2 -1"), "[\"4\", \"5\"]");
    cr_assert_str_eq(rep("LRANGE l -100 1"), "[\"0\", \"1\"]");
    cr_assert_str_eq(rep("LRANGE l 4 100"), "[\"4\", \"5\"]");
    cr_assert_str_eq(rep("LRANGE l 3 2"), "[]");
    cr_assert_str_eq(rep("LRANGE l 6 10"), "[]");
    cr_assert_str_eq(rep("LRANGE nokey 0 -1"), "[]");
    IT_ERR(NOT_INT, it_c, "LRANGE l 0 x");
    IT_STR("0", it_c, "LINDEX l 0");
    IT_STR("5", it_c, "LINDEX l -1");
    IT_NIL(it_c, "LINDEX l 6");
    IT_NIL(it_c, "LINDEX l -7");
    IT_NIL(it_c, "LINDEX nokey 0");
    IT_ERR(NOT_INT, it_c, "LINDEX l x");
    /* Wrap-around of the ring: push on both ends past the initial capacity. */
    for (int i = 0; i < 20; i++) {
        IT_INT(7 + 2 * i, it_c, "LPUSH l L%d", i);
        IT_INT(8 + 2 * i, it_c, "RPUSH l R%d", i);
    }
    IT_STR("L19", it_c, "LINDEX l 0");
    IT_STR("0", it_c, "LINDEX l 20");
    IT_STR("R19", it_c, "LINDEX l -1");
    for (int i = 0; i < 19; i++)
        IT_OK(it_c, "LTRIM l 1 -2");
    cr_assert_str_eq(rep("LRANGE l 0 1"), "[\"L0\", \"0\"]");
    IT_STR("R0", it_c, "LINDEX l -1");
    IT_INT(8, it_c, "LLEN l");
}

Test(types, list_set_rem_trim) {
    IT_INT(5, it_c, "RPUSH l a b a c a");
    IT_OK(it_c, "LSET l 1 B");
    IT_OK(it_c, "LSET l -1 Z");
    cr_assert_str_eq(rep("LRANGE l 0 -1"), "[\"a\", \"B\", \"a\", \"c\", \"Z\"]");
    IT_ERR("ERR index out of range", it_c, "LSET l 5 x");
    IT_ERR("ERR index out of range", it_c, "LSET l -6 x");
    IT_ERR("ERR no such key", it_c, "LSET nokey 0 x");
    IT_ERR(NOT_INT, it_c, "LSET l x v");
    IT_INT(1, it_c, "LREM l -1 a");
    cr_assert_str_eq(rep("LRANGE l 0 -1"), "[\"a\", \"B\", \"c\", \"Z\"]");
    IT_INT(8, it_c, "RPUSH l a a a a");
    IT_INT(2, it_c, "LREM l 2 a");
    cr_assert_str_eq(rep("LRANGE l 0 -1"), "[\"B\", \"c\", \"Z\", \"a\", \"a\", \"a\"]");
    IT_INT(3, it_c, "LREM l 0 a");
    IT_INT(0, it_c, "LREM l 0 nothing");
    IT_INT(0, it_c, "LREM nokey 0 a");
    IT_ERR(NOT_INT, it_c, "LREM l x a");
    IT_OK(it_c, "LTRIM l 1 -1");
    cr_assert_str_eq(rep("LRANGE l 0 -1"), "[\"c\", \"Z\"]");
    IT_OK(it_c, "LTRIM l 0 100");
    IT_INT(2, it_c, "LLEN l");
    IT_OK(it_c, "LTRIM nokey 0 1");
    IT_ERR(NOT_INT, it_c, "LTRIM l a 1");
    IT_OK(it_c, "LTRIM l 5 1"); /* empty range: the key goes away */
    IT_INT(0, it_c, "EXISTS l");
    IT_INT(3, it_c, "RPUSH l x x x");
    IT_INT(3, it_c, "LREM l 0 x");
    IT_INT(0, it_c, "EXISTS l");
}

/* ---------------------------------------------------------------- sets */

Test(types, set_basic) {
    IT_INT(3, it_c, "SADD s a b c");
    IT_INT(1, it_c, "SADD s c d");
    IT_INT(4, it_c, "SCARD s");
    IT_INT(0, it_c, "SCARD nokey");
    IT_INT(1, it_c, "SISMEMBER s a");
    IT_INT(0, it_c, "SISMEMBER s z");
    IT_INT(0, it_c, "SISMEMBER nokey a");
    cr_assert_str_eq(rep("SMISMEMBER s a z d"), "[(integer) 1, (integer) 0, (integer) 1]");
    cr_assert_str_eq(rep_sorted("SMEMBERS s"), "a,b,c,d");
    cr_assert_str_eq(rep("SMEMBERS nokey"), "[]");
    IT_INT(2, it_c, "SREM s a b z");
    IT_INT(0, it_c, "SREM nokey a");
    cr_assert_str_eq(rep_sorted("SMEMBERS s"), "c,d");
    IT_INT(2, it_c, "SREM s c d");
    IT_INT(0, it_c, "EXISTS s");
    IT_INT(1, it_c, "SADD s %b", "", (size_t)0); /* the empty member */
    IT_INT(1, it_c, "SISMEMBER s %b", "", (size_t)0);
}

Test(types, set_pop_randmember) {
    IT_INT(5, it_c, "SADD s a b c d e");
    IT_NIL(it_c, "SPOP nokey");
    IT_NIL(it_c, "SRANDMEMBER nokey");
    cr_assert_str_eq(rep("SPOP nokey 2"), "[]");
    cr_assert_str_eq(rep("SRANDMEMBER nokey 2"), "[]");
    cr_assert_str_eq(rep("SPOP s 0"), "[]");
    cr_assert_str_eq(rep("SRANDMEMBER s 0"), "[]");
    IT_ERR(NOT_POS, it_c, "SPOP s -1");
    IT_ERR(NOT_POS, it_c, "SPOP s x");
    IT_ERR("ERR syntax error", it_c, "SPOP s 1 2");
    IT_ERR(NOT_INT, it_c, "SRANDMEMBER s x");
    IT_ERR("ERR syntax error", it_c, "SRANDMEMBER s 1 2");
    /* SRANDMEMBER: distinct members for a positive count, repeats allowed for a negative one. */
    redisReply *r = it_cmd(it_c, "SRANDMEMBER s 3");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 3);
    for (size_t i = 0; i < 3; i++) {
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(r->element[i]->str, r->element[j]->str);
        IT_INT(1, it_c, "SISMEMBER s %s", r->element[i]->str);
    }
    r = it_cmd(it_c, "SRANDMEMBER s -20");
    cr_assert_eq(r->elements, 20);
    cr_assert_str_eq(rep_sorted("SRANDMEMBER s 10"), "a,b,c,d,e");
    /* A count well below the size takes the other sampling path: still distinct members. */
    for (int i = 0; i < 100; i++)
        IT_INT(1, it_c, "SADD big m%d", i);
    r = it_cmd(it_c, "SRANDMEMBER big 20");
    cr_assert_eq(r->elements, 20);
    for (size_t i = 0; i < 20; i++)
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(r->element[i]->str, r->element[j]->str);
    IT_INT(5, it_c, "SCARD s"); /* SRANDMEMBER does not remove */
    r = it_cmd(it_c, "SPOP s");
    IT_TYPE(r, REDIS_REPLY_STRING);
    IT_INT(0, it_c, "SISMEMBER s %s", r->str);
    r = it_cmd(it_c, "SPOP s 2");
    cr_assert_eq(r->elements, 2);
    IT_INT(2, it_c, "SCARD s");
    r = it_cmd(it_c, "SPOP s 5"); /* more than there are: all of them, key deleted */
    cr_assert_eq(r->elements, 2);
    IT_INT(0, it_c, "EXISTS s");
    IT_INT(1, it_c, "SADD s last");
    IT_STR("last", it_c, "SPOP s");
    IT_INT(0, it_c, "EXISTS s");
}

/* ---------------------------------------------------------------- hashes */

Test(types, hash_basic) {
    IT_INT(2, it_c, "HSET h f1 v1 f2 v2");
    IT_INT(1, it_c, "HSET h f1 x f3 v3");
    IT_ERR("ERR wrong number of arguments for 'hset' command", it_c, "HSET h f1 v1 f2");
    IT_ERR("ERR wrong number of arguments for 'hset' command", it_c, "HSET h f1");
    IT_ERR("ERR wrong number of arguments for 'hmset' command", it_c, "HMSET h a 1 b");
    IT_OK(it_c, "HMSET h a 1 b 2");
    IT_STR("x", it_c, "HGET h f1");
    IT_NIL(it_c, "HGET h nofield");
    IT_NIL(it_c, "HGET nokey f1");
    cr_assert_str_eq(rep("HMGET h a nofield f2"), "[\"1\", (nil), \"v2\"]");
    cr_assert_str_eq(rep("HMGET nokey a b"), "[(nil), (nil)]");
    IT_INT(5, it_c, "HLEN h");
    IT_INT(0, it_c, "HLEN nokey");
    IT_INT(1, it_c, "HEXISTS h a");
    IT_INT(0, it_c, "HEXISTS h z");
    IT_INT(0, it_c, "HEXISTS nokey a");
    IT_INT(2, it_c, "HSTRLEN h f2");
    IT_INT(0, it_c, "HSTRLEN h z");
    IT_INT(0, it_c, "HSETNX h a 5");
    IT_STR("1", it_c, "HGET h a");
    IT_INT(1, it_c, "HSETNX h n 5");
    IT_INT(1, it_c, "HSETNX h2 n 5"); /* creates the key */
    cr_assert_str_eq(rep_sorted("HKEYS h"), "a,b,f1,f2,f3,n");
    cr_assert_str_eq(rep_sorted("HVALS h"), "1,2,5,v2,v3,x");
    cr_assert_str_eq(rep("HKEYS nokey"), "[]");
    cr_assert_str_eq(rep("HVALS nokey"), "[]");
    cr_assert_str_eq(rep("HGETALL nokey"), "[]");
    IT_INT(3, it_c, "HDEL h a b n nofield");
    IT_INT(0, it_c, "HDEL nokey a");
    IT_INT(3, it_c, "HLEN h");
    /* HGETALL: field/value pairs in the same order as HKEYS/HVALS. */
    IT_INT(2, it_c, "HDEL h f2 f3");
    cr_assert_str_eq(rep("HGETALL h"), "[\"f1\", \"x\"]");
    IT_INT(1, it_c, "HDEL h f1");
    IT_INT(0, it_c, "EXISTS h");
}

Test(types, hash_incr) {
    IT_INT(5, it_c, "HINCRBY h n 5");
    IT_INT(-5, it_c, "HINCRBY h n -10");
    IT_STR("-5", it_c, "HGET h n");
    IT_INT(1, it_c, "HSET h s abc");
    IT_ERR("ERR hash value is not an integer", it_c, "HINCRBY h s 1");
    IT_ERR(NOT_INT, it_c, "HINCRBY h n x");
    IT_ERR(NOT_INT, it_c, "HINCRBY h n 1.5");
    IT_INT(1, it_c, "HSET h big 9223372036854775807");
    IT_ERR("ERR increment or decrement would overflow", it_c, "HINCRBY h big 1");
    IT_STR("10.5", it_c, "HINCRBYFLOAT h f 10.5");
    IT_STR("10.6", it_c, "HINCRBYFLOAT h f 0.1");
    IT_STR("5000", it_c, "HINCRBYFLOAT h e 5.0e3");
    IT_STR("-0.5", it_c, "HINCRBYFLOAT h n 4.5");
    IT_ERR("ERR hash value is not a float", it_c, "HINCRBYFLOAT h s 1");
    IT_ERR(NOT_FLOAT, it_c, "HINCRBYFLOAT h f x");
    IT_ERR("ERR value is NaN or Infinity", it_c, "HINCRBYFLOAT h f inf");
    IT_INT(0, it_c, "HINCRBY nokey2 n 0") /* creates the field with 0 */;
    IT_STR("0", it_c, "HGET nokey2 n");
}

/* ---------------------------------------------------------------- sorted sets */

Test(types, zset_add_flags) {
    IT_INT(3, it_c, "ZADD z 1 a 2 b 3 c");
    IT_INT(0, it_c, "ZADD z 1.5 a 2 b");
    IT_INT(1, it_c, "ZADD z CH 1.5 a 2.5 b"); /* b changed; a unchanged */
    IT_INT(2, it_c, "ZADD z ch 10 b 0.5 d");  /* one updated, one added */
    IT_INT(0, it_c, "ZADD z NX 100 a");       /* a exists: untouched */
    IT_STR("1.5", it_c, "ZSCORE z a");
    IT_INT(0, it_c, "ZADD z XX 1 new"); /* XX never adds */
    IT_NIL(it_c, "ZSCORE z new");
    IT_INT(1, it_c, "ZADD z XX CH 7 a");
    IT_INT(0, it_c, "ZADD z GT CH 5 a"); /* 5 < 7: kept */
    IT_INT(1, it_c, "ZADD z GT CH 8 a");
    IT_INT(0, it_c, "ZADD z LT CH 9 a");
    IT_INT(1, it_c, "ZADD z LT CH 1 a");
    IT_INT(1, it_c, "ZADD z GT 1 e"); /* GT/LT still add new members */
    IT_STR("3", it_c, "ZADD z INCR 2 a");
    IT_STR("3.5", it_c, "ZADD z INCR 0.5 a");
    IT_NIL(it_c, "ZADD z NX INCR 1 a"); /* NX on an existing member: null */
    IT_NIL(it_c, "ZADD z GT INCR -1 a");
    IT_NIL(it_c, "ZADD z XX INCR 1 nope");
    IT_STR("4", it_c, "ZINCRBY z 0.5 a");
    IT_STR("1", it_c, "ZINCRBY z 1 fresh");
    IT_STR("inf", it_c, "ZADD z INCR inf i");
    IT_ERR("ERR resulting score is not a number (NaN)", it_c, "ZINCRBY z -inf i");
    IT_STR("-inf", it_c, "ZADD z INCR -inf j");
    IT_INT(0, it_c, "ZADD nokey XX 1 a");
    IT_INT(0, it_c, "EXISTS nokey");
}

Test(types, zset_add_errors) {
    IT_ERR("ERR wrong number of arguments for 'zadd' command", it_c, "ZADD z 1");
    IT_ERR("ERR syntax error", it_c, "ZADD z NX 1");
    IT_ERR("ERR syntax error", it_c, "ZADD z 1 a 2");
    IT_ERR(NOT_FLOAT, it_c, "ZADD z x a");
    IT_ERR(NOT_FLOAT, it_c, "ZADD z 1 a nan b");
    IT_ERR("ERR XX and NX options at the same time are not compatible", it_c, "ZADD z NX XX 1 a");
    IT_ERR("ERR GT, LT, and/or NX options at the same time are not compatible", it_c,
           "ZADD z NX GT 1 a");
    IT_ERR("ERR GT, LT, and/or NX options at the same time are not compatible", it_c,
           "ZADD z GT LT 1 a");
    IT_ERR("ERR INCR option supports a single increment-element pair", it_c, "ZADD z INCR 1 a 2 b");
    IT_ERR(NOT_FLOAT, it_c, "ZINCRBY z x a");
    IT_INT(0, it_c, "EXISTS z");
}

Test(types, zset_reads) {
    IT_INT(5, it_c, "ZADD z 0.1 a 1.5 b 3 c 1e20 d -2 e");
    IT_INT(5, it_c, "ZCARD z");
    IT_INT(0, it_c, "ZCARD nokey");
    IT_STR("0.10000000000000001", it_c, "ZSCORE z a"); /* %.17g like Redis 7.0 */
    IT_STR("1e+20", it_c, "ZSCORE z d");
    IT_STR("-2", it_c, "ZSCORE z e");
    IT_NIL(it_c, "ZSCORE z nope");
    IT_NIL(it_c, "ZSCORE nokey a");
    cr_assert_str_eq(rep("ZMSCORE z c nope"), "[\"3\", (nil)]");
    IT_INT(0, it_c, "ZRANK z e");
    IT_INT(4, it_c, "ZRANK z d");
    IT_INT(0, it_c, "ZREVRANK z d");
    IT_NIL(it_c, "ZRANK z nope");
    IT_NIL(it_c, "ZRANK nokey a");
    IT_INT(3, it_c, "ZCOUNT z 0 3");
    IT_INT(1, it_c, "ZCOUNT z (0.1 (3");
    IT_INT(5, it_c, "ZCOUNT z -inf +inf");
    IT_ERR("ERR min or max is not a float", it_c, "ZCOUNT z a 1");
    /* Same score: members order by bytes. */
    IT_INT(3, it_c, "ZADD t 1 b 1 a 1 ab");
    cr_assert_str_eq(rep("ZRANGE t 0 -1"), "[\"a\", \"ab\", \"b\"]");
}

Test(types, zset_range) {
    IT_INT(5, it_c, "ZADD z 1 a 2 b 3 c 4 d 5 e");
    cr_assert_str_eq(rep("ZRANGE z 0 -1"), "[\"a\", \"b\", \"c\", \"d\", \"e\"]");
    cr_assert_str_eq(rep("ZRANGE z 1 2 WITHSCORES"), "[\"b\", \"2\", \"c\", \"3\"]");
    cr_assert_str_eq(rep("ZRANGE z -2 -1"), "[\"d\", \"e\"]");
    cr_assert_str_eq(rep("ZRANGE z 0 1 REV"), "[\"e\", \"d\"]");
    cr_assert_str_eq(rep("ZREVRANGE z 0 1 WITHSCORES"), "[\"e\", \"5\", \"d\", \"4\"]");
    cr_assert_str_eq(rep("ZRANGE z 3 1"), "[]");
    cr_assert_str_eq(rep("ZRANGE z 10 20"), "[]");
    cr_assert_str_eq(rep("ZRANGE nokey 0 -1"), "[]");
    cr_assert_str_eq(rep("ZRANGE z (1 3 BYSCORE"), "[\"b\", \"c\"]");
    cr_assert_str_eq(rep("ZRANGE z 4 (2 BYSCORE REV WITHSCORES"), "[\"d\", \"4\", \"c\", \"3\"]");
    cr_assert_str_eq(rep("ZRANGE z -inf +inf BYSCORE LIMIT 1 2"), "[\"b\", \"c\"]");
    cr_assert_str_eq(rep("ZRANGE z -inf +inf BYSCORE LIMIT 3 -1"), "[\"d\", \"e\"]");
    cr_assert_str_eq(rep("ZRANGE z -inf +inf BYSCORE LIMIT -1 2"), "[]");
    cr_assert_str_eq(rep("ZRANGEBYSCORE z 2 4 WITHSCORES LIMIT 0 1"), "[\"b\", \"2\"]");
    cr_assert_str_eq(rep("ZREVRANGEBYSCORE z +inf 4"), "[\"e\", \"d\"]");
    IT_ERR(NOT_INT, it_c, "ZRANGE z 0 x");
    IT_ERR("ERR min or max is not a float", it_c, "ZRANGE z a 1 BYSCORE");
    IT_ERR("ERR syntax error", it_c, "ZRANGE z 0 1 FOO");
    IT_ERR("ERR syntax error", it_c, "ZRANGEBYSCORE z 0 1 BYSCORE");
    IT_ERR("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or "
           "BYLEX",
           it_c, "ZRANGE z 0 1 LIMIT 0 1");
    IT_ERR("ERR syntax error, WITHSCORES not supported in combination with BYLEX", it_c,
           "ZRANGE z 0 1 BYLEX WITHSCORES");
}

Test(types, zset_rem_pop) {
    IT_INT(4, it_c, "ZADD z 1 a 2 b 3 c 4 d");
    cr_assert_str_eq(rep("ZPOPMIN nokey"), "[]");
    cr_assert_str_eq(rep("ZPOPMAX nokey 3"), "[]");
    cr_assert_str_eq(rep("ZPOPMIN z"), "[\"a\", \"1\"]");
    cr_assert_str_eq(rep("ZPOPMAX z"), "[\"d\", \"4\"]");
    cr_assert_str_eq(rep("ZPOPMIN z 0"), "[]");
    IT_ERR(NOT_POS, it_c, "ZPOPMIN z -1");
    IT_ERR(NOT_POS, it_c, "ZPOPMAX z x");
    IT_ERR("ERR syntax error", it_c, "ZPOPMIN z 1 2");
    IT_INT(1, it_c, "ZADD z 5 e");
    IT_INT(2, it_c, "ZREM z b e nope");
    IT_INT(0, it_c, "ZREM nokey a");
    cr_assert_str_eq(rep("ZPOPMAX z 10"), "[\"c\", \"3\"]");
    IT_INT(0, it_c, "EXISTS z");
    IT_INT(1, it_c, "ZADD z 1 a");
    IT_INT(1, it_c, "ZREM z a");
    IT_INT(0, it_c, "EXISTS z");
}

/* A larger sorted set: ranks and ranges agree with a sorted model after random updates. */
Test(types, zset_many) {
    enum { N = 500 };
    static double model[N];
    srand(42);
    for (int i = 0; i < N; i++) {
        model[i] = (double)(rand() % 1000);
        IT_INT(1, it_c, "ZADD z %d m%03d", (int)model[i], i);
    }
    for (int k = 0; k < 300; k++) {
        int i = rand() % N;
        model[i] = (double)(rand() % 1000);
        IT_INT(0, it_c, "ZADD z %d m%03d", (int)model[i], i);
    }
    /* rank of member i = number of members ordered before it */
    for (int i = 0; i < N; i += 7) {
        long long rank = 0;
        for (int j = 0; j < N; j++)
            rank += model[j] < model[i] || (model[j] == model[i] && j < i);
        IT_INT(rank, it_c, "ZRANK z m%03d", i);
        IT_INT(N - 1 - rank, it_c, "ZREVRANK z m%03d", i);
        redisReply *r = it_cmd(it_c, "ZRANGE z %lld %lld", rank, rank);
        cr_assert_eq(r->elements, 1);
        char want[16];
        snprintf(want, sizeof(want), "m%03d", i);
        cr_assert_str_eq(r->element[0]->str, want);
    }
    long long below = 0;
    for (int j = 0; j < N; j++)
        below += model[j] >= 100 && model[j] < 600;
    IT_INT(below, it_c, "ZCOUNT z 100 (600");
    redisReply *r = it_cmd(it_c, "ZRANGE z 100 (600 BYSCORE");
    cr_assert_eq((long long)r->elements, below);
    for (int i = 0; i < N; i++)
        IT_INT(1, it_c, "ZREM z m%03d", i);
    IT_INT(0, it_c, "EXISTS z");
}

/* ---------------------------------------------------------------- across types */

Test(types, wrongtype) {
    IT_OK(it_c, "SET str v");
    IT_INT(1, it_c, "RPUSH list a");
    IT_INT(1, it_c, "SADD set a");
    IT_INT(1, it_c, "HSET hash f v");
    IT_INT(1, it_c, "ZADD zset 1 a");
    const char *not_list[] = {"str", "set", "hash", "zset"};
    for (int i = 0; i < 4; i++) {
        const char *k = not_list[i];
        IT_ERR(WRONGTYPE, it_c, "LPUSH %s a", k);
        IT_ERR(WRONGTYPE, it_c, "RPUSHX %s a", k);
        IT_ERR(WRONGTYPE, it_c, "LPOP %s", k);
        IT_ERR(WRONGTYPE, it_c, "RPOP %s 2", k);
        IT_ERR(WRONGTYPE, it_c, "LLEN %s", k);
        IT_ERR(WRONGTYPE, it_c, "LRANGE %s 0 -1", k);
        IT_ERR(WRONGTYPE, it_c, "LINDEX %s 0", k);
        IT_ERR(WRONGTYPE, it_c, "LSET %s 0 a", k);
        IT_ERR(WRONGTYPE, it_c, "LREM %s 0 a", k);
        IT_ERR(WRONGTYPE, it_c, "LTRIM %s 0 1", k);
    }
    const char *not_set[] = {"str", "list", "hash", "zset"};
    for (int i = 0; i < 4; i++) {
        const char *k = not_set[i];
        IT_ERR(WRONGTYPE, it_c, "SADD %s a", k);
        IT_ERR(WRONGTYPE, it_c, "SREM %s a", k);
        IT_ERR(WRONGTYPE, it_c, "SCARD %s", k);
        IT_ERR(WRONGTYPE, it_c, "SISMEMBER %s a", k);
        IT_ERR(WRONGTYPE, it_c, "SMEMBERS %s", k);
        IT_ERR(WRONGTYPE, it_c, "SPOP %s", k);
        IT_ERR(WRONGTYPE, it_c, "SPOP %s 2", k);
        IT_ERR(WRONGTYPE, it_c, "SRANDMEMBER %s", k);
        IT_ERR(WRONGTYPE, it_c, "SRANDMEMBER %s 2", k);
    }
    const char *not_hash[] = {"str", "list", "set", "zset"};
    for (int i = 0; i < 4; i++) {
        const char *k = not_hash[i];
        IT_ERR(WRONGTYPE, it_c, "HSET %s f v", k);
        IT_ERR(WRONGTYPE, it_c, "HMSET %s f v", k);
        IT_ERR(WRONGTYPE, it_c, "HSETNX %s f v", k);
        IT_ERR(WRONGTYPE, it_c, "HGET %s f", k);
        IT_ERR(WRONGTYPE, it_c, "HMGET %s f", k);
        IT_ERR(WRONGTYPE, it_c, "HDEL %s f", k);
        IT_ERR(WRONGTYPE, it_c, "HLEN %s", k);
        IT_ERR(WRONGTYPE, it_c, "HEXISTS %s f", k);
        IT_ERR(WRONGTYPE, it_c, "HGETALL %s", k);
        IT_ERR(WRONGTYPE, it_c, "HKEYS %s", k);
        IT_ERR(WRONGTYPE, it_c, "HVALS %s", k);
        IT_ERR(WRONGTYPE, it_c, "HINCRBY %s f 1", k);
    }
    const char *not_zset[] = {"str", "list", "set", "hash"};
    for (int i = 0; i < 4; i++) {
        const char *k = not_zset[i];
        IT_ERR(WRONGTYPE, it_c, "ZADD %s 1 a", k);
        IT_ERR(WRONGTYPE, it_c, "ZINCRBY %s 1 a", k);
        IT_ERR(WRONGTYPE, it_c, "ZREM %s a", k);
        IT_ERR(WRONGTYPE, it_c, "ZCARD %s", k);
        IT_ERR(WRONGTYPE, it_c, "ZSCORE %s a", k);
        IT_ERR(WRONGTYPE, it_c, "ZRANK %s a", k);
        IT_ERR(WRONGTYPE, it_c, "ZRANGE %s 0 -1", k);
        IT_ERR(WRONGTYPE, it_c, "ZPOPMIN %s", k);
        IT_ERR(WRONGTYPE, it_c, "ZPOPMAX %s 2", k);
    }
    const char *aggs[] = {"list", "set", "hash", "zset"};
    for (int i = 0; i < 4; i++) {
        IT_ERR(WRONGTYPE, it_c, "GET %s", aggs[i]);
        IT_ERR(WRONGTYPE, it_c, "APPEND %s x", aggs[i]);
        IT_ERR(WRONGTYPE, it_c, "INCR %s", aggs[i]);
        IT_ERR(WRONGTYPE, it_c, "STRLEN %s", aggs[i]);
    }
    /* A plain SET overwrites any type. */
    IT_OK(it_c, "SET list v");
    IT_STR("v", it_c, "GET list");
    IT_STATUS("string", it_c, "TYPE list");
}

Test(types, type_names_and_delete) {
    IT_INT(1, it_c, "RPUSH l a");
    IT_INT(1, it_c, "SADD s a");
    IT_INT(1, it_c, "HSET h f v");
    IT_INT(1, it_c, "ZADD z 1 a");
    IT_STATUS("list", it_c, "TYPE l");
    IT_STATUS("set", it_c, "TYPE s");
    IT_STATUS("hash", it_c, "TYPE h");
    IT_STATUS("zset", it_c, "TYPE z");
    IT_INT(4, it_c, "EXISTS l s h z");
    IT_INT(1, it_c, "EXPIRE l 100");
    IT_INT(1, it_c, "PERSIST l");
    IT_INT(4, it_c, "DEL l s h z");
    IT_STATUS("none", it_c, "TYPE l");
    IT_INT(0, it_c, "DBSIZE");
    /* Expiry applies to aggregates as to strings. */
    IT_INT(1, it_c, "RPUSH l a");
    IT_INT(1, it_c, "PEXPIRE l 50");
    it_sleep_ms(120);
    IT_INT(0, it_c, "LLEN l");
    IT_INT(0, it_c, "EXISTS l");
    IT_INT(1, it_c, "HSET h f v");
    IT_OK(it_c, "FLUSHALL");
    IT_INT(0, it_c, "EXISTS h");
}

Test(types, copy_rename) {
    IT_INT(3, it_c, "RPUSH l a b c");
    IT_INT(2, it_c, "SADD s a b");
    IT_INT(2, it_c, "HSET h f v g w");
    IT_INT(2, it_c, "ZADD z 1 a 2 b");
    IT_INT(1, it_c, "COPY l l2");
    IT_INT(1, it_c, "COPY s s2");
    IT_INT(1, it_c, "COPY h h2");
    IT_INT(1, it_c, "COPY z z2");
    /* The copies are deep: changing the source leaves them alone. */
    IT_INT(4, it_c, "RPUSH l d");
    IT_INT(1, it_c, "SADD s c");
    IT_INT(0, it_c, "HSET h f changed");
    IT_INT(0, it_c, "ZADD z 10 a");
    cr_assert_str_eq(rep("LRANGE l2 0 -1"), "[\"a\", \"b\", \"c\"]");
    cr_assert_str_eq(rep_sorted("SMEMBERS s2"), "a,b");
    IT_STR("v", it_c, "HGET h2 f");
    cr_assert_str_eq(rep("ZRANGE z2 0 -1 WITHSCORES"), "[\"a\", \"1\", \"b\", \"2\"]");
    IT_INT(0, it_c, "COPY l l2");
    IT_INT(1, it_c, "COPY l l2 REPLACE");
    IT_INT(4, it_c, "LLEN l2");
    IT_OK(it_c, "RENAME z z3");
    IT_INT(0, it_c, "EXISTS z");
    IT_STATUS("zset", it_c, "TYPE z3");
    IT_STR("10", it_c, "ZSCORE z3 a");
    IT_OK(it_c, "RENAME h2 l2"); /* overwrites a key of another type */
    IT_STATUS("hash", it_c, "TYPE l2");
    IT_INT(0, it_c, "RENAMENX l2 s");
}

Test(types, watch_aborts_on_inplace_change) {
    redisContext *c2 = it_connect(&it_srv);
    const char *mods[][2] = {{"RPUSH w x", "LPUSH w y"},
                             {"SADD w a", "SREM w a"},
                             {"HSET w f v", "HINCRBY w n 1"},
                             {"ZADD w 1 a", "ZINCRBY w 1 a"},
                             {"RPUSH w x y", "LPOP w"}};
    for (int i = 0; i < 5; i++) {
        freeReplyObject(redisCommand(it_c, "DEL w"));
        freeReplyObject(redisCommand(it_c, mods[i][0]));
        IT_OK(it_c, "WATCH w");
        freeReplyObject(redisCommand(c2, mods[i][1]));
        IT_OK(it_c, "MULTI");
        IT_STATUS("QUEUED", it_c, "PING");
        redisReply *r = it_cmd(it_c, "EXEC");
        cr_assert_eq(r->type, REDIS_REPLY_NIL, "EXEC must abort after '%s'", mods[i][1]);
    }
    /* A no-op (pushing to a missing key with LPUSHX) does not abort. */
    IT_OK(it_c, "WATCH nokey");
    IT_INT(0, c2, "LPUSHX nokey a");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "PING");
    redisReply *r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    it_close(c2);
}

Test(types, resp3_encodings) {
    int fd = raw3_open();
    cr_assert_str_eq(raw(fd, "HSET h f v"), ":1\r\n");
    cr_assert_str_eq(raw(fd, "HGETALL h"), "%1\r\n$1\r\nf\r\n$1\r\nv\r\n");
    cr_assert_str_eq(raw(fd, "HGETALL nokey"), "%0\r\n");
    cr_assert_str_eq(raw(fd, "HGET h nope"), "_\r\n");
    cr_assert_str_eq(raw(fd, "SADD s a"), ":1\r\n");
    cr_assert_str_eq(raw(fd, "SMEMBERS s"), "~1\r\n$1\r\na\r\n");
    cr_assert_str_eq(raw(fd, "SMEMBERS nokey"), "~0\r\n");
    cr_assert_str_eq(raw(fd, "SPOP nokey 1"), "~0\r\n");
    cr_assert_str_eq(raw(fd, "SRANDMEMBER s 5"), "*1\r\n$1\r\na\r\n");
    cr_assert_str_eq(raw(fd, "SPOP s 5"), "~1\r\n$1\r\na\r\n");
    cr_assert_str_eq(raw(fd, "LPOP nokey"), "_\r\n");
    cr_assert_str_eq(raw(fd, "LPOP nokey 2"), "_\r\n");
    cr_assert_str_eq(raw(fd, "ZADD z 1.5 a 2 b 3 c"), ":3\r\n");
    cr_assert_str_eq(raw(fd, "ZSCORE z a"), ",1.5\r\n");
    cr_assert_str_eq(raw(fd, "ZSCORE z b"), ",2\r\n");
    cr_assert_str_eq(raw(fd, "ZINCRBY z 0.1 c"), ",3.1000000000000001\r\n");
    cr_assert_str_eq(raw(fd, "ZADD z INCR 1 b"), ",3\r\n");
    cr_assert_str_eq(raw(fd, "ZRANGE z 0 0 WITHSCORES"), "*1\r\n*2\r\n$1\r\na\r\n,1.5\r\n");
    cr_assert_str_eq(raw(fd, "ZPOPMIN z"), "*2\r\n$1\r\na\r\n,1.5\r\n");
    cr_assert_str_eq(raw(fd, "ZPOPMAX z 1"), "*1\r\n*2\r\n$1\r\nc\r\n,3.1000000000000001\r\n");
    cr_assert_str_eq(raw(fd, "ZRANK z nope"), "_\r\n");
    close(fd);
    /* RESP2 on the wire: scores are bulk strings, missing LPOP with count a null array. */
    fd = it_raw_open(it_srv.port);
    cr_assert_str_eq(raw(fd, "ZSCORE z b"), "$1\r\n3\r\n");
    cr_assert_str_eq(raw(fd, "LPOP nokey 2"), "*-1\r\n");
    cr_assert_str_eq(raw(fd, "HGETALL h"), "*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
    close(fd);
}

/* 100,000 LPUSH to one key (pipelined, as redis-benchmark does), then LRANGE 600 and pops. */
Test(types, big_list) {
    enum { N = 100000 };
    for (int i = 0; i < N; i++)
        redisAppendCommand(it_c, "LPUSH big %d", i);
    for (int i = 0; i < N; i++) {
        redisReply *r;
        cr_assert_eq(redisGetReply(it_c, (void **)&r), REDIS_OK);
        cr_assert_eq(r->integer, i + 1);
        freeReplyObject(r);
    }
    redisReply *r = it_cmd(it_c, "LRANGE big 0 599");
    cr_assert_eq(r->elements, 600);
    cr_assert_str_eq(r->element[0]->str, "99999");
    cr_assert_str_eq(r->element[599]->str, "99400");
    IT_STR("0", it_c, "LINDEX big -1");
    IT_STR("50000", it_c, "LINDEX big 49999");
    r = it_cmd(it_c, "RPOP big 50000");
    cr_assert_eq(r->elements, 50000);
    IT_INT(50000, it_c, "LLEN big");
    IT_STR("50000", it_c, "RPOP big");
    IT_OK(it_c, "LTRIM big 0 9");
    cr_assert_str_eq(rep("LRANGE big 8 -1"), "[\"99991\", \"99990\"]");
}

/* ---------------------------------------------------------------- more list and zset forms */

Test(types, list_insert_pos) {
    IT_INT(6, it_c, "RPUSH l a b c a b c");
    IT_INT(7, it_c, "LINSERT l BEFORE c X");
    IT_INT(8, it_c, "LINSERT l after c Y");
    IT_INT(-1, it_c, "LINSERT l AFTER nope Y");
    IT_INT(0, it_c, "LINSERT nokey BEFORE a b");
    IT_ERR("ERR syntax error", it_c, "LINSERT l MIDDLE c Y");
    cr_assert_str_eq(rep("LRANGE l 0 -1"),
                     "[\"a\", \"b\", \"X\", \"c\", \"Y\", \"a\", \"b\", \"c\"]");
    IT_INT(0, it_c, "LPOS l a");
    IT_INT(3, it_c, "LPOS l c");
    IT_INT(7, it_c, "LPOS l c RANK 2");
    IT_INT(7, it_c, "LPOS l c RANK -1");
    IT_INT(3, it_c, "LPOS l c RANK -2");
    IT_NIL(it_c, "LPOS l c RANK 3");
    IT_NIL(it_c, "LPOS l nope");
    IT_NIL(it_c, "LPOS nokey a");
    cr_assert_str_eq(rep("LPOS l c COUNT 0"), "[(integer) 3, (integer) 7]");
    cr_assert_str_eq(rep("LPOS l c COUNT 1"), "[(integer) 3]");
    cr_assert_str_eq(rep("LPOS l c COUNT 0 RANK -1"), "[(integer) 7, (integer) 3]");
    cr_assert_str_eq(rep("LPOS l c COUNT 0 MAXLEN 4"), "[(integer) 3]");
    cr_assert_str_eq(rep("LPOS l nope COUNT 2"), "[]");
    cr_assert_str_eq(rep("LPOS nokey a COUNT 1"), "[]");
    IT_ERR("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
           "or use negative to start from the end of the list",
           it_c, "LPOS l c RANK 0");
    IT_ERR("ERR COUNT can't be negative", it_c, "LPOS l c COUNT -1");
    IT_ERR("ERR COUNT can't be negative", it_c, "LPOS l c COUNT x");
    IT_ERR("ERR MAXLEN can't be negative", it_c, "LPOS l c MAXLEN -1");
    IT_ERR(NOT_INT, it_c, "LPOS l c RANK x");
    IT_ERR("ERR syntax error", it_c, "LPOS l c RANK");
    /* Inserting near either end of a wrapped ring keeps the order. */
    IT_INT(18, it_c, "RPUSH lb 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18");
    IT_INT(19, it_c, "LINSERT lb BEFORE 3 x");
    IT_INT(20, it_c, "LINSERT lb AFTER 16 y");
    IT_INT(21, it_c, "LINSERT lb BEFORE 1 z");
    IT_INT(22, it_c, "LINSERT lb AFTER 18 w");
    cr_assert_str_eq(rep("LRANGE lb 0 4"), "[\"z\", \"1\", \"2\", \"x\", \"3\"]");
    cr_assert_str_eq(rep("LRANGE lb -5 -1"), "[\"16\", \"y\", \"17\", \"18\", \"w\"]");
}

Test(types, zset_lex_and_remrange) {
    IT_INT(7, it_c, "ZADD z 0 a 0 b 0 c 0 d 0 e 0 f 0 g");
    cr_assert_str_eq(rep("ZRANGEBYLEX z [b (e"), "[\"b\", \"c\", \"d\"]");
    cr_assert_str_eq(rep("ZRANGEBYLEX z (b [e LIMIT 1 2"), "[\"d\", \"e\"]");
    cr_assert_str_eq(rep("ZREVRANGEBYLEX z [e (b"), "[\"e\", \"d\", \"c\"]");
    cr_assert_str_eq(rep("ZRANGE z [b [c BYLEX"), "[\"b\", \"c\"]");
    cr_assert_str_eq(rep("ZRANGE z [c [b BYLEX REV"), "[\"c\", \"b\"]");
    cr_assert_str_eq(rep("ZRANGE z + - BYLEX"), "[]");
    IT_INT(7, it_c, "ZLEXCOUNT z - +");
    IT_INT(3, it_c, "ZLEXCOUNT z [b (e");
    IT_INT(0, it_c, "ZLEXCOUNT nokey - +");
    IT_ERR("ERR min or max not valid string range item", it_c, "ZRANGEBYLEX z a b");
    IT_ERR("ERR min or max not valid string range item", it_c, "ZLEXCOUNT z x +");
    IT_INT(2, it_c, "ZREMRANGEBYLEX z [b (d");
    cr_assert_str_eq(rep("ZRANGE z 0 -1"), "[\"a\", \"d\", \"e\", \"f\", \"g\"]");
    IT_INT(6, it_c, "ZADD s 1 a 2 b 3 c 4 d 5 e 6 f");
    IT_INT(2, it_c, "ZREMRANGEBYSCORE s (1 3");
    IT_ERR("ERR min or max is not a float", it_c, "ZREMRANGEBYSCORE s x 3");
    IT_INT(1, it_c, "ZREMRANGEBYRANK s 0 0");
    IT_INT(1, it_c, "ZREMRANGEBYRANK s -1 -1");
    IT_INT(0, it_c, "ZREMRANGEBYRANK s 5 10");
    IT_ERR(NOT_INT, it_c, "ZREMRANGEBYRANK s x 1");
    cr_assert_str_eq(rep("ZRANGE s 0 -1 WITHSCORES"), "[\"d\", \"4\", \"e\", \"5\"]");
    IT_INT(2, it_c, "ZREMRANGEBYRANK s 0 -1");
    IT_INT(0, it_c, "EXISTS s");
    IT_INT(0, it_c, "ZREMRANGEBYSCORE nokey 0 1");
}

/* Runs a *SCAN over key to completion; returns the number of elements seen (pairs count 1). */
static long long scan_all(const char *cmd, const char *key, int per, const char *match) {
    unsigned long long cursor = 0;
    long long seen = 0;
    int rounds = 0;
    do {
        redisReply *r = match ? it_cmd(it_c, "%s %s %llu MATCH %s COUNT 7", cmd, key, cursor, match)
                              : it_cmd(it_c, "%s %s %llu COUNT 7", cmd, key, cursor);
        IT_TYPE(r, REDIS_REPLY_ARRAY);
        cr_assert_eq(r->elements, 2);
        cursor = strtoull(r->element[0]->str, NULL, 10);
        cr_assert_eq(r->element[1]->elements % (size_t)per, 0);
        seen += (long long)(r->element[1]->elements / (size_t)per);
        cr_assert(++rounds < 1000, "scan does not end");
    } while (cursor != 0);
    return seen;
}

Test(types, scans) {
    for (int i = 0; i < 200; i++) {
        IT_INT(1, it_c, "SADD s m%d", i);
        IT_INT(1, it_c, "HSET h f%d v%d", i, i);
        IT_INT(1, it_c, "ZADD z %d m%d", i, i);
    }
    /* Nothing changes during the scans, so each element is returned exactly once here. */
    cr_assert_eq(scan_all("SSCAN", "s", 1, NULL), 200);
    cr_assert_eq(scan_all("HSCAN", "h", 2, NULL), 200);
    cr_assert_eq(scan_all("ZSCAN", "z", 2, NULL), 200);
    cr_assert_eq(scan_all("SSCAN", "s", 1, "m1?"), 10);
    cr_assert_eq(scan_all("HSCAN", "h", 2, "f19*"), 11);
    IT_INT(1, it_c, "SADD small a");
    cr_assert_str_eq(rep("SSCAN small 0"), "[\"0\", [\"a\"]]");
    IT_INT(1, it_c, "HSET hs f v");
    cr_assert_str_eq(rep("HSCAN hs 0"), "[\"0\", [\"f\", \"v\"]]");
    IT_INT(1, it_c, "ZADD zs 0.1 m");
    cr_assert_str_eq(rep("ZSCAN zs 0"), "[\"0\", [\"m\", \"0.10000000000000001\"]]");
    cr_assert_str_eq(rep("SSCAN nokey 0"), "[\"0\", []]");
    IT_ERR("ERR invalid cursor", it_c, "SSCAN s x");
    IT_ERR("ERR syntax error", it_c, "SSCAN s 0 COUNT 0");
    IT_ERR("ERR syntax error", it_c, "HSCAN h 0 MATCH");
    IT_ERR(NOT_INT, it_c, "ZSCAN z 0 COUNT x");
    IT_OK(it_c, "SET str v");
    IT_ERR(WRONGTYPE, it_c, "SSCAN str 0");
    IT_ERR(WRONGTYPE, it_c, "HSCAN z 0");
    IT_ERR(WRONGTYPE, it_c, "ZSCAN h 0");
}

Test(types, randfield_randmember) {
    IT_INT(3, it_c, "HSET h a 1 b 2 c 3");
    IT_INT(3, it_c, "ZADD z 1 a 2 b 3 c");
    IT_NIL(it_c, "HRANDFIELD nokey");
    IT_NIL(it_c, "ZRANDMEMBER nokey");
    cr_assert_str_eq(rep("HRANDFIELD nokey 3 WITHVALUES"), "[]");
    cr_assert_str_eq(rep("ZRANDMEMBER nokey 3"), "[]");
    cr_assert_str_eq(rep("HRANDFIELD h 0"), "[]");
    redisReply *r = it_cmd(it_c, "HRANDFIELD h");
    IT_TYPE(r, REDIS_REPLY_STRING);
    IT_INT(1, it_c, "HEXISTS h %s", r->str);
    cr_assert_str_eq(rep_sorted("HRANDFIELD h 5"), "a,b,c");
    cr_assert_str_eq(rep_sorted("HRANDFIELD h 5 WITHVALUES"), "1,2,3,a,b,c");
    cr_assert_str_eq(rep_sorted("ZRANDMEMBER z 5 WITHSCORES"), "1,2,3,a,b,c");
    r = it_cmd(it_c, "HRANDFIELD h 2");
    cr_assert_eq(r->elements, 2);
    cr_assert_str_neq(r->element[0]->str, r->element[1]->str);
    r = it_cmd(it_c, "ZRANDMEMBER z -7 WITHSCORES");
    cr_assert_eq(r->elements, 14);
    for (size_t i = 0; i < 14; i += 2) {
        char want[8];
        snprintf(want, sizeof(want), "%d", r->element[i]->str[0] - 'a' + 1);
        cr_assert_str_eq(r->element[i + 1]->str, want, "score of the picked member");
    }
    IT_ERR("ERR syntax error", it_c, "HRANDFIELD h 1 WITHSCORES");
    IT_ERR("ERR syntax error", it_c, "ZRANDMEMBER z 1 WITHVALUES");
    IT_ERR(NOT_INT, it_c, "HRANDFIELD h x");
    IT_ERR("ERR value is out of range, value must between -9223372036854775807 and "
           "9223372036854775807",
           it_c, "ZRANDMEMBER z -9223372036854775808");
    IT_ERR(WRONGTYPE, it_c, "HRANDFIELD z");
    IT_ERR(WRONGTYPE, it_c, "ZRANDMEMBER h 1");
    int fd = raw3_open();
    cr_assert_str_eq(raw(fd, "HSET h1 f v"), ":1\r\n");
    cr_assert_str_eq(raw(fd, "HRANDFIELD h1 -1 WITHVALUES"), "*1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
    cr_assert_str_eq(raw(fd, "ZADD z1 2.5 m"), ":1\r\n");
    cr_assert_str_eq(raw(fd, "ZRANDMEMBER z1 1 WITHSCORES"), "*1\r\n*2\r\n$1\r\nm\r\n,2.5\r\n");
    cr_assert_str_eq(raw(fd, "ZSCAN z1 0"), "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nm\r\n$3\r\n2.5\r\n");
    close(fd);
}

/* ---------------------------------------------------------------- randomized list model */

/* A model list of small integers, compared with the server after random operations that wrap,
 * grow and shrink the ring buffer. */
struct model {
    int v[4096];
    int n;
};

static void model_insert(struct model *m, int at, int x) {
    memmove(&m->v[at + 1], &m->v[at], (size_t)(m->n - at) * sizeof(int));
    m->v[at] = x;
    m->n++;
}

static void model_remove(struct model *m, int at) {
    memmove(&m->v[at], &m->v[at + 1], (size_t)(m->n - at - 1) * sizeof(int));
    m->n--;
}

static void model_check(const struct model *m) {
    redisReply *r = it_cmd(it_c, "LRANGE ml 0 -1");
    cr_assert_eq((int)r->elements, m->n, "length %zu, model %d", r->elements, m->n);
    for (int i = 0; i < m->n; i++)
        cr_assert_eq(atoi(r->element[i]->str), m->v[i], "element %d", i);
}

/* LREM of count (model side). Returns the number removed. */
static int model_lrem(struct model *m, int count, int x) {
    int removed = 0;
    if (count >= 0) {
        for (int i = 0; i < m->n && (count == 0 || removed < count);)
            if (m->v[i] == x) {
                model_remove(m, i);
                removed++;
            } else {
                i++;
            }
    } else {
        for (int i = m->n - 1; i >= 0 && removed < -count; i--)
            if (m->v[i] == x) {
                model_remove(m, i);
                removed++;
            }
    }
    return removed;
}

Test(types, list_random_model) {
    static struct model m;
    m.n = 0;
    int max_len = 0;
    srand(7);
    for (int step = 0; step < 3000; step++) {
        int op = rand() % 10, x = rand() % 20;
        if (step < 1500 && (op == 5 || op == 8))
            op = 2; /* growing phase: no LREM/LTRIM */
        if (m.n > 3000)
            op = 3; /* keep it bounded: pop */
        if (op <= 1) {
            IT_INT(m.n + 1, it_c, "LPUSH ml %d", x);
            model_insert(&m, 0, x);
        } else if (op == 2) {
            IT_INT(m.n + 1, it_c, "RPUSH ml %d", x);
            model_insert(&m, m.n, x);
        } else if (op == 3 || op == 4) {
            int front = op == 3, k = step < 1500 ? rand() % 3 : rand() % 40; /* grow, then shrink */
            redisReply *r = it_cmd(it_c, front ? "LPOP ml %d" : "RPOP ml %d", k);
            if (m.n == 0) {
                cr_assert_eq(r->type, REDIS_REPLY_NIL);
                continue;
            }
            int got = k < m.n ? k : m.n;
            cr_assert_eq((int)r->elements, got);
            for (int i = 0; i < got; i++) {
                int want = front ? m.v[0] : m.v[m.n - 1];
                cr_assert_eq(atoi(r->element[i]->str), want);
                model_remove(&m, front ? 0 : m.n - 1);
            }
        } else if (op == 5) {
            int count = rand() % 5 - 2;
            IT_INT(model_lrem(&m, count, x), it_c, "LREM ml %d %d", count, x);
        } else if (op == 6 && m.n) {
            int at = rand() % m.n, after = rand() % 2, pivot = m.v[at];
            int first = 0;
            while (m.v[first] != pivot)
                first++;
            IT_INT(m.n + 1, it_c, "LINSERT ml %s %d %d", after ? "AFTER" : "BEFORE", pivot, x);
            model_insert(&m, first + after, x);
        } else if (op == 7 && m.n) {
            int at = rand() % m.n;
            IT_OK(it_c, "LSET ml %d %d", at - (rand() % 2 ? m.n : 0), x);
            m.v[at] = x;
        } else if (op == 8 && m.n > 10) {
            int a = rand() % 5, b = m.n - 1 - rand() % 5;
            IT_OK(it_c, "LTRIM ml %d %d", a, b);
            memmove(&m.v[0], &m.v[a], (size_t)(b - a + 1) * sizeof(int));
            m.n = b - a + 1;
        } else if (m.n) {
            int at = rand() % m.n;
            char want[16];
            snprintf(want, sizeof(want), "%d", m.v[at]);
            IT_STR(want, it_c, "LINDEX ml %d", at - m.n);
        }
        if (m.n > max_len)
            max_len = m.n;
        if (step % 250 == 0)
            model_check(&m);
    }
    model_check(&m);
    cr_assert(max_len > 200, "the list grew to %d elements only", max_len);
}

/* ---------------------------------------------------------------- multi-key set and list forms */

Test(types, set_algebra) {
    IT_INT(4, it_c, "SADD a 1 2 3 4");
    IT_INT(3, it_c, "SADD b 3 4 5");
    IT_INT(3, it_c, "SADD c 4 5 6");
    IT_OK(it_c, "SET str v");
    cr_assert_str_eq(rep_sorted("SINTER a b"), "3,4");
    cr_assert_str_eq(rep_sorted("SINTER a b c"), "4");
    cr_assert_str_eq(rep("SINTER a nokey"), "[]");
    cr_assert_str_eq(rep_sorted("SUNION a b c nokey"), "1,2,3,4,5,6");
    cr_assert_str_eq(rep_sorted("SDIFF a b"), "1,2");
    cr_assert_str_eq(rep_sorted("SDIFF a b c"), "1,2");
    cr_assert_str_eq(rep_sorted("SDIFF a nokey"), "1,2,3,4");
    cr_assert_str_eq(rep("SDIFF nokey a"), "[]");
    IT_ERR(WRONGTYPE, it_c, "SINTER a str");
    IT_ERR(WRONGTYPE, it_c, "SINTER nokey str"); /* every key is checked */
    IT_ERR(WRONGTYPE, it_c, "SUNION nokey str");
    IT_ERR(WRONGTYPE, it_c, "SDIFF a str");
    IT_INT(2, it_c, "SINTERSTORE d a b");
    cr_assert_str_eq(rep_sorted("SMEMBERS d"), "3,4");
    IT_INT(0, it_c, "SINTERSTORE d a nokey"); /* an empty result deletes the destination */
    IT_INT(0, it_c, "EXISTS d");
    IT_INT(6, it_c, "SUNIONSTORE d a b c");
    IT_INT(4, it_c, "SUNIONSTORE str a"); /* the destination may hold any type */
    IT_STATUS("set", it_c, "TYPE str");
    IT_INT(1, it_c, "EXPIRE d 100");
    IT_INT(2, it_c, "SDIFFSTORE d a b");
    IT_INT(-1, it_c, "TTL d"); /* a stored result is a new key */
    IT_INT(0, it_c, "SDIFFSTORE d a a");
    IT_INT(0, it_c, "EXISTS d");
    IT_INT(2, it_c, "SINTERCARD 2 a b");
    IT_INT(1, it_c, "SINTERCARD 3 a b c");
    IT_INT(1, it_c, "SINTERCARD 2 a b LIMIT 1");
    IT_INT(2, it_c, "SINTERCARD 2 a b LIMIT 0");
    IT_INT(0, it_c, "SINTERCARD 1 nokey");
    IT_ERR("ERR numkeys should be greater than 0", it_c, "SINTERCARD 0 a");
    IT_ERR("ERR numkeys should be greater than 0", it_c, "SINTERCARD x a");
    IT_ERR("ERR Number of keys can't be greater than number of args", it_c, "SINTERCARD 3 a b");
    IT_ERR("ERR LIMIT can't be negative", it_c, "SINTERCARD 2 a b LIMIT -1");
    IT_ERR("ERR syntax error", it_c, "SINTERCARD 2 a b FOO");
    IT_OK(it_c, "SET str v");
    IT_ERR(WRONGTYPE, it_c, "SINTERCARD 2 a str");
}

Test(types, smove) {
    IT_INT(3, it_c, "SADD a 1 2 3");
    IT_INT(1, it_c, "SADD b 9");
    IT_OK(it_c, "SET str v");
    IT_INT(1, it_c, "SMOVE a b 1");
    IT_INT(0, it_c, "SMOVE a b 1");
    IT_INT(1, it_c, "SISMEMBER b 1");
    IT_INT(0, it_c, "SMOVE nokey str 1"); /* a missing source wins over a wrong destination */
    IT_ERR(WRONGTYPE, it_c, "SMOVE str a 1");
    IT_ERR(WRONGTYPE, it_c, "SMOVE a str 2");
    IT_INT(1, it_c, "SMOVE a a 2");
    IT_INT(0, it_c, "SMOVE a a 9");
    IT_INT(1, it_c, "SMOVE a newset 2");
    cr_assert_str_eq(rep_sorted("SMEMBERS newset"), "2");
    IT_INT(1, it_c, "SMOVE a b 3"); /* the last member: the source goes away */
    IT_INT(0, it_c, "EXISTS a");
    cr_assert_str_eq(rep_sorted("SMEMBERS b"), "1,3,9");
}

Test(types, lmove) {
    IT_INT(3, it_c, "RPUSH l1 a b c");
    IT_INT(1, it_c, "RPUSH l2 x");
    IT_OK(it_c, "SET str v");
    IT_STR("a", it_c, "LMOVE l1 l2 LEFT RIGHT");
    IT_STR("c", it_c, "LMOVE l1 l2 right left");
    cr_assert_str_eq(rep("LRANGE l1 0 -1"), "[\"b\"]");
    cr_assert_str_eq(rep("LRANGE l2 0 -1"), "[\"c\", \"x\", \"a\"]");
    IT_ERR("ERR syntax error", it_c, "LMOVE l1 l2 UP LEFT");
    IT_NIL(it_c, "LMOVE nokey l2 LEFT LEFT");
    IT_NIL(it_c, "RPOPLPUSH nokey str");
    IT_ERR(WRONGTYPE, it_c, "LMOVE str l2 LEFT LEFT");
    IT_ERR(WRONGTYPE, it_c, "LMOVE l1 str LEFT LEFT");
    IT_STR("b", it_c, "RPOPLPUSH l1 l3"); /* creates l3, deletes the emptied l1 */
    IT_INT(0, it_c, "EXISTS l1");
    cr_assert_str_eq(rep("LRANGE l3 0 -1"), "[\"b\"]");
    IT_STR("a", it_c, "RPOPLPUSH l2 l2"); /* rotation */
    cr_assert_str_eq(rep("LRANGE l2 0 -1"), "[\"a\", \"c\", \"x\"]");
    IT_INT(1, it_c, "EXPIRE l3 100");
    IT_STR("b", it_c, "LMOVE l3 l3 LEFT RIGHT"); /* a one-element rotation keeps the key */
    cr_assert(it_cmd(it_c, "TTL l3")->integer > 90);
}

Test(types, zset_algebra) {
    IT_INT(3, it_c, "ZADD a 1 x 2 y 3 z");
    IT_INT(3, it_c, "ZADD b 10 y 20 z 30 w");
    IT_INT(3, it_c, "SADD s y w q");
    IT_OK(it_c, "SET str v");
    cr_assert_str_eq(rep("ZUNION 2 a b WITHSCORES"),
                     "[\"x\", \"1\", \"y\", \"12\", \"z\", \"23\", \"w\", \"30\"]");
    cr_assert_str_eq(rep("ZUNION 2 a b WEIGHTS 2 3 WITHSCORES"),
                     "[\"x\", \"2\", \"y\", \"34\", \"z\", \"66\", \"w\", \"90\"]");
    cr_assert_str_eq(rep("ZUNION 2 a b AGGREGATE MIN WITHSCORES"),
                     "[\"x\", \"1\", \"y\", \"2\", \"z\", \"3\", \"w\", \"30\"]");
    cr_assert_str_eq(rep("ZUNION 3 a b s WITHSCORES"), /* set members score 1 */
                     "[\"q\", \"1\", \"x\", \"1\", \"y\", \"13\", \"z\", \"23\", \"w\", \"31\"]");
    cr_assert_str_eq(rep("ZINTER 3 a b s WITHSCORES"), "[\"y\", \"13\"]");
    cr_assert_str_eq(rep("ZINTER 2 a b AGGREGATE MAX"), "[\"y\", \"z\"]");
    cr_assert_str_eq(rep("ZINTER 2 a nokey"), "[]");
    cr_assert_str_eq(rep("ZDIFF 2 a b WITHSCORES"), "[\"x\", \"1\"]");
    cr_assert_str_eq(rep("ZDIFF 2 b s"), "[\"z\"]");
    IT_ERR("ERR at least 1 input key is needed for 'zunion' command", it_c, "ZUNION 0 a");
    IT_ERR(NOT_INT, it_c, "ZUNION x a");
    IT_ERR("ERR syntax error", it_c, "ZUNION 3 a b");
    IT_ERR(WRONGTYPE, it_c, "ZUNION 2 a str");
    IT_ERR("ERR syntax error", it_c, "ZUNION 2 a b WEIGHTS 1");
    IT_ERR("ERR weight value is not a float", it_c, "ZUNION 2 a b WEIGHTS 1 x");
    IT_ERR("ERR syntax error", it_c, "ZUNION 2 a b AGGREGATE AVG");
    IT_ERR("ERR syntax error", it_c, "ZDIFF 2 a b WEIGHTS 1 1");
    IT_ERR("ERR syntax error", it_c, "ZUNIONSTORE d 2 a b WITHSCORES");
    IT_INT(4, it_c, "ZUNIONSTORE d 2 a b");
    IT_STR("23", it_c, "ZSCORE d z");
    IT_INT(2, it_c, "ZINTERSTORE d 2 a b AGGREGATE MAX");
    cr_assert_str_eq(rep("ZRANGE d 0 -1 WITHSCORES"), "[\"y\", \"10\", \"z\", \"20\"]");
    IT_INT(0, it_c, "ZINTERSTORE d 2 a nokey"); /* empty result: destination deleted */
    IT_INT(0, it_c, "EXISTS d");
    IT_INT(1, it_c, "ZDIFFSTORE d 2 a b");
    IT_INT(3, it_c, "ZUNIONSTORE str 1 a");
    IT_STATUS("zset", it_c, "TYPE str");
    IT_INT(2, it_c, "ZINTERCARD 2 a b");
    IT_INT(1, it_c, "ZINTERCARD 2 a b LIMIT 1");
    IT_ERR("ERR at least 1 input key is needed for 'zintercard' command", it_c, "ZINTERCARD 0 a");
    IT_ERR("ERR LIMIT can't be negative", it_c, "ZINTERCARD 2 a b LIMIT -1");
    IT_ERR("ERR syntax error", it_c, "ZINTERCARD 2 a b WITHSCORES");
    /* inf * 0 counts as 0; inf + -inf sums to 0 */
    IT_INT(1, it_c, "ZADD inf inf m");
    IT_INT(1, it_c, "ZADD ninf -inf m");
    cr_assert_str_eq(rep("ZUNION 2 inf inf WEIGHTS 0 0 WITHSCORES"), "[\"m\", \"0\"]");
    cr_assert_str_eq(rep("ZUNION 2 inf ninf WITHSCORES"), "[\"m\", \"0\"]");
}

Test(types, zrangestore) {
    IT_INT(3, it_c, "ZADD a 1 x 2 y 3 z");
    IT_OK(it_c, "SET str v");
    IT_INT(3, it_c, "ZRANGESTORE dst a 0 -1");
    cr_assert_str_eq(rep("ZRANGE dst 0 -1 WITHSCORES"),
                     "[\"x\", \"1\", \"y\", \"2\", \"z\", \"3\"]");
    IT_INT(2, it_c, "ZRANGESTORE dst a 1 2 REV");
    cr_assert_str_eq(rep("ZRANGE dst 0 -1"), "[\"x\", \"y\"]");
    IT_INT(1, it_c, "ZRANGESTORE dst a 2 (3 BYSCORE");
    cr_assert_str_eq(rep("ZRANGE dst 0 -1 WITHSCORES"), "[\"y\", \"2\"]");
    IT_ERR("ERR syntax error", it_c, "ZRANGESTORE dst a 0 -1 WITHSCORES");
    IT_INT(0, it_c, "ZRANGESTORE dst nokey 0 -1");
    IT_INT(0, it_c, "EXISTS dst");
    IT_ERR(WRONGTYPE, it_c, "ZRANGESTORE dst str 0 -1");
    IT_INT(2, it_c, "ZRANGESTORE str a 0 1"); /* the destination may hold any type */
    IT_STATUS("zset", it_c, "TYPE str");
}

Test(types, lmpop_zmpop) {
    IT_INT(3, it_c, "RPUSH l1 a b c");
    IT_INT(1, it_c, "RPUSH l2 x");
    IT_OK(it_c, "SET str v");
    cr_assert_str_eq(rep("LMPOP 2 nokey l1 LEFT"), "[\"l1\", [\"a\"]]");
    cr_assert_str_eq(rep("LMPOP 2 nokey l1 RIGHT COUNT 5"), "[\"l1\", [\"c\", \"b\"]]");
    IT_INT(0, it_c, "EXISTS l1");
    cr_assert_str_eq(rep("LMPOP 1 nokey LEFT"), "(nil)");
    IT_ERR("ERR numkeys should be greater than 0", it_c, "LMPOP 0 l1 LEFT");
    IT_ERR("ERR numkeys should be greater than 0", it_c, "LMPOP x l1 LEFT");
    IT_ERR("ERR syntax error", it_c, "LMPOP 2 l1 LEFT");
    IT_ERR("ERR syntax error", it_c, "LMPOP 1 l2 UP");
    IT_ERR("ERR count should be greater than 0", it_c, "LMPOP 1 l2 LEFT COUNT 0");
    IT_ERR("ERR syntax error", it_c, "LMPOP 1 l2 LEFT COUNT 1 COUNT 2");
    IT_ERR(WRONGTYPE, it_c, "LMPOP 2 str l2 LEFT");
    cr_assert_str_eq(rep("LMPOP 2 l2 str LEFT"), "[\"l2\", [\"x\"]]"); /* first non-empty wins */
    IT_INT(3, it_c, "ZADD z1 1 a 2 b 3 c");
    cr_assert_str_eq(rep("ZMPOP 2 nokey z1 MIN"), "[\"z1\", [[\"a\", \"1\"]]]");
    cr_assert_str_eq(rep("ZMPOP 1 z1 MAX COUNT 5"), "[\"z1\", [[\"c\", \"3\"], [\"b\", \"2\"]]]");
    IT_INT(0, it_c, "EXISTS z1");
    cr_assert_str_eq(rep("ZMPOP 1 nokey MIN"), "(nil)");
    IT_ERR("ERR syntax error", it_c, "ZMPOP 1 z1 LOW");
    IT_ERR(WRONGTYPE, it_c, "ZMPOP 1 str MIN");
    int fd = raw3_open();
    cr_assert_str_eq(raw(fd, "ZADD z2 1.5 q"), ":1\r\n");
    cr_assert_str_eq(raw(fd, "ZMPOP 1 z2 MIN"),
                     "*2\r\n$2\r\nz2\r\n*1\r\n*2\r\n$1\r\nq\r\n,1.5\r\n");
    cr_assert_str_eq(raw(fd, "LMPOP 1 nokey LEFT"), "_\r\n");
    close(fd);
}

/* ---------------------------------------------------------------- concurrency */

struct mover_arg {
    redisContext *c; /* connected and closed by the test thread */
    int seed;
    int ok; /* set when the thread ran all its commands */
};

/* Moves elements and members between l0..l3 and s0..s3 on its own connection. */
static void *mover(void *p) {
    struct mover_arg *a = p;
    unsigned seed = (unsigned)a->seed;
    static const char *const side[] = {"LEFT", "RIGHT"};
    for (int i = 0; i < 400; i++) {
        int x = rand_r(&seed) % 4, y = rand_r(&seed) % 4;
        redisReply *r;
        switch (rand_r(&seed) % 3) {
        case 0:
            r = redisCommand(a->c, "LMOVE l%d l%d %s %s", x, y, side[rand_r(&seed) % 2],
                             side[rand_r(&seed) % 2]);
            break;
        case 1:
            r = redisCommand(a->c, "RPOPLPUSH l%d l%d", x, y);
            break;
        default:
            r = redisCommand(a->c, "SMOVE s%d s%d %d", x, y, rand_r(&seed) % 100);
            break;
        }
        int bad = r == NULL || r->type == REDIS_REPLY_ERROR;
        freeReplyObject(r);
        if (bad)
            return NULL;
    }
    a->ok = 1;
    return NULL;
}

/* Concurrent moves between lists and between sets lose and duplicate nothing. */
Test(types, concurrent_moves) {
    for (int i = 0; i < 100; i++) {
        IT_INT(i + 1, it_c, "RPUSH l0 %d", i);
        IT_INT(1, it_c, "SADD s0 %d", i);
    }
    enum { T = 4 };
    pthread_t th[T];
    struct mover_arg args[T];
    for (int t = 0; t < T; t++) {
        args[t] = (struct mover_arg){it_connect(&it_srv), t + 1, 0};
        cr_assert_eq(pthread_create(&th[t], NULL, mover, &args[t]), 0);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        it_close(args[t].c);
        cr_assert(args[t].ok, "mover %d failed", t);
    }
    int seen_l[100] = {0}, seen_s[100] = {0};
    for (int k = 0; k < 4; k++) {
        redisReply *r = it_cmd(it_c, "LRANGE l%d 0 -1", k);
        for (size_t i = 0; i < r->elements; i++)
            seen_l[atoi(r->element[i]->str)]++;
        r = it_cmd(it_c, "SMEMBERS s%d", k);
        for (size_t i = 0; i < r->elements; i++)
            seen_s[atoi(r->element[i]->str)]++;
    }
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(seen_l[i], 1, "list element %d seen %d times", i, seen_l[i]);
        cr_assert_eq(seen_s[i], 1, "set member %d seen %d times", i, seen_s[i]);
    }
}

/* ---------------------------------------------------------------- memory limit */

/* Reads a numeric INFO field. */
static long long info_field(const char *section, const char *field) {
    redisReply *r = it_cmd(it_c, "INFO %s", section);
    IT_TYPE(r, REDIS_REPLY_STRING);
    char key[64];
    snprintf(key, sizeof(key), "\n%s:", field);
    const char *p = strstr(r->str, key);
    cr_assert(p != NULL, "INFO %s has no %s", section, field);
    return atoll(p + strlen(key));
}

/* 40 MiB of list and hash elements into a 16 MiB server: used_memory stays within the limit
 * (crescent evicts least recently used keys; redis-server's default policy answers OOM). */
Test(types_memory, aggregates_respect_the_limit, .fini = it_teardown, .timeout = 60) {
    struct it_opts o = {.memory = "16mb"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    static char v[1024];
    memset(v, 'e', sizeof(v));
    long long ok = 0, oom = 0;
    for (int k = 0; k < 40; k++) {
        for (int i = 0; i < 500; i++) {
            redisAppendCommand(it_c, "RPUSH list:%d %b", k, v, sizeof(v));
            redisAppendCommand(it_c, "HSET hash:%d f%d %b", k, i, v, sizeof(v));
        }
        for (int i = 0; i < 1000; i++) {
            redisReply *r;
            cr_assert_eq(redisGetReply(it_c, (void **)&r), REDIS_OK);
            if (r->type == REDIS_REPLY_ERROR) {
                cr_assert_str_eq(r->str, "OOM command not allowed when used memory > 'maxmemory'.");
                oom++;
            } else {
                cr_assert_eq(r->type, REDIS_REPLY_INTEGER);
                ok++;
            }
            freeReplyObject(r);
        }
    }
    long long used = info_field("memory", "used_memory");
    long long max = info_field("memory", "maxmemory");
    cr_assert_eq(max, 16 << 20);
    cr_assert(used <= max + max / 10, "used_memory %lld above maxmemory %lld", used, max);
    cr_assert(ok > 0, "nothing was stored");
    if (it_target_is_crescent()) {
        cr_assert_eq(oom, 0, "crescent evicts instead of refusing");
        cr_assert(info_field("stats", "evicted_keys") > 0);
    }
}
