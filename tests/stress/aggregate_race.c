/* SPDX-License-Identifier: Apache-2.0 */
/* Races on hot lists, hashes and sets: two writers push, pop, trim, overwrite, delete fields
 * and whole keys while three readers run LRANGE, LINDEX, HGETALL, HGET and SMEMBERS on the
 * same keys. Every element is a self-checking value (tests/stress/st_util.h) naming its key, so
 * a reply built from freed or reused memory shows up as a damaged element.
 * Usage: aggregate_race HOST PORT [-t SECONDS] */
#include "common/fmacros.h"

#include "tests/stress/st_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOT      4
#define MAX_ELEM 4096
#define LIST_ID  0 /* element key ids: list k -> k, hash k -> 100 + k, set k -> 200 + k */
#define HASH_ID  100
#define SET_ID   200

static const char *host;
static int port;
static uint64_t deadline;
static atomic_int writers_left;
static atomic_long writes, reads, elements_checked;

/* Dies unless r is an intact element of the key with id `id` (nil allowed when nil_ok). */
static void check_elem(const redisReply *r, uint64_t id, int nil_ok, const char *what) {
    if (r->type == REDIS_REPLY_NIL && nil_ok) {
        return;
    }
    if (r->type != REDIS_REPLY_STRING) {
        st_die("%s (key id %llu): expected an element, got type %d '%s'", what,
               (unsigned long long)id, r->type, r->str ? r->str : "");
    }
    const char *why = st_value_verify((const uint8_t *)r->str, (size_t)r->len, id, NULL);
    if (why != NULL) {
        st_die("%s (key id %llu): damaged %zu-byte element: %s", what, (unsigned long long)id,
               (size_t)r->len, why);
    }
    atomic_fetch_add(&elements_checked, 1);
}

static void expect_type(redisReply *r, int type, const char *what) {
    if (r->type != type) {
        st_die("%s: expected reply type %d, got %d '%s'", what, type, r->type,
               r->str ? r->str : "");
    }
}

static void *writer_main(void *arg) {
    int id = (int)(intptr_t)arg;
    redisContext *c = st_connect(host, port);
    uint8_t *buf = malloc(MAX_ELEM);
    uint64_t rng = 0x5151ull * (uint64_t)(id + 7);
    uint32_t version = (uint32_t)id << 28;
    while (st_now_ms() < deadline) {
        uint64_t k = st_rng_next(&rng) % HOT;
        size_t len = 64 + st_rng_next(&rng) % (MAX_ELEM - 64);
        unsigned field = (unsigned)(st_rng_next(&rng) % 64);
        redisReply *r;
        switch (st_rng_next(&rng) % 10) {
        case 0:
        case 1:
            st_value_build(buf, len, LIST_ID + k, ++version);
            r = st_command(c, "RPUSH list:%llu %b", (unsigned long long)k, buf, len);
            expect_type(r, REDIS_REPLY_INTEGER, "RPUSH");
            break;
        case 2:
            r = st_command(c, "LPOP list:%llu", (unsigned long long)k);
            check_elem(r, LIST_ID + k, 1, "LPOP");
            break;
        case 3:
            r = st_command(c, "LTRIM list:%llu 0 39", (unsigned long long)k);
            expect_type(r, REDIS_REPLY_STATUS, "LTRIM");
            break;
        case 4:
        case 5:
            st_value_build(buf, len, HASH_ID + k, ++version);
            r = st_command(c, "HSET hash:%llu f%u %b", (unsigned long long)k, field, buf, len);
            expect_type(r, REDIS_REPLY_INTEGER, "HSET");
            break;
        case 6:
            r = st_command(c, "HDEL hash:%llu f%u", (unsigned long long)k, field);
            expect_type(r, REDIS_REPLY_INTEGER, "HDEL");
            break;
        case 7:
            st_value_build(buf, len, SET_ID + k, ++version);
            r = st_command(c, "SADD set:%llu %b", (unsigned long long)k, buf, len);
            expect_type(r, REDIS_REPLY_INTEGER, "SADD");
            break;
        case 8:
            r = st_command(c, "SPOP set:%llu", (unsigned long long)k);
            check_elem(r, SET_ID + k, 1, "SPOP");
            break;
        default:
            r = st_command(c, "DEL list:%llu hash:%llu set:%llu", (unsigned long long)k,
                           (unsigned long long)k, (unsigned long long)k);
            expect_type(r, REDIS_REPLY_INTEGER, "DEL");
            break;
        }
        freeReplyObject(r);
        atomic_fetch_add(&writes, 1);
    }
    free(buf);
    redisFree(c);
    atomic_fetch_sub(&writers_left, 1);
    return NULL;
}

static void read_once(redisContext *c, uint64_t *rng) {
    uint64_t k = st_rng_next(rng) % HOT;
    redisReply *r;
    switch (st_rng_next(rng) % 5) {
    case 0:
        r = st_command(c, "LRANGE list:%llu 0 -1", (unsigned long long)k);
        expect_type(r, REDIS_REPLY_ARRAY, "LRANGE");
        for (size_t i = 0; i < r->elements; i++) {
            check_elem(r->element[i], LIST_ID + k, 0, "LRANGE");
        }
        break;
    case 1:
        r = st_command(c, "LINDEX list:%llu -1", (unsigned long long)k);
        check_elem(r, LIST_ID + k, 1, "LINDEX");
        break;
    case 2:
        r = st_command(c, "HGETALL hash:%llu", (unsigned long long)k);
        expect_type(r, REDIS_REPLY_ARRAY, "HGETALL");
        if (r->elements % 2 != 0) {
            st_die("HGETALL: odd number of elements %zu", r->elements);
        }
        for (size_t i = 0; i < r->elements; i += 2) {
            const redisReply *f = r->element[i];
            if (f->type != REDIS_REPLY_STRING || f->len < 2 || f->str[0] != 'f') {
                st_die("HGETALL: bad field name");
            }
            check_elem(r->element[i + 1], HASH_ID + k, 0, "HGETALL");
        }
        break;
    case 3:
        r = st_command(c, "HGET hash:%llu f%u", (unsigned long long)k,
                       (unsigned)(st_rng_next(rng) % 64));
        check_elem(r, HASH_ID + k, 1, "HGET");
        break;
    default:
        r = st_command(c, "SMEMBERS set:%llu", (unsigned long long)k);
        expect_type(r, REDIS_REPLY_ARRAY, "SMEMBERS");
        for (size_t i = 0; i < r->elements; i++) {
            check_elem(r->element[i], SET_ID + k, 0, "SMEMBERS");
        }
        break;
    }
    freeReplyObject(r);
    atomic_fetch_add(&reads, 1);
}

static void *reader_main(void *arg) {
    int id = (int)(intptr_t)arg;
    redisContext *c = st_connect(host, port);
    uint64_t rng = 0x77ull * (uint64_t)(id + 1);
    while (atomic_load(&writers_left) > 0) {
        read_once(c, &rng);
    }
    redisFree(c);
    return NULL;
}

int main(int argc, char **argv) {
    int seconds = 4;
    if (argc < 3) {
        fprintf(stderr, "usage: %s HOST PORT [-t SECONDS]\n", argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    if (argc > 4 && strcmp(argv[3], "-t") == 0) {
        seconds = atoi(argv[4]);
    }
    st_crc32(0, "", 0);
    deadline = st_now_ms() + (uint64_t)seconds * 1000;
    atomic_store(&writers_left, 2);
    pthread_t th[5];
    for (int i = 0; i < 2; i++) {
        pthread_create(&th[i], NULL, writer_main, (void *)(intptr_t)i);
    }
    for (int i = 0; i < 3; i++) {
        pthread_create(&th[2 + i], NULL, reader_main, (void *)(intptr_t)i);
    }
    for (int i = 0; i < 5; i++) {
        pthread_join(th[i], NULL);
    }
    printf("aggregate_race: %d s: %ld writes, %ld reads, %ld elements checked\n", seconds,
           atomic_load(&writes), atomic_load(&reads), atomic_load(&elements_checked));
    if (atomic_load(&elements_checked) == 0) {
        st_die("no element was ever read back: nothing was checked");
    }
    /* A final full read of every key. */
    redisContext *c = st_connect(host, port);
    uint64_t rng = 99;
    for (int i = 0; i < 50; i++) {
        read_once(c, &rng);
    }
    st_expect_status(c, "PONG", "PING");
    redisFree(c);
    return 0;
}
