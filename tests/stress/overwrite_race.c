/* SPDX-License-Identifier: Apache-2.0 */
/* Hot-key races: two writers hammer a few keys with SET, SET ... GET, GETSET, GETDEL and DEL
 * (values of two fixed sizes, so freed blocks are reused at once), a filler forces eviction,
 * and three readers GET and MGET the same keys. Every value that comes back, including the
 * old values returned by SET ... GET, GETSET and GETDEL, must be an intact value of its key.
 * Usage: overwrite_race HOST PORT [-t SECONDS] [-m SERVER_MEMORY_MIB] */
#include "common/fmacros.h"

#include "tests/stress/st_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOT_KEYS 4
#define BIG      (256 * 1024)
#define SMALL    (16 * 1024)

enum op { OP_SET, OP_SET_GET, OP_GETSET, OP_GETDEL, OP_DEL, OP_COUNT };

static const char *const op_names[OP_COUNT] = {"SET", "SET GET", "GETSET", "GETDEL", "DEL"};

static const char *host;
static int port;
static long memory_mib = 16;
static uint64_t deadline;
static atomic_int writers_left;
static atomic_long op_count[OP_COUNT], old_values, reads, read_hits, filler_sets;

/* Dies unless r is nil or an intact value of hot key k. Returns 1 for a value. */
static int check_value(const redisReply *r, uint64_t k, const char *what) {
    if (r->type == REDIS_REPLY_NIL) {
        return 0;
    }
    if (r->type != REDIS_REPLY_STRING) {
        st_die("%s race:%llu: expected a value or nil, got type %d '%s'", what,
               (unsigned long long)k, r->type, r->str ? r->str : "");
    }
    if (r->len != BIG && r->len != SMALL) {
        st_die("%s race:%llu: %zu bytes, but only %d and %d byte values are written", what,
               (unsigned long long)k, (size_t)r->len, BIG, SMALL);
    }
    const char *why = st_value_verify((const uint8_t *)r->str, (size_t)r->len, k, NULL);
    if (why != NULL) {
        st_die("%s race:%llu returned a damaged %zu-byte value: %s", what, (unsigned long long)k,
               (size_t)r->len, why);
    }
    return 1;
}

static void *writer_main(void *arg) {
    int id = (int)(intptr_t)arg;
    redisContext *c = st_connect(host, port);
    uint8_t *buf = malloc(BIG);
    uint64_t rng = 0x1234567ull * (uint64_t)(id + 3);
    uint32_t version = (uint32_t)id << 28;
    while (st_now_ms() < deadline) {
        uint64_t k = st_rng_next(&rng) % HOT_KEYS;
        size_t len = st_rng_next(&rng) % 2 ? BIG : SMALL;
        enum op op = (enum op)(st_rng_next(&rng) % OP_COUNT);
        char key[32];
        snprintf(key, sizeof(key), "race:%llu", (unsigned long long)k);
        st_value_build(buf, len, k, ++version);
        redisReply *r = NULL;
        switch (op) {
        case OP_SET:
            r = st_command(c, "SET %s %b", key, buf, len);
            break;
        case OP_SET_GET:
            r = st_command(c, "SET %s %b GET", key, buf, len);
            break;
        case OP_GETSET:
            r = st_command(c, "GETSET %s %b", key, buf, len);
            break;
        case OP_GETDEL:
            r = st_command(c, "GETDEL %s", key);
            break;
        case OP_DEL:
            r = st_command(c, "DEL %s", key);
            break;
        default:
            st_die("bad op");
        }
        if (op == OP_SET) {
            if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0) {
                st_die("SET %s: expected OK, got type %d '%s'", key, r->type, r->str ? r->str : "");
            }
        } else if (op == OP_DEL) {
            if (r->type != REDIS_REPLY_INTEGER || (r->integer != 0 && r->integer != 1)) {
                st_die("DEL %s: expected 0 or 1, got type %d", key, r->type);
            }
        } else {
            atomic_fetch_add(&old_values, check_value(r, k, op_names[op]));
        }
        atomic_fetch_add(&op_count[op], 1);
        freeReplyObject(r);
    }
    free(buf);
    redisFree(c);
    atomic_fetch_sub(&writers_left, 1);
    return NULL;
}

static void *filler_main(void *arg) {
    (void)arg;
    redisContext *c = st_connect(host, port);
    uint8_t *buf = malloc(SMALL);
    memset(buf, 'f', SMALL);
    /* Until the writers stop, and at least three times the memory so eviction surely ran. */
    long min_sets = 3 * memory_mib * 1024 * 1024 / SMALL;
    for (long i = 0; atomic_load(&writers_left) > 0 || atomic_load(&filler_sets) < min_sets;
         i += 16) {
        for (int j = 0; j < 16; j++) {
            char key[32];
            snprintf(key, sizeof(key), "fill:%ld", i + j);
            redisAppendCommand(c, "SET %s %b", key, buf, (size_t)SMALL);
        }
        for (int j = 0; j < 16; j++) {
            void *rep;
            if (redisGetReply(c, &rep) != REDIS_OK) {
                st_die("filler: connection error %s", c->errstr);
            }
            redisReply *r = rep;
            if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) {
                atomic_fetch_add(&filler_sets, 1);
            } else if (r->type != REDIS_REPLY_ERROR || strcmp(r->str, ST_OOM_ERROR) != 0) {
                st_die("filler SET: expected OK or OOM, got type %d '%s'", r->type,
                       r->str ? r->str : "");
            }
            freeReplyObject(r);
        }
    }
    free(buf);
    redisFree(c);
    return NULL;
}

static void *reader_main(void *arg) {
    int id = (int)(intptr_t)arg;
    redisContext *c = st_connect(host, port);
    uint64_t rng = 0xABCDEFull * (uint64_t)(id + 1);
    while (atomic_load(&writers_left) > 0) {
        if (st_rng_next(&rng) % 4 == 0) {
            redisReply *r = st_command(c, "MGET race:0 race:1 race:2 race:3");
            if (r->type != REDIS_REPLY_ARRAY || r->elements != HOT_KEYS) {
                st_die("MGET of %d hot keys: got type %d", HOT_KEYS, r->type);
            }
            for (uint64_t k = 0; k < HOT_KEYS; k++) {
                atomic_fetch_add(&read_hits, check_value(r->element[k], k, "MGET"));
            }
            freeReplyObject(r);
            atomic_fetch_add(&reads, HOT_KEYS);
        } else {
            uint64_t k = st_rng_next(&rng) % HOT_KEYS;
            redisReply *r = st_command(c, "GET race:%llu", (unsigned long long)k);
            atomic_fetch_add(&read_hits, check_value(r, k, "GET"));
            freeReplyObject(r);
            atomic_fetch_add(&reads, 1);
        }
    }
    redisFree(c);
    return NULL;
}

int main(int argc, char **argv) {
    int seconds = 4;
    if (argc < 3) {
        fprintf(stderr, "usage: %s HOST PORT [-t SECONDS] [-m SERVER_MEMORY_MIB]\n", argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-t") == 0) {
            seconds = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "-m") == 0) {
            memory_mib = atol(argv[i + 1]);
        }
    }
    st_crc32(0, "", 0);
    redisContext *c = st_connect(host, port);
    long long evicted0 = st_info_field(c, "stats", "evicted_keys");
    deadline = st_now_ms() + (uint64_t)seconds * 1000;
    atomic_store(&writers_left, 2);
    pthread_t th[6];
    for (int i = 0; i < 2; i++) {
        pthread_create(&th[i], NULL, writer_main, (void *)(intptr_t)i);
    }
    pthread_create(&th[2], NULL, filler_main, NULL);
    for (int i = 0; i < 3; i++) {
        pthread_create(&th[3 + i], NULL, reader_main, (void *)(intptr_t)i);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
    }
    long long evicted = st_info_field(c, "stats", "evicted_keys") - evicted0;
    printf("overwrite_race: %d s:", seconds);
    for (int i = 0; i < OP_COUNT; i++) {
        printf(" %s %ld,", op_names[i], atomic_load(&op_count[i]));
    }
    printf(" old values returned %ld; reads %ld (%ld values); filler SETs %ld; evicted_keys "
           "+%lld\n",
           atomic_load(&old_values), atomic_load(&reads), atomic_load(&read_hits),
           atomic_load(&filler_sets), evicted);
    for (int i = 0; i < OP_COUNT; i++) {
        if (atomic_load(&op_count[i]) == 0) {
            st_die("no %s ran", op_names[i]);
        }
    }
    if (atomic_load(&read_hits) == 0 || atomic_load(&old_values) == 0) {
        st_die("no read or old value ever returned a value: nothing was checked");
    }
    if (evicted <= 0) {
        st_die("the filler did not cause any eviction (evicted_keys +%lld)", evicted);
    }
    for (uint64_t k = 0; k < HOT_KEYS; k++) {
        redisReply *r = st_command(c, "GET race:%llu", (unsigned long long)k);
        check_value(r, k, "final GET");
        freeReplyObject(r);
    }
    st_expect_status(c, "PONG", "PING");
    redisFree(c);
    return 0;
}
