/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests for keyspace commands: DEL, UNLINK, EXISTS, TYPE, TOUCH, KEYS, RANDOMKEY,
 * RENAME, RENAMENX and COPY. TTL-related commands are in test_cmd_expire.c, SCAN in
 * test_cmd_scan.c. */
#include "common/fmacros.h"

#include "tests/integration/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(keyspace, .init = it_setup, .fini = it_teardown, .timeout = 30);

static bool reply_has(const redisReply *arr, const char *s) {
    for (size_t i = 0; i < arr->elements; i++) {
        if (strcmp(arr->element[i]->str, s) == 0) {
            return true;
        }
    }
    return false;
}

Test(keyspace, del_unlink) {
    IT_OK(it_c, "MSET a 1 b 2 c 3");
    IT_INT(2, it_c, "DEL a a b x");
    IT_INT(0, it_c, "EXISTS a b");
    IT_INT(1, it_c, "UNLINK c x");
    IT_INT(0, it_c, "DBSIZE");
    IT_INT(0, it_c, "DEL nothing");
    IT_ERR("ERR wrong number of arguments for 'del' command", it_c, "DEL");
    IT_ERR("ERR wrong number of arguments for 'unlink' command", it_c, "UNLINK");
}

Test(keyspace, exists_counts_duplicates) {
    IT_OK(it_c, "MSET a 1 b 2");
    IT_INT(3, it_c, "EXISTS a a b x");
    IT_INT(1, it_c, "EXISTS a");
    IT_INT(0, it_c, "EXISTS x");
    IT_ERR("ERR wrong number of arguments for 'exists' command", it_c, "EXISTS");
}

Test(keyspace, type) {
    IT_OK(it_c, "SET a 1");
    IT_STATUS("string", it_c, "TYPE a");
    IT_STATUS("none", it_c, "TYPE x");
    IT_ERR("ERR wrong number of arguments for 'type' command", it_c, "TYPE");
    IT_ERR("ERR wrong number of arguments for 'type' command", it_c, "TYPE a b");
}

Test(keyspace, touch) {
    IT_OK(it_c, "MSET a 1 b 2");
    IT_INT(2, it_c, "TOUCH a b x");
    IT_INT(2, it_c, "TOUCH a a x");
    IT_ERR("ERR wrong number of arguments for 'touch' command", it_c, "TOUCH");
}

Test(keyspace, keys_glob) {
    IT_OK(it_c, "MSET hello 1 hallo 2 hxllo 3 hllo 4 heeello 5 a*b 6 other 7");
    redisReply *r = it_cmd(it_c, "KEYS *");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 7);
    r = it_cmd(it_c, "KEYS h?llo");
    cr_assert_eq(r->elements, 3);
    cr_assert(reply_has(r, "hello") && reply_has(r, "hallo") && reply_has(r, "hxllo"));
    r = it_cmd(it_c, "KEYS h*llo");
    cr_assert_eq(r->elements, 5);
    r = it_cmd(it_c, "KEYS h[ae]llo");
    cr_assert_eq(r->elements, 2);
    cr_assert(reply_has(r, "hello") && reply_has(r, "hallo"));
    r = it_cmd(it_c, "KEYS h[^e]llo");
    cr_assert_eq(r->elements, 2);
    cr_assert(reply_has(r, "hallo") && reply_has(r, "hxllo"));
    r = it_cmd(it_c, "KEYS h[a-b]llo");
    cr_assert_eq(r->elements, 1);
    cr_assert(reply_has(r, "hallo"));
    r = it_cmd(it_c, "KEYS a\\*b");
    cr_assert_eq(r->elements, 1);
    cr_assert(reply_has(r, "a*b"));
    r = it_cmd(it_c, "KEYS nomatch*");
    IT_TYPE(r, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 0);
    r = it_cmd(it_c, "KEYS other");
    cr_assert_eq(r->elements, 1);
    IT_ERR("ERR wrong number of arguments for 'keys' command", it_c, "KEYS");
}

Test(keyspace, randomkey) {
    IT_NIL(it_c, "RANDOMKEY");
    IT_OK(it_c, "MSET a 1 b 2 c 3");
    for (int i = 0; i < 20; i++) {
        redisReply *r = it_cmd(it_c, "RANDOMKEY");
        IT_TYPE(r, REDIS_REPLY_STRING);
        cr_assert(strcmp(r->str, "a") == 0 || strcmp(r->str, "b") == 0 || strcmp(r->str, "c") == 0,
                  "RANDOMKEY returns an existing key, got %s", r->str);
    }
    IT_ERR("ERR wrong number of arguments for 'randomkey' command", it_c, "RANDOMKEY x");
}

Test(keyspace, rename) {
    IT_OK(it_c, "SET a 1");
    IT_OK(it_c, "RENAME a b");
    IT_INT(0, it_c, "EXISTS a");
    IT_STR("1", it_c, "GET b");
    IT_OK(it_c, "SET c 3");
    IT_OK(it_c, "RENAME b c"); /* overwrites */
    IT_STR("1", it_c, "GET c");
    IT_OK(it_c, "RENAME c c"); /* same name: OK, nothing changes */
    IT_STR("1", it_c, "GET c");
    IT_ERR("ERR no such key", it_c, "RENAME nosuch x");
    IT_OK(it_c, "SET t v EX 100");
    IT_OK(it_c, "RENAME t t2");
    redisReply *ttl = it_cmd(it_c, "TTL t2");
    cr_assert_gt(ttl->integer, 90, "RENAME keeps the ttl");
    IT_OK(it_c, "SET p v");
    IT_OK(it_c, "RENAME p t2");
    IT_INT(-1, it_c, "TTL t2"); /* the destination takes the source's (absent) ttl */
    IT_ERR("ERR wrong number of arguments for 'rename' command", it_c, "RENAME a");
}

Test(keyspace, renamenx) {
    IT_OK(it_c, "MSET a 1 b 2");
    IT_INT(0, it_c, "RENAMENX a b");
    IT_STR("1", it_c, "GET a");
    IT_INT(1, it_c, "RENAMENX a c");
    IT_INT(0, it_c, "EXISTS a");
    IT_STR("1", it_c, "GET c");
    IT_ERR("ERR no such key", it_c, "RENAMENX nosuch z");
    IT_INT(0, it_c, "RENAMENX c c");
}

Test(keyspace, copy) {
    IT_OK(it_c, "SET y v");
    IT_INT(1, it_c, "COPY y z");
    IT_STR("v", it_c, "GET z");
    IT_OK(it_c, "SET y w");
    IT_INT(0, it_c, "COPY y z");
    IT_STR("v", it_c, "GET z");
    IT_INT(1, it_c, "COPY y z REPLACE");
    IT_STR("w", it_c, "GET z");
    IT_INT(0, it_c, "COPY nosuch z2");
    IT_INT(0, it_c, "EXISTS z2");
    IT_OK(it_c, "SET t v EX 100");
    IT_INT(1, it_c, "COPY t t3");
    redisReply *ttl = it_cmd(it_c, "TTL t3");
    cr_assert_gt(ttl->integer, 90, "COPY copies the ttl");
    IT_ERR("ERR source and destination objects are the same", it_c, "COPY y y");
    IT_ERR("ERR source and destination objects are the same", it_c, "COPY y y REPLACE");
    IT_ERR("ERR syntax error", it_c, "COPY y w foo");
    IT_ERR("ERR value is not an integer or out of range", it_c, "COPY y w DB x");
    IT_ERR("ERR DB index is out of range", it_c, "COPY y w DB 16");
    IT_INT(1, it_c, "COPY y w DB 0");
    IT_STR("w", it_c, "GET w");
    if (it_target_is_redis()) {
        IT_INT(1, it_c, "COPY y w2 DB 1");
        IT_INT(0, it_c, "EXISTS w2");
    } else {
        /* crescent has db 0 only (documented difference) */
        IT_ERR("ERR DB index is out of range", it_c, "COPY y w2 DB 1");
    }
    IT_ERR("ERR wrong number of arguments for 'copy' command", it_c, "COPY y");
}

Test(keyspace, binary_key_names) {
    const char k1[] = "a\0b", k2[] = "c\r\nd";
    IT_OK(it_c, "SET %b 1", k1, (size_t)3);
    IT_OK(it_c, "SET %b 2", k2, (size_t)4);
    redisReply *r = it_cmd(it_c, "KEYS *");
    cr_assert_eq(r->elements, 2);
    bool saw1 = false, saw2 = false;
    for (size_t i = 0; i < 2; i++) {
        const redisReply *e = r->element[i];
        saw1 |= e->len == 3 && memcmp(e->str, k1, 3) == 0;
        saw2 |= e->len == 4 && memcmp(e->str, k2, 4) == 0;
    }
    cr_assert(saw1 && saw2, "binary key names come back byte-exact");
    IT_INT(1, it_c, "EXISTS %b", k1, (size_t)3);
    IT_INT(0, it_c, "EXISTS a");
    IT_OK(it_c, "RENAME %b %b", k1, (size_t)3, k2, (size_t)4);
    IT_STR("1", it_c, "GET %b", k2, (size_t)4);
}
