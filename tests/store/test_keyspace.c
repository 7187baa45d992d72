/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One keyspace: plain Redis commands (hiredis, redis-cli, redis-py) on objects of the
 * distributed store's pool, against a real crescent-master and peer clients linking
 * libcrescent. Library put -> GET byte-exact, SET on a master with --memory 0 -> library get
 * byte-exact, DEL/EXISTS/DBSIZE/SCAN/KEYS/STRLEN/TYPE/TTL/EXPIRE/FLUSHALL on pool objects, SET
 * of a key that lives in the pool, GET when the replica's owner died, DEL of a leased object.
 */
#include "common/fmacros.h"

#include "crescent/store.h"
#include "tests/store/store_test_util.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1u << 20)

static struct st_master master;
static redisContext *rc;

static void stop(void) {
    redisFree(rc);
    rc = NULL;
    st_master_stop(&master);
}

TestSuite(keyspace, .fini = stop, .timeout = 180);

static void start(const char *extra) {
    st_master_start(&master, extra);
    rc = st_redis(&master);
}

/* Runs a command expecting an integer reply; returns it. */
static long long cmd_int(const char *fmt, const char *key) {
    redisReply *r = st_cmd(rc, fmt, key);
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s %s: type %d %s", fmt, key, r->type,
                 r->str ? r->str : "");
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* Runs a command expecting a status or error reply; returns a copy of its text. */
static char *cmd_str(const char *fmt, const char *key) {
    redisReply *r = st_cmd(rc, fmt, key);
    cr_assert(r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_ERROR ||
                  r->type == REDIS_REPLY_STRING,
              "%s %s: type %d", fmt, key, r->type);
    char *s = strdup(r->str);
    freeReplyObject(r);
    return s;
}

/* GET key through hiredis must return exactly want[0..len). */
static void check_redis_get(const char *key, const void *want, size_t len) {
    redisReply *r = st_cmd(rc, "GET %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "GET %s: type %d %s", key, r->type,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    cr_assert_eq(r->len, len, "GET %s: %zu bytes, want %zu", key, r->len, len);
    cr_assert(memcmp(r->str, want, len) == 0, "GET %s: bytes differ", key);
    freeReplyObject(r);
}

static void check_nil(const char *fmt, const char *key) {
    redisReply *r = st_cmd(rc, fmt, key);
    cr_assert_eq(r->type, REDIS_REPLY_NIL, "%s %s: type %d %s", fmt, key, r->type,
                 r->str ? r->str : "");
    freeReplyObject(r);
}

static void check_lib_get(struct crescent_store *st, const char *key, const void *want,
                          size_t len) {
    void *v = NULL;
    size_t n = 0;
    OK(crescent_store_get(st, key, &v, &n));
    cr_assert_eq(n, len, "%s: library get %zu bytes, want %zu", key, n, len);
    cr_assert(memcmp(v, want, len) == 0, "%s: library get bytes differ", key);
    crescent_store_free(v);
}

/* The single segment holding key's replica (MC.QUERYKEY). */
static void replica_segment(const char *key, char seg[256]) {
    char segs[8][256];
    cr_assert_eq(st_replica_segments(rc, key, segs, 8), 1, "%s: not one replica", key);
    memcpy(seg, segs[0], 256);
}

static const size_t sizes[] = {1, 4096, MIB, 64 * MIB};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Library put -> hiredis GET of 1 B .. 64 MiB, byte-exact, through a peer over proto. */
static void library_put_redis_get(const char *proto) {
    start("");
    struct st_peer p;
    st_peer_start(&p, &master, proto, 160 * MIB);
    struct crescent_store *st = st_store(&master, proto, 0);
    char *val = malloc(64 * MIB);
    cr_assert(val != NULL);
    /* The master's embedded segment is a pool segment too (tests/store/test_embedded.c):
     * place the values on the peer's, so the master reads them with its engine. */
    const char *on_peer[] = {p.segment};
    struct crescent_store_replicate_config cfg = {.preferred_segments = on_peer,
                                                  .n_preferred_segments = 1};
    for (size_t i = 0; i < NSIZES; i++) {
        char key[32];
        snprintf(key, sizeof(key), "lib-%zu", sizes[i]);
        st_fill(val, sizes[i], (unsigned)i + 1);
        OK(crescent_store_put(st, key, val, sizes[i], &cfg));
        char seg[256];
        replica_segment(key, seg);
        cr_assert_str_eq(seg, p.segment);
        check_redis_get(key, val, sizes[i]);
        redisReply *r = st_cmd(rc, "MGET nothing %s", key);
        cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
        cr_assert_eq(r->element[0]->type, REDIS_REPLY_NIL);
        cr_assert_eq(r->element[1]->len, sizes[i]);
        cr_assert(memcmp(r->element[1]->str, val, sizes[i]) == 0);
        freeReplyObject(r);
    }
    /* redis-cli prints the value */
    OK(crescent_store_put(st, "cli-text", "hello from the pool", 19, NULL));
    char cmd[256], out[64] = "";
    snprintf(cmd, sizeof(cmd), "redis-cli -p %d GET cli-text", master.port);
    FILE *f = popen(cmd, "r");
    cr_assert(f != NULL);
    cr_assert(fgets(out, sizeof(out), f) != NULL);
    pclose(f);
    cr_assert_str_eq(out, "hello from the pool\n");
    crescent_store_destroy(st);
    st_peer_kill(&p);
    free(val);
}

Test(keyspace, library_put_redis_get_byte_exact_tcp) {
    library_put_redis_get("tcp");
}

Test(keyspace, library_put_redis_get_byte_exact_shm) {
    library_put_redis_get("shm");
}

/* A master with no data of its own: SET places values in the peer's segment. */
Test(keyspace, memory0_redis_set_library_get_byte_exact) {
    start("--memory 0");
    redisReply *r = st_cmd(rc, "SET early v");
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    cr_assert(strncmp(r->str, "NO_AVAILABLE_HANDLE", 19) == 0, "%s", r->str);
    freeReplyObject(r);
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 200 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char *val = malloc(64 * MIB);
    cr_assert(val != NULL);
    for (size_t i = 0; i < NSIZES; i++) {
        char key[32];
        snprintf(key, sizeof(key), "set-%zu", sizes[i]);
        st_fill(val, sizes[i], (unsigned)i + 7);
        r = st_cmd(rc, "SET %s %b", key, val, sizes[i]);
        cr_assert_eq(r->type, REDIS_REPLY_STATUS, "SET %s: %s", key, r->str);
        freeReplyObject(r);
        char seg[256];
        replica_segment(key, seg);
        cr_assert_str_eq(seg, p.segment);
        check_lib_get(st, key, val, sizes[i]);
        check_redis_get(key, val, sizes[i]);
    }
    cr_assert_eq(cmd_int("DBSIZE", ""), (long long)NSIZES);
    /* MSET and SETNX go the same way */
    r = st_cmd(rc, "MSET m1 one m2 two");
    cr_assert_eq(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    check_lib_get(st, "m2", "two", 3);
    cr_assert_eq(cmd_int("SETNX m1 %s", "again"), 0);
    cr_assert_eq(cmd_int("SETNX m3 %s", "three"), 1);
    check_lib_get(st, "m3", "three", 5);
    cr_assert_eq(cmd_int("MSETNX m9 nine m1 %s", "again"), 0, "m1 is a pool object");
    cr_assert_eq(cmd_int("EXISTS %s", "m9"), 0);
    check_lib_get(st, "m1", "one", 3);
    /* what the pool refuses, with clear errors */
    char *e = cmd_str("SET k v EX %s", "100");
    cr_assert(strstr(e, "no TTL") != NULL, "%s", e);
    free(e);
    r = st_cmd(rc, "SET empty %b", "", (size_t)0);
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    cr_assert(strstr(r->str, "empty value") != NULL, "%s", r->str);
    freeReplyObject(r);
    e = cmd_str("INCR %s", "counter");
    cr_assert(strncmp(e, "OOM", 3) == 0, "%s", e);
    free(e);
    crescent_store_destroy(st);
    st_peer_kill(&p);
    free(val);
}

/* redis-py SET (Debian python3-redis) -> library get, byte-exact. */
Test(keyspace, memory0_redis_py_set_library_get_byte_exact) {
    if (system("/usr/bin/python3 -c 'import redis' 2>/dev/null") != 0) {
        cr_skip_test("/usr/bin/python3 has no redis module (apt-get install python3-redis)");
    }
    start("--memory 0");
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 200 * MIB);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c '\n"
             "import redis\n"
             "r = redis.Redis(port=%d)\n"
             "for n in (1, 4096, 1 << 20, 64 << 20):\n"
             "    v = bytes((i * 7 + n) %% 251 for i in range(min(n, 1 << 16)))\n"
             "    v = (v * (n // len(v) + 1))[:n]\n"
             "    assert r.set(\"py-%%d\" %% n, v)\n"
             "    assert r.get(\"py-%%d\" %% n) == v\n"
             "'",
             master.port);
    cr_assert_eq(system(cmd), 0, "redis-py script failed");
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char *val = malloc(64 * MIB);
    cr_assert(val != NULL);
    for (size_t i = 0; i < NSIZES; i++) {
        size_t n = sizes[i], period = n < (1u << 16) ? n : (1u << 16);
        for (size_t j = 0; j < n; j++) {
            val[j] = (char)(((j % period) * 7 + n) % 251);
        }
        char key[32];
        snprintf(key, sizeof(key), "py-%zu", n);
        check_lib_get(st, key, val, n);
    }
    crescent_store_destroy(st);
    st_peer_kill(&p);
    free(val);
}

/* Collects every key of a full SCAN (MATCH pattern, COUNT count) into a sorted list. */
static int scan_all(const char *pattern, int count, char keys[][32], int max) {
    char cursor[32] = "0";
    int n = 0, rounds = 0;
    do {
        redisReply *r = redisCommand(rc, "SCAN %s MATCH %s COUNT %d", cursor, pattern, count);
        cr_assert(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            const char *k = r->element[1]->element[i]->str;
            int dup = 0;
            for (int j = 0; j < n; j++) {
                dup |= strcmp(keys[j], k) == 0;
            }
            if (!dup && n < max) {
                snprintf(keys[n++], 32, "%s", k);
            }
        }
        freeReplyObject(r);
        cr_assert_lt(++rounds, 10000, "SCAN does not end");
    } while (strcmp(cursor, "0") != 0);
    qsort(keys, (size_t)n, 32, (int (*)(const void *, const void *))strcmp);
    return n;
}

Test(keyspace, keyspace_commands_see_pool_objects) {
    static const char digits[64] = "0123456789012345678901234567890123456789";
    start("--default_kv_lease_ttl 500");
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 32 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char key[32];
    for (int i = 0; i < 30; i++) {
        snprintf(key, sizeof(key), "pool:%02d", i);
        OK(crescent_store_put(st, key, digits, 10 + (size_t)i, NULL));
    }
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "ks:%02d", i);
        redisReply *r = st_cmd(rc, "SET %s v", key);
        freeReplyObject(r);
    }
    cr_assert_eq(cmd_int("DBSIZE", ""), 50);
    char *info = cmd_str("INFO %s", "keyspace");
    cr_assert(strstr(info, "db0:keys=50,") != NULL, "%s", info);
    free(info);
    cr_assert_eq(cmd_int("EXISTS %s", "pool:03"), 1);
    cr_assert_eq(cmd_int("EXISTS pool:03 ks:01 pool:99 %s", "pool:04"), 3);
    cr_assert_eq(cmd_int("STRLEN %s", "pool:05"), 15);
    cr_assert_eq(cmd_int("STRLEN %s", "pool:99"), 0);
    char *t = cmd_str("TYPE %s", "pool:05");
    cr_assert_str_eq(t, "string");
    free(t);
    t = cmd_str("TYPE %s", "pool:99");
    cr_assert_str_eq(t, "none");
    free(t);
    cr_assert_eq(cmd_int("TTL %s", "pool:05"), -1);
    cr_assert_eq(cmd_int("PTTL %s", "pool:05"), -1);
    cr_assert_eq(cmd_int("TTL %s", "pool:99"), -2);
    char *e = cmd_str("EXPIRE %s 100", "pool:05");
    cr_assert(strstr(e, "no TTL") != NULL, "%s", e);
    free(e);
    cr_assert_eq(cmd_int("PERSIST %s", "pool:05"), 0);
    e = cmd_str("APPEND %s more", "pool:05");
    cr_assert(strstr(e, "use SET") != NULL, "%s", e);
    free(e);
    e = cmd_str("INCR %s", "pool:05");
    cr_assert(strstr(e, "use SET") != NULL, "%s", e);
    free(e);
    cr_assert_eq(cmd_int("STRLEN %s", "pool:05"), 15, "APPEND changed nothing");
    redisReply *g = st_cmd(rc, "GETDEL pool:29");
    cr_assert_eq(g->type, REDIS_REPLY_STRING);
    cr_assert_eq(g->len, 39);
    freeReplyObject(g);
    cr_assert_eq(cmd_int("EXISTS %s", "pool:29"), 0, "GETDEL removed it");
    OK(crescent_store_put(st, "pool:29", digits, 39, NULL));

    char keys[64][32];
    int n = scan_all("*", 7, keys, 64);
    cr_assert_eq(n, 50, "SCAN returned %d distinct keys", n);
    cr_assert_str_eq(keys[0], "ks:00");
    cr_assert_str_eq(keys[20], "pool:00");
    cr_assert_str_eq(keys[49], "pool:29");
    n = scan_all("pool:1*", 3, keys, 64);
    cr_assert_eq(n, 10);
    cr_assert_str_eq(keys[0], "pool:10");
    redisReply *r = st_cmd(rc, "SCAN 0 TYPE list COUNT 1000");
    cr_assert_eq(r->element[1]->elements, 0, "pool objects are strings");
    freeReplyObject(r);
    r = st_cmd(rc, "KEYS pool:2*");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 10);
    freeReplyObject(r);
    r = st_cmd(rc, "KEYS *");
    cr_assert_eq(r->elements, 50);
    freeReplyObject(r);

    cr_assert_eq(cmd_int("DEL pool:00 ks:00 pool:99 %s", "pool:01"), 3);
    cr_assert_eq(cmd_int("UNLINK %s", "pool:02"), 1);
    cr_assert_eq(cmd_int("EXISTS %s", "pool:00"), 0);
    check_nil("GET %s", "pool:00");
    r = st_cmd(rc, "MC.EXIST pool:01");
    cr_assert_eq(r->integer, 0);
    freeReplyObject(r);
    cr_assert_eq(cmd_int("DBSIZE", ""), 46);
    r = st_cmd(rc, "FLUSHALL");
    cr_assert_eq(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_eq(cmd_int("DBSIZE", ""), 0);
    long long deadline = st_now_ms() + 10000; /* GETDEL's read lease holds one buffer */
    while (st_segments_used(rc) != 0 && st_now_ms() < deadline) {
        st_sleep_ms(100);
    }
    cr_assert_eq(st_segments_used(rc), 0, "FLUSHALL freed every pool buffer");
    crescent_store_destroy(st);
    st_peer_kill(&p);
}

/* With an embedded segment, SET of a key that lives in the pool overwrites it in the pool. */
Test(keyspace, set_of_a_pool_key_overwrites_it_in_the_pool) {
    start("");
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 32 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    const char *on_peer[] = {p.segment};
    struct crescent_store_replicate_config cfg = {.preferred_segments = on_peer,
                                                  .n_preferred_segments = 1};
    OK(crescent_store_put(st, "k", "library-value", 13, &cfg));
    redisReply *r = st_cmd(rc, "SET k redis-value!!");
    cr_assert_eq(r->type, REDIS_REPLY_STATUS, "%s", r->str);
    freeReplyObject(r);
    char seg[256];
    replica_segment("k", seg);
    cr_assert_str_eq(seg, p.segment, "the value stayed in the pool");
    check_lib_get(st, "k", "redis-value!!", 13);
    check_redis_get("k", "redis-value!!", 13);
    r = st_cmd(rc, "SET k %s GET", "longer-redis-value");
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, "redis-value!!");
    freeReplyObject(r);
    check_lib_get(st, "k", "longer-redis-value", 18);
    check_nil("SET k %s NX", "x");
    check_nil("SET absent %s XX", "x");
    cr_assert_eq(cmd_int("DBSIZE", ""), 1, "one key, in the pool");
    /* a new key goes to the embedded segment */
    r = st_cmd(rc, "SET fresh v");
    freeReplyObject(r);
    char segs[8][256]; /* not a pool object, yet MC.* sees it in the embedded segment */
    cr_assert_eq(st_replica_segments(rc, "fresh", segs, 8), 1);
    cr_assert(strncmp(segs[0], "master@", 7) == 0, "%s", segs[0]);
    cr_assert_eq(cmd_int("DBSIZE", ""), 2);
    crescent_store_destroy(st);
    st_peer_kill(&p);
}

/* The replica's owner was killed: GET answers nil (bounded), the master lives on. */
Test(keyspace, get_after_owner_died_is_nil) {
    start("--client_live_ttl_sec 60 --memory 0"); /* the replica on the peer, nowhere else */
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 32 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char *val = malloc(MIB);
    st_fill(val, MIB, 3);
    OK(crescent_store_put(st, "orphan", val, MIB, NULL));
    check_redis_get("orphan", val, MIB); /* the master's engine has the segment open */
    st_peer_kill(&p);
    cr_assert_eq(cmd_int("EXISTS %s", "orphan"), 1, "the replica is listed until the TTL");
    check_nil("GET %s", "orphan");
    check_nil("GET %s", "orphan"); /* and again, with the peer forgotten */
    char *pong = cmd_str("PING%s", "");
    cr_assert_str_eq(pong, "PONG");
    free(pong);
    crescent_store_destroy(st);
    free(val);
}

/* DEL of a leased object removes it at once; its buffer is freed when the lease ends. A
 * hard-pinned object is deleted too. */
Test(keyspace, del_of_a_leased_object) {
    start("--default_kv_lease_ttl 1500 --memory 0"); /* only the peer's segment */
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 32 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    OK(crescent_store_put(st, "leased", "0123456789", 10, NULL));
    redisReply *r = st_cmd(rc, "MC.GETREPLICAS leased"); /* a reader's lease */
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    r = st_cmd(rc, "MC.REMOVE leased");
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    cr_assert(strncmp(r->str, "OBJECT_HAS_LEASE", 16) == 0, "%s", r->str);
    freeReplyObject(r);
    cr_assert_eq(cmd_int("DEL %s", "leased"), 1);
    cr_assert_eq(cmd_int("EXISTS %s", "leased"), 0);
    cr_assert_eq(st_segments_used(rc), 10, "the buffer waits for the lease");
    long long deadline = st_now_ms() + 10000;
    while (st_segments_used(rc) != 0 && st_now_ms() < deadline) {
        st_sleep_ms(100);
    }
    cr_assert_eq(st_segments_used(rc), 0, "freed after the lease");
    struct crescent_store_replicate_config pin = {.replica_num = 1, .with_hard_pin = true};
    OK(crescent_store_put(st, "pinned", "abc", 3, &pin));
    cr_assert_eq(cmd_int("DEL %s", "pinned"), 1);
    cr_assert_eq(cmd_int("EXISTS %s", "pinned"), 0);
    crescent_store_destroy(st);
    st_peer_kill(&p);
}

struct worker {
    int port;
    int id;
    int failures;
};

/* SETs and GETs its own keys through its own connection, checking every byte. */
static void *worker_main(void *arg) {
    struct worker *w = arg;
    redisContext *c = redisConnect("127.0.0.1", w->port);
    char val[5000], key[32];
    for (int i = 0; i < 60 && c != NULL && !c->err; i++) {
        size_t len = 1 + (size_t)((i * 977 + w->id * 131) % (int)sizeof(val));
        st_fill(val, len, (unsigned)(w->id * 1000 + i));
        snprintf(key, sizeof(key), "w%d-%d", w->id, i % 7);
        redisReply *r = redisCommand(c, "SET %s %b", key, val, len);
        w->failures += r == NULL || r->type != REDIS_REPLY_STATUS;
        freeReplyObject(r);
        r = redisCommand(c, "GET %s", key);
        w->failures += r == NULL || r->type != REDIS_REPLY_STRING || r->len != len ||
                       memcmp(r->str, val, len) != 0;
        freeReplyObject(r);
    }
    redisFree(c);
    return NULL;
}

/* Several clients on several event-loop threads share the master's engine and segment cache. */
Test(keyspace, concurrent_clients_on_a_memory0_master) {
    start("--memory 0 --threads 3");
    struct st_peer a, b;
    st_peer_start(&a, &master, "tcp", 32 * MIB);
    st_peer_start(&b, &master, "shm", 32 * MIB);
    struct worker w[6];
    pthread_t t[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (struct worker){master.port, i, 0};
        cr_assert_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        cr_assert_eq(w[i].failures, 0, "worker %d: %d failed commands", i, w[i].failures);
    }
    cr_assert_eq(cmd_int("DBSIZE", ""), 42);
    st_peer_kill(&a);
    st_peer_kill(&b);
}

/* A pool object larger than proto-max-bulk-len is not sent: a clear error, not a huge reply. */
Test(keyspace, get_above_proto_max_bulk_len_is_an_error) {
    start("--proto-max-bulk-len 1mb");
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 32 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char *val = calloc(1, 2 * MIB);
    cr_assert(val != NULL);
    OK(crescent_store_put(st, "huge", val, 2 * MIB, NULL));
    char *e = cmd_str("GET %s", "huge");
    cr_assert(strstr(e, "proto-max-bulk-len") != NULL, "%s", e);
    free(e);
    cr_assert_eq(cmd_int("STRLEN %s", "huge"), 2 * MIB);
    crescent_store_destroy(st);
    st_peer_kill(&p);
    free(val);
}

/* INFO blocked_clients (deferred replies in progress) of the master. */
static long long blocked_clients(redisContext *c) {
    redisReply *r = st_cmd(c, "INFO clients");
    cr_assert_eq(r->type, REDIS_REPLY_STRING);
    const char *p = strstr(r->str, "blocked_clients:");
    cr_assert_not_null(p);
    long long v = strtoll(p + 16, NULL, 10);
    freeReplyObject(r);
    return v;
}

static void wait_blocked(redisContext *c, long long want) {
    long long deadline = st_now_ms() + 20000, got = -1;
    while (st_now_ms() < deadline && (got = blocked_clients(c)) != want)
        st_sleep_ms(5);
    cr_assert_eq(got, want, "blocked_clients %lld, want %lld", got, want);
}

/*
 * GET of a pool object reads off the event loop (server/srv_defer.h): while one client's
 * transfer is held (CRESCENT_TEST_DEFER_DELAY_MS), another is served on the same single loop;
 * the first gets its pipelined replies in order, byte-exact. A client killed while its
 * transfer is in flight is closed and the result dropped.
 */
Test(keyspace, pool_get_runs_off_the_loop) {
    setenv("CRESCENT_TEST_DEFER_DELAY_MS", "1500", 1);
    start("--threads 1");
    unsetenv("CRESCENT_TEST_DEFER_DELAY_MS");
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 32 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char *val = malloc(MIB);
    cr_assert(val != NULL);
    st_fill(val, MIB, 9);
    const char *on_peer[] = {p.segment}; /* a transfer, not the embedded segment's memcpy */
    struct crescent_store_replicate_config cfg = {.preferred_segments = on_peer,
                                                  .n_preferred_segments = 1};
    OK(crescent_store_put(st, "slow", val, MIB, &cfg));
    redisContext *a = st_redis(&master);
    redisAppendCommand(a, "GET slow");
    redisAppendCommand(a, "GET nothing");
    redisAppendCommand(a, "PING");
    int done = 0;
    while (!done)
        cr_assert_eq(redisBufferWrite(a, &done), REDIS_OK);
    wait_blocked(rc, 1);
    redisReply *r = st_cmd(rc, "SET local v");
    cr_assert_eq(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = st_cmd(rc, "GET local");
    cr_assert(r->type == REDIS_REPLY_STRING && strcmp(r->str, "v") == 0);
    freeReplyObject(r);
    cr_assert_eq(blocked_clients(rc), 1, "served while the transfer is held");
    redisReply *g = NULL;
    cr_assert_eq(redisGetReply(a, (void **)&g), REDIS_OK);
    cr_assert(g->type == REDIS_REPLY_STRING && g->len == MIB && memcmp(g->str, val, MIB) == 0);
    freeReplyObject(g);
    cr_assert_eq(redisGetReply(a, (void **)&g), REDIS_OK);
    cr_assert_eq(g->type, REDIS_REPLY_NIL);
    freeReplyObject(g);
    cr_assert_eq(redisGetReply(a, (void **)&g), REDIS_OK);
    cr_assert(g->type == REDIS_REPLY_STATUS && strcmp(g->str, "PONG") == 0);
    freeReplyObject(g);

    r = st_cmd(a, "CLIENT ID");
    long long id = r->integer;
    freeReplyObject(r);
    redisAppendCommand(a, "GET slow");
    done = 0;
    while (!done)
        cr_assert_eq(redisBufferWrite(a, &done), REDIS_OK);
    wait_blocked(rc, 1);
    char kill[64];
    snprintf(kill, sizeof(kill), "%lld", id);
    cr_assert_eq(cmd_int("CLIENT KILL ID %s", kill), 1);
    cr_assert_neq(redisGetReply(a, (void **)&g), REDIS_OK, "killed, not answered");
    redisFree(a);
    wait_blocked(rc, 0);
    check_redis_get("slow", val, MIB);
    crescent_store_destroy(st);
    st_peer_kill(&p);
    free(val);
}
