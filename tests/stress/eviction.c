/* SPDX-License-Identifier: Apache-2.0 */
/* Eviction under sustained writes: writer threads SET far more checksummed data than the
 * server's memory limit (values of 100 B to 64 KiB), while a reader GETs random keys. Every
 * write must answer OK or Redis's exact OOM error, every read nil or a value whose checksum
 * verifies and whose header names the requested key; in the end the server is alive, holds
 * keys and reports evictions.
 * Reads alternate between pipelined GETs and MGETs of 16 keys. Finally keys written with a
 * 300 ms TTL into the full memory must all be gone 400 ms after their SETs were answered.
 * Usage: eviction HOST PORT [-n TOTAL_SETS] [-w WRITERS] [-k KEYSPACE]
 * Values are st_value_build() records (key id, version, length, pattern payload, CRC-32). */
#include "common/fmacros.h"

#include "tests/stress/st_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIN_SIZE 100
#define MAX_SIZE 65536
#define PIPELINE 64

static const char *host;
static int port;
static long total_sets = 200000;
static int writers = 2;
static uint32_t keyspace = 100000;

static atomic_long sets_ok, sets_oom, bytes_written;
static atomic_long gets_hit, gets_nil;
static atomic_int writers_done;

/* 90 % 100 B..1 KiB, 9 % 1..8 KiB, 1 % 8..64 KiB. */
static size_t pick_size(uint64_t *rng) {
    uint64_t r = st_rng_next(rng) % 1000;
    uint64_t v = st_rng_next(rng);
    if (r < 900) {
        return MIN_SIZE + v % (1024 - MIN_SIZE);
    }
    if (r < 990) {
        return 1024 + v % (8192 - 1024);
    }
    return 8192 + v % (MAX_SIZE - 8192 + 1);
}

struct writer_arg {
    int id;
    long count;
};

static void *writer_main(void *arg) {
    struct writer_arg *w = arg;
    redisContext *c = st_connect(host, port);
    uint8_t *buf = malloc(MAX_SIZE);
    uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)(w->id + 1);
    uint32_t version = (uint32_t)w->id << 24;
    for (long done = 0; done < w->count;) {
        int batch = w->count - done < PIPELINE ? (int)(w->count - done) : PIPELINE;
        uint64_t keys[PIPELINE];
        for (int i = 0; i < batch; i++) {
            char key[32];
            keys[i] = st_rng_next(&rng) % keyspace;
            size_t len = pick_size(&rng);
            st_value_build(buf, len, keys[i], ++version);
            snprintf(key, sizeof(key), "ev:%llu", (unsigned long long)keys[i]);
            redisAppendCommand(c, "SET %s %b", key, buf, len);
            atomic_fetch_add(&bytes_written, (long)len);
        }
        for (int i = 0; i < batch; i++) {
            void *rep;
            if (redisGetReply(c, &rep) != REDIS_OK) {
                st_die("writer %d: connection error after %ld SETs: %s", w->id, done + i,
                       c->errstr);
            }
            redisReply *r = rep;
            if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) {
                atomic_fetch_add(&sets_ok, 1);
            } else if (r->type == REDIS_REPLY_ERROR && strcmp(r->str, ST_OOM_ERROR) == 0) {
                atomic_fetch_add(&sets_oom, 1);
            } else {
                st_die("writer %d: SET ev:%llu: expected OK or '%s', got type %d '%s'", w->id,
                       (unsigned long long)keys[i], ST_OOM_ERROR, r->type, r->str ? r->str : "");
            }
            freeReplyObject(r);
        }
        done += batch;
    }
    free(buf);
    redisFree(c);
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

/* Checks one GET reply (or MGET element) for key; returns 1 for a hit, 0 for nil. */
static int check_reply(const redisReply *r, uint64_t key, const char *who) {
    if (r->type == REDIS_REPLY_STRING) {
        const char *why = st_value_verify((const uint8_t *)r->str, (size_t)r->len, key, NULL);
        if (why != NULL) {
            st_die("%s: ev:%llu returned %zu wrong bytes: %s", who, (unsigned long long)key,
                   (size_t)r->len, why);
        }
        atomic_fetch_add(&gets_hit, 1);
        return 1;
    }
    if (r->type == REDIS_REPLY_NIL) {
        atomic_fetch_add(&gets_nil, 1);
        return 0;
    }
    st_die("%s: ev:%llu: expected a string or nil, got type %d '%s'", who, (unsigned long long)key,
           r->type, r->str ? r->str : "");
}

/* Reads `n` random keys, as pipelined GETs or (mget) one MGET, and checks every value;
 * returns the number of hits. */
static long check_keys(redisContext *c, uint64_t *rng, int n, int mget, const char *who) {
    uint64_t keys[PIPELINE];
    char names[PIPELINE][32];
    const char *argv[PIPELINE + 1];
    size_t lens[PIPELINE + 1];
    long hits = 0;
    argv[0] = "MGET";
    lens[0] = 4;
    for (int i = 0; i < n; i++) {
        keys[i] = st_rng_next(rng) % keyspace;
        snprintf(names[i], sizeof(names[i]), "ev:%llu", (unsigned long long)keys[i]);
        if (mget) {
            argv[i + 1] = names[i];
            lens[i + 1] = strlen(names[i]);
        } else {
            redisAppendCommand(c, "GET %s", names[i]);
        }
    }
    if (mget) {
        redisReply *r = redisCommandArgv(c, n + 1, argv, lens);
        if (r == NULL) {
            st_die("%s: MGET: connection error: %s", who, c->errstr);
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)n) {
            st_die("%s: MGET of %d keys: got type %d with %zu elements", who, n, r->type,
                   r->elements);
        }
        for (int i = 0; i < n; i++) {
            hits += check_reply(r->element[i], keys[i], who);
        }
        freeReplyObject(r);
        return hits;
    }
    for (int i = 0; i < n; i++) {
        void *rep;
        if (redisGetReply(c, &rep) != REDIS_OK) {
            st_die("%s: connection error: %s", who, c->errstr);
        }
        hits += check_reply(rep, keys[i], who);
        freeReplyObject(rep);
    }
    return hits;
}

static void *reader_main(void *arg) {
    (void)arg;
    redisContext *c = st_connect(host, port);
    uint64_t rng = 0xC0FFEE1234567ull;
    for (int round = 0; atomic_load(&writers_done) < writers; round++) {
        check_keys(c, &rng, round % 2 ? 16 : PIPELINE, round % 2, "reader");
    }
    redisFree(c);
    return NULL;
}

/* 1,000 keys with PX 300 in full memory: 400 ms after the last reply none may be readable
 * (the server set each expiry before it answered, so this holds without timing margins). */
static void expiry_check(redisContext *c) {
    char key[32];
    uint8_t v[200];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "ev:ttl:%d", i);
        st_value_build(v, sizeof(v), 1000000u + (uint64_t)i, 1);
        redisAppendCommand(c, "SET %s %b PX 300", key, v, sizeof(v));
    }
    long ok = 0;
    for (int i = 0; i < 1000; i++) {
        void *rep;
        if (redisGetReply(c, &rep) != REDIS_OK) {
            st_die("SET PX: connection error: %s", c->errstr);
        }
        redisReply *r = rep;
        if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) {
            ok++;
        } else if (r->type != REDIS_REPLY_ERROR || strcmp(r->str, ST_OOM_ERROR) != 0) {
            st_die("SET ev:ttl:%d PX 300: expected OK or OOM, got type %d '%s'", i, r->type,
                   r->str ? r->str : "");
        }
        freeReplyObject(r);
    }
    uint64_t answered = st_now_ms();
    redisReply *r = st_command(c, "EXISTS ev:ttl:0 ev:ttl:999");
    long long early = r->integer;
    freeReplyObject(r);
    while (st_now_ms() < answered + 400) {
        usleep(20 * 1000);
    }
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "ev:ttl:%d", i);
        redisAppendCommand(c, "GET %s", key);
    }
    for (int i = 0; i < 1000; i++) {
        void *rep;
        if (redisGetReply(c, &rep) != REDIS_OK) {
            st_die("GET: connection error: %s", c->errstr);
        }
        r = rep;
        if (r->type != REDIS_REPLY_NIL) {
            st_die("GET ev:ttl:%d 400 ms after SET PX 300 was answered: expected nil, got type "
                   "%d (%zu bytes)",
                   i, r->type, (size_t)r->len);
        }
        freeReplyObject(r);
    }
    printf("expiry: %ld of 1000 SET PX 300 accepted (%lld of 2 probed at once existed), all gone "
           "after 400 ms\n",
           ok, early);
    if (ok < 990) {
        st_die("only %ld of 1000 small SET PX were accepted", ok);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s HOST PORT [-n TOTAL_SETS] [-w WRITERS] [-k KEYSPACE]\n",
                argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-n") == 0) {
            total_sets = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "-w") == 0) {
            writers = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "-k") == 0) {
            keyspace = (uint32_t)atol(argv[i + 1]);
        }
    }
    if (writers < 1 || writers > 16 || total_sets < writers || keyspace < 1) {
        st_die("bad arguments");
    }
    st_crc32(0, "", 0); /* build the table before the threads start */
    uint64_t t0 = st_now_ms();
    redisContext *c = st_connect(host, port);
    long long evicted0 = st_info_field(c, "stats", "evicted_keys");

    pthread_t wt[16], rt;
    struct writer_arg wa[16];
    for (int i = 0; i < writers; i++) {
        wa[i].id = i;
        wa[i].count = total_sets / writers + (i < total_sets % writers ? 1 : 0);
        pthread_create(&wt[i], NULL, writer_main, &wa[i]);
    }
    pthread_create(&rt, NULL, reader_main, NULL);
    for (int i = 0; i < writers; i++) {
        pthread_join(wt[i], NULL);
    }
    pthread_join(rt, NULL);
    uint64_t t1 = st_now_ms();

    /* After the storm: a sweep of random keys must hold only intact values. */
    uint64_t rng = 0xBADC0DEull;
    long sweep_hits = 0;
    for (int i = 0; i < 40; i++) {
        sweep_hits += check_keys(c, &rng, PIPELINE, i % 2, "final sweep");
    }
    long long evicted = st_info_field(c, "stats", "evicted_keys") - evicted0;
    redisReply *r = st_command(c, "DBSIZE");
    long long dbsize = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    long ok = atomic_load(&sets_ok), oom = atomic_load(&sets_oom);
    printf("eviction: %ld SETs (%ld MiB) in %llu ms: %ld OK, %ld OOM; reader %ld hits, %ld nil; "
           "final sweep %ld/%d hits; DBSIZE %lld; evicted_keys +%lld\n",
           total_sets, atomic_load(&bytes_written) >> 20, (unsigned long long)(t1 - t0), ok, oom,
           atomic_load(&gets_hit) - sweep_hits, atomic_load(&gets_nil), sweep_hits, 40 * PIPELINE,
           dbsize, evicted);
    if (ok + oom != total_sets) {
        st_die("%ld replies for %ld SETs", ok + oom, total_sets);
    }
    /* There is always something evictable here, so OOM must stay the exception. */
    if (oom * 100 > total_sets) {
        st_die("%ld of %ld SETs were refused with OOM although older keys were evictable", oom,
               total_sets);
    }
    if (atomic_load(&gets_hit) == 0) {
        st_die("no GET ever found a key");
    }
    if (dbsize <= 0) {
        st_die("DBSIZE after the writes: expected > 0, got %lld", dbsize);
    }
    if (evicted <= 0) {
        st_die("INFO stats evicted_keys did not grow (+%lld) although the writes exceeded "
               "memory",
               evicted);
    }
    expiry_check(c);
    st_expect_status(c, "PONG", "PING");
    st_expect_status(c, "OK", "SET ev:after ok");
    st_expect_status(c, "ok", "GET ev:after");
    redisFree(c);
    return 0;
}
