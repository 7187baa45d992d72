/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for the bitmap commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD,
 * BITFIELD_RO), LCS, the INFO cpu section, the Redis encoding parameters that CONFIG SET
 * accepts, and the small compatibility commands SUBSTR, OBJECT IDLETIME/FREQ, LASTSAVE, SWAPDB
 * and MOVE. Every expected value is what redis-server 7.0 answers (CRESCENT_TEST_SERVER=redis);
 * the memory-limit test and the database-index cases check each server's own answer. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TestSuite(bitmap, .init = it_setup, .fini = it_teardown, .timeout = 60);

/* Sets key to the n bytes at v (binary-safe). */
static void set_bytes(const char *key, const char *v, size_t n) {
    redisReply *r = it_cmd(it_c, "SET %s %b", key, v, n);
    IT_TYPE(r, REDIS_REPLY_STATUS);
}

/* Asserts that key holds exactly the n bytes at want. */
static void assert_bytes(const char *key, const char *want, size_t n) {
    redisReply *r = it_cmd(it_c, "GET %s", key);
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert_eq(r->len, n, "GET %s: %zu bytes, %zu expected", key, r->len, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq((unsigned char)r->str[i], (unsigned char)want[i],
                     "GET %s: byte %zu is 0x%02x, 0x%02x expected", key, i,
                     (unsigned char)r->str[i], (unsigned char)want[i]);
}

#define NIL (-123456789012345LL) /* marks a null entry in assert_int_array */

/* Asserts that r is an array of n integers (NIL: a null entry) equal to want. */
static void assert_int_array(const redisReply *r, const long long *want, size_t n) {
    char b[IT_MSG_MAX];
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == n,
              "array of %zu expected, got %s", n, it_reply_str(r, b, sizeof(b)));
    for (size_t i = 0; i < n; i++) {
        const redisReply *e = r->element[i];
        if (want[i] == NIL)
            cr_assert_eq(e->type, REDIS_REPLY_NIL, "entry %zu: nil expected, got %s", i,
                         it_reply_str(e, b, sizeof(b)));
        else
            cr_assert(e->type == REDIS_REPLY_INTEGER && e->integer == want[i],
                      "entry %zu: %lld expected, got %s", i, want[i],
                      it_reply_str(e, b, sizeof(b)));
    }
}

#define BF(want, ...)                                                                \
    do {                                                                             \
        const long long w_[] = {want};                                               \
        assert_int_array(it_cmd(it_c, __VA_ARGS__), w_, sizeof(w_) / sizeof(w_[0])); \
    } while (0)
#define LIST(...) __VA_ARGS__

/* ---------------------------------------------------------------- SETBIT / GETBIT */

Test(bitmap, setbit_getbit) {
    IT_INT(0, it_c, "SETBIT k 7 1");
    assert_bytes("k", "\x01", 1);
    IT_INT(1, it_c, "SETBIT k 7 0");
    IT_INT(0, it_c, "SETBIT k 0 1");
    assert_bytes("k", "\x80", 1);
    IT_INT(0, it_c, "SETBIT k 100 1"); /* grows with zero bytes, like SETRANGE */
    IT_INT(13, it_c, "STRLEN k");
    assert_bytes("k", "\x80\0\0\0\0\0\0\0\0\0\0\0\x08", 13);
    IT_INT(1, it_c, "GETBIT k 0");
    IT_INT(0, it_c, "GETBIT k 1");
    IT_INT(1, it_c, "GETBIT k 100");
    IT_INT(0, it_c, "GETBIT k 101");
    IT_INT(0, it_c, "GETBIT k 1000000"); /* beyond the string */
    IT_INT(0, it_c, "GETBIT missing 5");
    IT_INT(0, it_c, "EXISTS missing");
    IT_INT(0, it_c, "SETBIT z 0 0"); /* a clear bit on a missing key still creates it */
    assert_bytes("z", "\0", 1);
    /* SETBIT keeps the TTL. */
    IT_OK(it_c, "SET t a EX 100");
    IT_INT(0, it_c, "SETBIT t 6 1");
    assert_bytes("t", "c", 1);
    redisReply *r = it_cmd(it_c, "TTL t");
    cr_assert(r->type == REDIS_REPLY_INTEGER && r->integer > 90, "TTL kept: %lld", r->integer);
}

Test(bitmap, setbit_getbit_errors) {
    const char *off = "ERR bit offset is not an integer or out of range";
    const char *bit = "ERR bit is not an integer or out of range";
    IT_ERR(off, it_c, "SETBIT k -1 1");
    IT_ERR(off, it_c, "SETBIT k x 1");
    IT_ERR(off, it_c, "SETBIT k 4294967296 1"); /* 512 MB = proto-max-bulk-len */
    IT_ERR(off, it_c, "SETBIT k #1 1");
    IT_ERR(off, it_c, "GETBIT k 4294967296");
    IT_ERR(off, it_c, "GETBIT k 1.5");
    IT_ERR(bit, it_c, "SETBIT k 1 2");
    IT_ERR(bit, it_c, "SETBIT k 1 -1");
    IT_ERR(bit, it_c, "SETBIT k 1 x");
    IT_ERR(off, it_c, "SETBIT k x x"); /* the offset is checked first */
    IT_INT(0, it_c, "EXISTS k");
    IT_INT(1, it_c, "RPUSH l a");
    IT_ERR("WRONGTYPE Operation against a key holding the wrong kind of value", it_c,
           "SETBIT l 1 1");
    IT_ERR("WRONGTYPE Operation against a key holding the wrong kind of value", it_c, "GETBIT l 1");
    IT_ERR(off, it_c, "GETBIT l -1"); /* arguments before the type */
    IT_ERR("ERR wrong number of arguments for 'setbit' command", it_c, "SETBIT k 1");
    IT_ERR("ERR wrong number of arguments for 'getbit' command", it_c, "GETBIT k");
}

/* A SETBIT that changes nothing does not count as a write for WATCH; one that changes does. */
Test(bitmap, setbit_watch) {
    IT_INT(0, it_c, "SETBIT k 3 1");
    IT_OK(it_c, "WATCH k");
    IT_INT(1, it_c, "SETBIT k 3 1");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "PING");
    redisReply *r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    IT_OK(it_c, "WATCH k");
    IT_INT(1, it_c, "SETBIT k 3 0");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "PING");
    IT_NIL(it_c, "EXEC");
}

/* ---------------------------------------------------------------- BITCOUNT */

Test(bitmap, bitcount) {
    IT_OK(it_c, "SET k foobar");
    IT_INT(26, it_c, "BITCOUNT k");
    IT_INT(4, it_c, "BITCOUNT k 0 0");
    IT_INT(6, it_c, "BITCOUNT k 1 1");
    IT_INT(6, it_c, "BITCOUNT k 1 1 BYTE");
    IT_INT(17, it_c, "BITCOUNT k 5 30 BIT");
    IT_INT(17, it_c, "BITCOUNT k 5 30 bit");
    IT_INT(26, it_c, "BITCOUNT k 0 -1");
    IT_INT(26, it_c, "BITCOUNT k -100 100");
    IT_INT(4, it_c, "BITCOUNT k -1 -1"); /* 'r' */
    IT_INT(1, it_c, "BITCOUNT k -3 -1 BIT");
    IT_INT(0, it_c, "BITCOUNT k 3 1");
    IT_INT(0, it_c, "BITCOUNT k -1 -5 FOO"); /* empty negative range answers before the unit */
    IT_INT(0, it_c, "BITCOUNT k 100 200");
    IT_INT(1, it_c, "BITCOUNT k 1 1 BIT");
    IT_INT(0, it_c, "BITCOUNT missing");
    IT_INT(0, it_c, "BITCOUNT missing 0"); /* a missing key answers 0 before any parsing */
    IT_INT(0, it_c, "BITCOUNT missing x y z");
    IT_OK(it_c, "SET e %s", "");
    IT_INT(0, it_c, "BITCOUNT e");
    IT_INT(0, it_c, "BITCOUNT e 0 -1 BIT");
    IT_ERR("ERR syntax error", it_c, "BITCOUNT k 0");
    IT_ERR("ERR syntax error", it_c, "BITCOUNT k 0 1 FOO");
    IT_ERR("ERR syntax error", it_c, "BITCOUNT k 0 1 BIT x");
    IT_ERR("ERR value is not an integer or out of range", it_c, "BITCOUNT k x 1");
    IT_ERR("ERR value is not an integer or out of range", it_c, "BITCOUNT k 0 y");
    IT_INT(1, it_c, "RPUSH l a");
    IT_ERR("WRONGTYPE Operation against a key holding the wrong kind of value", it_c, "BITCOUNT l");
    IT_ERR("ERR wrong number of arguments for 'bitcount' command", it_c, "BITCOUNT");
}

/* ---------------------------------------------------------------- BITPOS */

Test(bitmap, bitpos) {
    set_bytes("k", "\xff\xf0\x00", 3);
    IT_INT(12, it_c, "BITPOS k 0");
    IT_INT(0, it_c, "BITPOS k 1");
    set_bytes("k", "\x00\xff\xf0", 3);
    IT_INT(8, it_c, "BITPOS k 1 0");
    IT_INT(16, it_c, "BITPOS k 1 2");
    IT_INT(16, it_c, "BITPOS k 1 2 -1 BYTE");
    IT_INT(8, it_c, "BITPOS k 1 7 15 BIT");
    IT_INT(7, it_c, "BITPOS k 0 7 15 BIT");
    IT_INT(20, it_c, "BITPOS k 0 1");
    IT_INT(20, it_c, "BITPOS k 0 -1");
    IT_INT(-1, it_c, "BITPOS k 1 3");
    IT_INT(-1, it_c, "BITPOS k 1 2 1");
    set_bytes("k", "\x00\x00\x00", 3);
    IT_INT(-1, it_c, "BITPOS k 1");
    IT_INT(-1, it_c, "BITPOS k 1 7 -3 BIT");
    IT_INT(0, it_c, "BITPOS k 0");
    /* All ones: without an end the string continues with zeros; with an end there is none. */
    set_bytes("k", "\xff\xff", 2);
    IT_INT(16, it_c, "BITPOS k 0");
    IT_INT(16, it_c, "BITPOS k 0 1");
    IT_INT(-1, it_c, "BITPOS k 0 0 -1");
    IT_INT(-1, it_c, "BITPOS k 0 3 9 BIT");
    IT_INT(3, it_c, "BITPOS k 1 3 9 BIT");
    IT_INT(0, it_c, "BITPOS missing 0");
    IT_INT(-1, it_c, "BITPOS missing 1");
    IT_INT(0, it_c, "BITPOS missing 0 x y z"); /* a missing key answers before the range */
    IT_OK(it_c, "SET e %s", "");
    IT_INT(-1, it_c, "BITPOS e 0");
    IT_INT(-1, it_c, "BITPOS e 1");
    IT_ERR("ERR The bit argument must be 1 or 0.", it_c, "BITPOS k 2");
    IT_ERR("ERR value is not an integer or out of range", it_c, "BITPOS k x");
    IT_ERR("ERR value is not an integer or out of range", it_c, "BITPOS k 1 x");
    IT_ERR("ERR syntax error", it_c, "BITPOS k 1 0 1 FOO");
    IT_ERR("ERR value is not an integer or out of range", it_c, "BITPOS k 1 x 1 FOO");
    IT_ERR("ERR syntax error", it_c, "BITPOS k 1 0 x FOO"); /* the unit before the end */
    IT_ERR("ERR syntax error", it_c, "BITPOS k 1 0 1 BIT x");
    IT_INT(1, it_c, "RPUSH l a");
    IT_ERR("WRONGTYPE Operation against a key holding the wrong kind of value", it_c, "BITPOS l 1");
}

/* ---------------------------------------------------------------- BITOP */

Test(bitmap, bitop) {
    set_bytes("a", "\xff\x0f\xaa", 3);
    set_bytes("b", "\xf0\xff", 2);
    IT_INT(3, it_c, "BITOP AND d a b");
    assert_bytes("d", "\xf0\x0f\x00", 3);
    IT_INT(3, it_c, "BITOP OR d a b");
    assert_bytes("d", "\xff\xff\xaa", 3);
    IT_INT(3, it_c, "BITOP XOR d a b");
    assert_bytes("d", "\x0f\xf0\xaa", 3);
    IT_INT(3, it_c, "BITOP xor d a b missing");
    assert_bytes("d", "\x0f\xf0\xaa", 3);
    IT_INT(3, it_c, "BITOP AND d a b missing");
    assert_bytes("d", "\0\0\0", 3);
    IT_INT(3, it_c, "BITOP NOT d a");
    assert_bytes("d", "\x00\xf0\x55", 3);
    IT_INT(3, it_c, "BITOP NOT a a"); /* destination among the sources */
    assert_bytes("a", "\x00\xf0\x55", 3);
    /* Only missing or empty sources: the destination is deleted and the reply is 0. */
    IT_OK(it_c, "SET d x EX 100");
    IT_INT(0, it_c, "BITOP OR d missing1 missing2");
    IT_INT(0, it_c, "EXISTS d");
    /* The destination is overwritten whatever it held, and loses its TTL. */
    IT_INT(1, it_c, "RPUSH dl x");
    IT_INT(2, it_c, "BITOP OR dl b");
    assert_bytes("dl", "\xf0\xff", 2);
    IT_OK(it_c, "SET dt x EX 100");
    IT_INT(2, it_c, "BITOP OR dt b");
    IT_INT(-1, it_c, "TTL dt");
    /* Long values take the word-at-a-time path. */
    char big[1000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i * 7);
    set_bytes("big", big, sizeof(big));
    IT_INT(1000, it_c, "BITOP XOR x big big");
    IT_INT(0, it_c, "BITCOUNT x");
    IT_INT(1000, it_c, "BITOP NOT x big");
    IT_INT(1000, it_c, "BITOP XOR y x big"); /* x ^ big is all ones */
    IT_INT(8000, it_c, "BITCOUNT y");
    IT_ERR("ERR syntax error", it_c, "BITOP NAND d a b");
    IT_ERR("ERR BITOP NOT must be called with a single source key.", it_c, "BITOP NOT d a b");
    IT_INT(1, it_c, "RPUSH l a");
    IT_ERR("WRONGTYPE Operation against a key holding the wrong kind of value", it_c,
           "BITOP AND d a l");
    IT_ERR("ERR wrong number of arguments for 'bitop' command", it_c, "BITOP AND d");
}

/* ---------------------------------------------------------------- BITFIELD */

Test(bitmap, bitfield_basic) {
    BF(LIST(1, 0), "BITFIELD k INCRBY i5 100 1 GET u4 0");
    BF(LIST(0), "BITFIELD k SET u8 #1 200");
    BF(LIST(200, -56), "BITFIELD k GET u8 8 GET i8 #1");
    BF(LIST(200, 0), "BITFIELD k SET u8 8 0 GET u8 8");
    BF(LIST(0, 127, -128), "BITFIELD k SET i8 0 127 GET i8 0 INCRBY i8 0 1");
    BF(LIST(-128), "BITFIELD k OVERFLOW SAT INCRBY i8 0 -1000");
    BF(LIST(127), "BITFIELD k OVERFLOW SAT INCRBY i8 0 1000");
    BF(LIST(NIL, 127), "BITFIELD k OVERFLOW FAIL INCRBY i8 0 1 GET i8 0");
    BF(LIST(0, -9223372036854775807LL - 1),
       "BITFIELD j SET i64 0 9223372036854775807 INCRBY i64 0 1");
    BF(LIST(4611686018427387904LL), "BITFIELD j GET u63 0"); /* the top 63 of the 64 bits */
    BF(LIST(1, 0), "BITFIELD j SET u1 0 0 GET i64 0");       /* clears the sign bit */
    BF(LIST(), "BITFIELD k");
    BF(LIST(), "BITFIELD k OVERFLOW SAT");
    BF(LIST(0, 0), "BITFIELD missing GET u8 0 GET i64 1000");
    IT_INT(0, it_c, "EXISTS missing"); /* reads create nothing */
}

/* Redis's documented overflow example: u2 counters with WRAP and SAT side by side. */
Test(bitmap, bitfield_overflow) {
    BF(LIST(1, 1), "BITFIELD k INCRBY u2 100 1 OVERFLOW SAT INCRBY u2 102 1");
    BF(LIST(2, 2), "BITFIELD k INCRBY u2 100 1 OVERFLOW SAT INCRBY u2 102 1");
    BF(LIST(3, 3), "BITFIELD k INCRBY u2 100 1 OVERFLOW SAT INCRBY u2 102 1");
    BF(LIST(0, 3), "BITFIELD k INCRBY u2 100 1 OVERFLOW SAT INCRBY u2 102 1");
    BF(LIST(NIL), "BITFIELD k OVERFLOW FAIL INCRBY u2 102 1");
    IT_INT(13, it_c, "STRLEN k");
    /* SET saturates or wraps the value it stores; the reply is the old value. */
    BF(LIST(0, 255), "BITFIELD w SET u8 0 -1 GET u8 0");
    BF(LIST(255, 255), "BITFIELD w OVERFLOW SAT SET u8 0 300 GET u8 0");
    BF(LIST(255, 44), "BITFIELD w SET u8 0 300 GET u8 0");
    BF(LIST(NIL, 44), "BITFIELD w OVERFLOW FAIL SET u8 0 300 GET u8 0");
    BF(LIST(44, 255), "BITFIELD w OVERFLOW SAT SET u8 0 -5 GET u8 0"); /* -5 is 2^64-5 */
    BF(LIST(-1, -8), "BITFIELD w OVERFLOW SAT SET i4 0 -100 GET i4 0");
    BF(LIST(7, 7), "BITFIELD w OVERFLOW WRAP INCRBY i4 0 -1 INCRBY i4 0 0");
    BF(LIST(6), "BITFIELD w INCRBY i4 0 -17");
    /* A FAIL on a missing key still creates it, grown to the field (as Redis does). */
    BF(LIST(NIL), "BITFIELD n OVERFLOW FAIL INCRBY u2 20 5");
    assert_bytes("n", "\0\0\0", 3);
}

Test(bitmap, bitfield_errors) {
    const char *type = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not "
                       "supported but i64 is.";
    IT_ERR(type, it_c, "BITFIELD k GET u64 0");
    IT_ERR(type, it_c, "BITFIELD k GET i65 0");
    IT_ERR(type, it_c, "BITFIELD k GET i0 0");
    IT_ERR(type, it_c, "BITFIELD k GET x8 0");
    IT_ERR(type, it_c, "BITFIELD k GET I8 0");
    IT_ERR(type, it_c, "BITFIELD k GET i 0");
    IT_ERR(type, it_c, "BITFIELD k GET i08 0");
    IT_ERR("ERR bit offset is not an integer or out of range", it_c, "BITFIELD k GET u8 -1");
    IT_ERR("ERR bit offset is not an integer or out of range", it_c, "BITFIELD k GET u8 #x");
    IT_ERR("ERR bit offset is not an integer or out of range", it_c,
           "BITFIELD k GET u8 4294967296");
    IT_ERR("ERR bit offset is not an integer or out of range", it_c,
           "BITFIELD k GET u8 #536870912");
    IT_ERR("ERR value is not an integer or out of range", it_c, "BITFIELD k SET u8 0 x");
    IT_ERR("ERR Invalid OVERFLOW type specified", it_c, "BITFIELD k OVERFLOW up");
    IT_ERR("ERR syntax error", it_c, "BITFIELD k FOO");
    IT_ERR("ERR syntax error", it_c, "BITFIELD k GET u8");
    IT_ERR("ERR syntax error", it_c, "BITFIELD k SET u8 0");
    IT_ERR("ERR syntax error", it_c, "BITFIELD k OVERFLOW");
    /* Errors anywhere stop the whole command before anything runs. */
    IT_ERR("ERR syntax error", it_c, "BITFIELD k SET u8 0 1 FOO");
    IT_INT(0, it_c, "EXISTS k");
    IT_INT(1, it_c, "RPUSH l a");
    IT_ERR("WRONGTYPE Operation against a key holding the wrong kind of value", it_c,
           "BITFIELD l GET u8 0");
    IT_ERR("WRONGTYPE Operation against a key holding the wrong kind of value", it_c,
           "BITFIELD l SET u8 0 1");
    IT_ERR("ERR wrong number of arguments for 'bitfield' command", it_c, "BITFIELD");
}

Test(bitmap, bitfield_ro) {
    IT_OK(it_c, "SET k A");
    BF(LIST(65, 1), "BITFIELD_RO k GET u8 0 GET u4 #1");
    BF(LIST(), "BITFIELD_RO k");
    IT_ERR("ERR BITFIELD_RO only supports the GET subcommand", it_c, "BITFIELD_RO k SET u8 0 1");
    IT_ERR("ERR BITFIELD_RO only supports the GET subcommand", it_c,
           "BITFIELD_RO k GET u8 0 INCRBY u8 0 1");
    IT_ERR("ERR syntax error", it_c, "BITFIELD_RO k FOO");
    IT_STR("A", it_c, "GET k");
    IT_ERR("ERR wrong number of arguments for 'bitfield_ro' command", it_c, "BITFIELD_RO");
}

/* A BITFIELD that changes no byte leaves the key untouched (WATCH still holds). */
Test(bitmap, bitfield_watch) {
    BF(LIST(0), "BITFIELD k SET u8 0 7");
    IT_OK(it_c, "WATCH k");
    BF(LIST(7, 7), "BITFIELD k SET u8 0 7 INCRBY u8 0 0");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "PING");
    redisReply *r = it_cmd(it_c, "EXEC");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    IT_OK(it_c, "WATCH k");
    BF(LIST(8), "BITFIELD k INCRBY u8 0 1");
    IT_OK(it_c, "MULTI");
    IT_STATUS("QUEUED", it_c, "PING");
    IT_NIL(it_c, "EXEC");
}

/* ---------------------------------------------------------------- large values */

Test(bitmap, large_offsets) {
    IT_INT(0, it_c, "SETBIT big 8000000 1");
    IT_INT(1000001, it_c, "STRLEN big");
    IT_INT(1, it_c, "BITCOUNT big");
    IT_INT(8000000, it_c, "BITPOS big 1");
    IT_INT(0, it_c, "BITPOS big 0");
    IT_INT(-1, it_c, "BITPOS big 1 0 999999");
    IT_INT(1, it_c, "BITCOUNT big 7999999 8000001 BIT");
    IT_INT(1000001, it_c, "BITOP NOT inv big");
    IT_INT(8000007, it_c, "BITCOUNT inv");
    IT_INT(8000000, it_c, "BITPOS inv 0");
    BF(LIST(0, 1), "BITFIELD big SET u8 #500000 1 GET u8 #500000");
    IT_INT(1000001, it_c, "STRLEN big");
    BF(LIST(0), "BITFIELD big SET u8 #3000000 1");
    IT_INT(3000001, it_c, "STRLEN big");
}

/* Concurrent writers on the same keys (several worker threads with CRESCENT_TEST_ARGS="--threads
 * N"): BITFIELD INCRBY counters lose no increment, and SETBITs that grow one value from many
 * clients lose no bit, while BITOP and BITCOUNT read the keys being written. */
#define BW_THREADS 4
#define BW_ITERS   500

struct bit_writer {
    redisContext *c;
    int id;
    int errors; /* replies of the wrong type */
};

static void *bit_writer_main(void *arg) {
    struct bit_writer *w = arg;
    for (int j = 0; j < BW_ITERS; j++) {
        char off[32];
        snprintf(off, sizeof(off), "%d", (j * BW_THREADS + w->id) * 3);
        redisReply *r[3];
        r[0] = redisCommand(w->c, "BITFIELD cnt INCRBY u32 0 1 INCRBY i16 #5 -1");
        r[1] = redisCommand(w->c, "SETBIT bm %s 1", off);
        r[2] = redisCommand(w->c, j % 10 ? "BITCOUNT bm" : "BITOP OR dst bm cnt");
        if (!r[0] || r[0]->type != REDIS_REPLY_ARRAY || !r[1] || r[1]->integer != 0 || !r[2] ||
            r[2]->type != REDIS_REPLY_INTEGER)
            w->errors++;
        for (int k = 0; k < 3; k++)
            if (r[k])
                freeReplyObject(r[k]);
    }
    return NULL;
}

Test(bitmap, concurrent_writers) {
    pthread_t th[BW_THREADS];
    struct bit_writer w[BW_THREADS];
    for (int t = 0; t < BW_THREADS; t++) {
        w[t] = (struct bit_writer){it_connect(&it_srv), t, 0};
        cr_assert_eq(pthread_create(&th[t], NULL, bit_writer_main, &w[t]), 0);
    }
    for (int t = 0; t < BW_THREADS; t++) {
        pthread_join(th[t], NULL);
        it_close(w[t].c);
        cr_assert_eq(w[t].errors, 0, "writer %d got %d unexpected replies", t, w[t].errors);
    }
    BF(LIST(BW_THREADS * BW_ITERS, -BW_THREADS * BW_ITERS), "BITFIELD cnt GET u32 0 GET i16 #5");
    IT_INT(BW_THREADS * BW_ITERS, it_c, "BITCOUNT bm");
    IT_INT((BW_THREADS * BW_ITERS - 1) * 3 / 8 + 1, it_c, "STRLEN bm");
}

/* Growing a bitmap past --memory: crescent refuses with Redis's OOM error (nothing to evict);
 * redis-server with maxmemory and its default policy checks memory only before the command,
 * so the first big SETBIT succeeds there. */
Test(bitmap_memory, setbit_beyond_memory, .fini = it_teardown, .timeout = 60) {
    struct it_opts o = {.memory = "8mb"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    if (it_target_is_redis())
        IT_INT(0, it_c, "SETBIT k 200000000 1");
    else
        IT_ERR("OOM command not allowed when used memory > 'maxmemory'.", it_c,
               "SETBIT k 200000000 1");
    if (it_target_is_crescent()) {
        IT_INT(0, it_c, "EXISTS k");
        IT_INT(0, it_c, "SETBIT k 1000 1"); /* small ones still fit */
        IT_INT(126, it_c, "STRLEN k");
        /* 7.5 MB fits in the 8 MB segment, but not with the usual room to grow: it is stored
         * without that room. */
        IT_INT(0, it_c, "SETBIT big 60000000 1");
        IT_INT(7500001, it_c, "STRLEN big");
    }
}

/* ---------------------------------------------------------------- LCS */

Test(bitmap, lcs) {
    IT_OK(it_c, "MSET key1 ohmytext key2 mynewtext");
    IT_STR("mytext", it_c, "LCS key1 key2");
    IT_INT(6, it_c, "LCS key1 key2 LEN");
    IT_STR("", it_c, "LCS key1 missing");
    IT_INT(0, it_c, "LCS missing missing2 LEN");
    IT_STR("ohmytext", it_c, "LCS key1 key1");
    redisReply *r = it_cmd(it_c, "LCS key1 key2 IDX");
    char b[IT_MSG_MAX];
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4, "%s", it_reply_str(r, b, sizeof(b)));
    cr_assert_str_eq(r->element[0]->str, "matches");
    const redisReply *m = r->element[1];
    cr_assert_eq(m->elements, 2, "%s", it_reply_str(r, b, sizeof(b)));
    const long long want[2][4] = {{4, 7, 5, 8}, {2, 3, 0, 1}};
    for (int i = 0; i < 2; i++) {
        const redisReply *e = m->element[i];
        cr_assert_eq(e->elements, 2);
        cr_assert_eq(e->element[0]->element[0]->integer, want[i][0]);
        cr_assert_eq(e->element[0]->element[1]->integer, want[i][1]);
        cr_assert_eq(e->element[1]->element[0]->integer, want[i][2]);
        cr_assert_eq(e->element[1]->element[1]->integer, want[i][3]);
    }
    cr_assert_str_eq(r->element[2]->str, "len");
    cr_assert_eq(r->element[3]->integer, 6);
    r = it_cmd(it_c, "LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    m = r->element[1];
    cr_assert_eq(m->elements, 1, "%s", it_reply_str(r, b, sizeof(b)));
    cr_assert_eq(m->element[0]->elements, 3);
    cr_assert_eq(m->element[0]->element[0]->element[0]->integer, 4);
    cr_assert_eq(m->element[0]->element[1]->element[1]->integer, 8);
    cr_assert_eq(m->element[0]->element[2]->integer, 4);
    cr_assert_eq(r->element[3]->integer, 6);
    r = it_cmd(it_c, "LCS key1 key2 IDX MINMATCHLEN -5");
    cr_assert_eq(r->element[1]->elements, 2, "%s", it_reply_str(r, b, sizeof(b)));
}

Test(bitmap, lcs_errors) {
    IT_OK(it_c, "MSET a abc b bcd");
    IT_INT(1, it_c, "RPUSH l x");
    IT_ERR("ERR If you want both the length and indexes, please just use IDX.", it_c,
           "LCS a b LEN IDX");
    IT_ERR("ERR syntax error", it_c, "LCS a b FOO");
    IT_ERR("ERR syntax error", it_c, "LCS a b MINMATCHLEN");
    IT_ERR("ERR value is not an integer or out of range", it_c, "LCS a b MINMATCHLEN x");
    IT_ERR("ERR The specified keys must contain string values", it_c, "LCS a l");
    IT_ERR("ERR The specified keys must contain string values", it_c, "LCS l a FOO");
    IT_ERR("ERR wrong number of arguments for 'lcs' command", it_c, "LCS a");
}

/* ---------------------------------------------------------------- INFO cpu, CONFIG */

static double info_double(const char *text, const char *field) {
    char key[80];
    snprintf(key, sizeof(key), "\n%s:", field);
    const char *p = strstr(text, key);
    cr_assert(p != NULL, "INFO has no %s", field);
    char *end;
    double v = strtod(p + strlen(key), &end);
    cr_assert(*end == '\r', "%s is not a number", field);
    return v;
}

Test(bitmap, info_cpu) {
    redisReply *r = it_cmd(it_c, "INFO cpu");
    IT_TYPE(r, REDIS_REPLY_STRING);
    cr_assert(strncmp(r->str, "# CPU\r\n", 7) == 0, "%s", r->str);
    const char *fields[] = {"used_cpu_sys",
                            "used_cpu_user",
                            "used_cpu_sys_children",
                            "used_cpu_user_children",
                            "used_cpu_sys_main_thread",
                            "used_cpu_user_main_thread"};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        cr_assert(info_double(r->str, fields[i]) >= 0, "%s", fields[i]);
    /* Six decimals, as Redis prints them. */
    const char *p = strstr(r->str, "used_cpu_user:");
    cr_assert(p && strchr(p, '.') && strchr(p, '\r') - strchr(p, '.') == 7, "%s", r->str);
    r = it_cmd(it_c, "INFO");
    cr_assert(strstr(r->str, "# CPU\r\n") != NULL, "default INFO includes the CPU section");
}

Test(bitmap, config_encoding_parameters) {
    const char *defaults[][2] = {
        {"hash-max-listpack-entries", "512"}, {"hash-max-ziplist-entries", "512"},
        {"hash-max-listpack-value", "64"},    {"hash-max-ziplist-value", "64"},
        {"list-max-listpack-size", "-2"},     {"list-max-ziplist-size", "-2"},
        {"list-compress-depth", "0"},         {"set-max-intset-entries", "512"},
        {"zset-max-listpack-entries", "128"}, {"zset-max-ziplist-entries", "128"},
        {"zset-max-listpack-value", "64"},    {"zset-max-ziplist-value", "64"},
        {"stream-node-max-bytes", "4096"},    {"stream-node-max-entries", "100"},
        {"hll-sparse-max-bytes", "3000"},     {"activerehashing", "yes"},
        {"lazyfree-lazy-user-del", "no"},     {"lazyfree-lazy-eviction", "no"},
    };
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
        redisReply *r = it_cmd(it_c, "CONFIG GET %s", defaults[i][0]);
        char b[IT_MSG_MAX];
        cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "CONFIG GET %s: %s",
                  defaults[i][0], it_reply_str(r, b, sizeof(b)));
        cr_assert_str_eq(r->element[0]->str, defaults[i][0]);
        cr_assert_str_eq(r->element[1]->str, defaults[i][1], "CONFIG GET %s", defaults[i][0]);
    }
    IT_OK(it_c, "CONFIG SET hash-max-ziplist-entries 1000");
    IT_OK(it_c, "CONFIG SET hash-max-listpack-value 1kb");
    IT_OK(it_c, "CONFIG SET list-max-ziplist-size 8 activerehashing no");
    redisReply *r = it_cmd(it_c, "CONFIG GET hash-max-listpack-entries");
    cr_assert_str_eq(r->element[1]->str, "1000");
    r = it_cmd(it_c, "CONFIG GET hash-max-ziplist-value");
    cr_assert_str_eq(r->element[1]->str, "1024");
    r = it_cmd(it_c, "CONFIG GET list-max-listpack-size");
    cr_assert_str_eq(r->element[1]->str, "8");
    r = it_cmd(it_c, "CONFIG GET activerehashing");
    cr_assert_str_eq(r->element[1]->str, "no");
    IT_ERR("ERR CONFIG SET failed (possibly related to argument 'hash-max-ziplist-entries') - "
           "argument couldn't be parsed into an integer",
           it_c, "CONFIG SET hash-max-ziplist-entries x");
    IT_ERR("ERR CONFIG SET failed (possibly related to argument 'set-max-intset-entries') - "
           "argument must be between 0 and 9223372036854775807 inclusive",
           it_c, "CONFIG SET set-max-intset-entries -1");
    IT_ERR("ERR CONFIG SET failed (possibly related to argument 'list-compress-depth') - "
           "argument must be between 0 and 2147483647 inclusive",
           it_c, "CONFIG SET list-compress-depth 2147483648");
    IT_ERR("ERR CONFIG SET failed (possibly related to argument 'list-max-listpack-size') - "
           "argument must be between -2147483648 and 2147483647 inclusive",
           it_c, "CONFIG SET list-max-listpack-size -2147483649");
    IT_ERR("ERR CONFIG SET failed (possibly related to argument 'zset-max-listpack-value') - "
           "argument must be a memory value",
           it_c, "CONFIG SET zset-max-listpack-value 1.5");
    IT_ERR("ERR CONFIG SET failed (possibly related to argument 'activerehashing') - argument "
           "must be 'yes' or 'no'",
           it_c, "CONFIG SET activerehashing 1");
    IT_ERR("ERR Unknown option or number of arguments for CONFIG SET - 'set-max-listpack-entries'",
           it_c, "CONFIG SET set-max-listpack-entries 128"); /* Redis 7.2 */
}

/* ---------------------------------------------------------------- small compatibility commands */

Test(bitmap, substr_object_idletime_freq) {
    IT_OK(it_c, "SET k hello");
    IT_STR("ell", it_c, "SUBSTR k 1 3");
    IT_STR("llo", it_c, "SUBSTR k -3 -1");
    IT_STR("", it_c, "SUBSTR missing 0 3");
    IT_ERR("ERR wrong number of arguments for 'substr' command", it_c, "SUBSTR k 1");
    redisReply *r = it_cmd(it_c, "OBJECT IDLETIME k");
    cr_assert(r->type == REDIS_REPLY_INTEGER && r->integer >= 0 && r->integer < 30,
              "OBJECT IDLETIME of a fresh key: %lld", r->integer);
    IT_NIL(it_c, "OBJECT IDLETIME missing");
    IT_NIL(it_c, "OBJECT FREQ missing");
    IT_ERR("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please "
           "note that when switching between policies at runtime LRU and LFU data will take "
           "some time to adjust.",
           it_c, "OBJECT FREQ k");
    IT_ERR("ERR wrong number of arguments for 'object|idletime' command", it_c, "OBJECT IDLETIME");
}

Test(bitmap, lastsave_swapdb_move) {
    redisReply *r = it_cmd(it_c, "LASTSAVE");
    long long now = (long long)time(NULL);
    cr_assert(r->type == REDIS_REPLY_INTEGER && r->integer <= now && r->integer > now - 600,
              "LASTSAVE is the start time: %lld (now %lld)", r->integer, now);
    IT_OK(it_c, "SWAPDB 0 0");
    IT_ERR("ERR invalid first DB index", it_c, "SWAPDB x 0");
    IT_ERR("ERR invalid second DB index", it_c, "SWAPDB 0 x");
    IT_ERR("ERR invalid second DB index", it_c, "SWAPDB 0 2147483648");
    IT_ERR("ERR DB index is out of range", it_c, "SWAPDB -1 0");
    IT_OK(it_c, "SET k v");
    IT_ERR("ERR source and destination objects are the same", it_c, "MOVE k 0");
    IT_ERR("ERR value is not an integer or out of range", it_c, "MOVE k x");
    IT_ERR("ERR value is out of range, value must between -2147483648 and 2147483647", it_c,
           "MOVE k 99999999999");
    /* Redis has 16 databases; Crescent only db 0 (as SELECT). */
    if (it_target_is_redis()) {
        IT_OK(it_c, "SWAPDB 0 1");
        IT_OK(it_c, "SWAPDB 0 1");
        IT_INT(1, it_c, "MOVE k 1");
    } else {
        IT_ERR("ERR DB index is out of range", it_c, "SWAPDB 0 1");
        IT_ERR("ERR DB index is out of range", it_c, "MOVE k 1");
        IT_STR("v", it_c, "GET k");
    }
}

/* The same parameters in a configuration file (redis.conf written for Redis keeps working). */
Test(bitmap_conf, encoding_parameters_in_config_file, .fini = it_teardown, .timeout = 30) {
    struct it_opts o = {.conf = "hash-max-ziplist-entries 256\n"
                                "zset-max-listpack-value 1kb\n"
                                "activerehashing no\n"
                                "lazyfree-lazy-user-del yes\n"};
    it_server_start(&it_srv, &o);
    it_c = it_connect(&it_srv);
    const char *want[][2] = {{"hash-max-listpack-entries", "256"},
                             {"zset-max-ziplist-value", "1024"},
                             {"activerehashing", "no"},
                             {"lazyfree-lazy-user-del", "yes"}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        redisReply *r = it_cmd(it_c, "CONFIG GET %s", want[i][0]);
        char b[IT_MSG_MAX];
        cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 2, "CONFIG GET %s: %s", want[i][0],
                  it_reply_str(r, b, sizeof(b)));
        cr_assert_str_eq(r->element[1]->str, want[i][1], "CONFIG GET %s", want[i][0]);
    }
}
