/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offload write queue (docs/storage.md, "Eviction writes"): evicted values are written to
 * the SSD tier by a background writer. The server's test knob CRESCENT_TEST_OFFLOAD_WRITE_DELAY_MS
 * makes the writer wait before each batch, so the writes are still queued while the tests
 * read every key back, delete, overwrite and re-expire keys, and stop the master; a restart then
 * shows which values reached the disk. Also the bound (a full queue writes synchronously) and a
 * disk quota that makes queued writes fail (the keys are dropped as evictions). The second knob,
 * CRESCENT_TEST_OFFLOAD_WRITE_STALL_MS, makes the writer hold each batch it took before storing
 * it, so the last section's tests read and change keys whose write is in progress.
 */
#include "common/fmacros.h"

#include "tests/integration/harness.h"
#include "tests/offload/offload_util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NKEYS   4096 /* values average 4,000 bytes: about 16 MiB, four times --memory */
#define VAL_MAX 8192
#define MEMORY  "4mb"

static char disk_dir[256];

static void key_of(int i, char *buf) {
    snprintf(buf, 32, "wq:%05d", i);
}

/*
 * Starts the master on disk_dir (created on first use) with the queue bound, the writer's
 * delay before it takes a batch, its stall after (milliseconds; the two test knobs) and the
 * config lines extra.
 */
static void start_knobs(const char *queue_bytes, const char *delay_ms, const char *stall_ms,
                        const char *extra) {
    setenv("CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES", queue_bytes, 1);
    setenv("CRESCENT_TEST_OFFLOAD_WRITE_DELAY_MS", delay_ms, 1);
    setenv("CRESCENT_TEST_OFFLOAD_WRITE_STALL_MS", stall_ms, 1);
    off_server_start(disk_dir, sizeof(disk_dir), "/tmp/crescent-offwq.XXXXXX", MEMORY, extra);
    unsetenv("CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES");
    unsetenv("CRESCENT_TEST_OFFLOAD_WRITE_DELAY_MS");
    unsetenv("CRESCENT_TEST_OFFLOAD_WRITE_STALL_MS");
}

static void start_conf(const char *queue_bytes, const char *delay_ms, const char *extra) {
    start_knobs(queue_bytes, delay_ms, "0", extra);
}

static void start(const char *queue_bytes, const char *delay_ms) {
    start_conf(queue_bytes, delay_ms, "");
}

static void teardown(void) {
    unsetenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES");
    off_teardown(disk_dir);
}

/* SETs keys [from, to) to their values of generation gen, pipelined. */
static void set_keys(redisContext *c, int from, int to, int gen) {
    static char val[VAL_MAX];
    for (int i = from; i < to; i++) {
        char key[32];
        key_of(i, key);
        size_t n = off_value_bytes(i, gen, off_value_len(i), val);
        const char *argv[] = {"SET", key, val};
        size_t lens[] = {3, strlen(key), n};
        cr_assert_eq(redisAppendCommandArgv(c, 3, argv, lens), REDIS_OK);
    }
    for (int i = from; i < to; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(c, (void **)&r), REDIS_OK, "SET: %s", c->errstr);
        cr_assert(r->type == REDIS_REPLY_STATUS, "SET %d: %s", i, r->str);
        freeReplyObject(r);
    }
}

/* Asserts r is key i's value of generation gen, byte for byte. */
static void assert_val(redisReply *r, int i, int gen, const char *what) {
    static char want[VAL_MAX];
    size_t n = off_value_bytes(i, gen, off_value_len(i), want);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s %d: reply type %d", what, i,
              r ? r->type : -1);
    cr_assert_eq(r->len, n, "%s %d: %zu bytes, want %zu", what, i, r->len, n);
    cr_assert(memcmp(r->str, want, n) == 0, "%s %d: bytes differ", what, i);
}

/* GETs every key (pipelined) and asserts each value of generation gen, byte-exact. */
static void check_all(redisContext *c, int gen) {
    for (int i = 0; i < NKEYS; i++) {
        char key[32];
        key_of(i, key);
        cr_assert_eq(redisAppendCommand(c, "GET %s", key), REDIS_OK);
    }
    for (int i = 0; i < NKEYS; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(c, (void **)&r), REDIS_OK, "GET: %s", c->errstr);
        assert_val(r, i, gen, "GET");
        freeReplyObject(r);
    }
}

/* Stops it_srv with SIGTERM and waits as long as its queued writes take; keeps the tier. */
static void stop_clean(void) {
    it_close(it_c);
    it_c = NULL;
    kill(it_srv.pid, SIGTERM);
    int st = 0;
    cr_assert_eq(waitpid(it_srv.pid, &st, 0), it_srv.pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean exit, status 0x%x", st);
    it_srv.pid = 0;
    it_server_stop(&it_srv); /* removes the working directory only */
}

/* 1 when the server log holds text. */
static int log_has(const char *text) {
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "grep -q '%s' '%s'", text, it_srv.log);
    return system(cmd) == 0;
}

TestSuite(offload_wq, .fini = teardown, .timeout = 300);

/* GET, MGET and STRLEN of values whose writes are queued: byte-exact, served from the queue. */
Test(offload_wq, reads_while_writes_are_queued) {
    start("67108864", "40");
    set_keys(it_c, 0, NKEYS, 1);
    long long queued = off_info(it_c, "offload_write_queue_keys");
    cr_assert_gt(queued, 0, "writes still queued right after the load");
    cr_assert_eq(off_info(it_c, "offloaded_keys"), off_info(it_c, "offload_queued_writes"),
                 "every eviction went through the queue");
    check_all(it_c, 1);
    cr_assert_gt(off_info(it_c, "offload_queue_reads"), 0, "GETs served from the queue");
    /* MGET across the whole key space, and metadata of queued keys. */
    redisReply *r = it_cmd(it_c, "MGET wq:00000 wq:01000 nosuch wq:02000 wq:03000 wq:04095");
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 6);
    const int mk[] = {0, 1000, -1, 2000, 3000, 4095};
    for (int k = 0; k < 6; k++) {
        if (mk[k] < 0)
            cr_assert_eq(r->element[k]->type, REDIS_REPLY_NIL);
        else
            assert_val(r->element[k], mk[k], 1, "MGET");
    }
    for (int i = 0; i < NKEYS; i += 97) {
        char key[32];
        key_of(i, key);
        IT_INT((long long)off_value_len(i), it_c, "STRLEN %s", key);
    }
    off_wait_queue(it_c);
    cr_assert_eq(off_info(it_c, "offload_write_failures"), 0);
    cr_assert_eq(off_info(it_c, "evicted_keys"), 0, "nothing dropped");
    cr_assert_eq(off_info(it_c, "offload_disk_objects"), off_info(it_c, "offloaded_keys"),
                 "every offloaded value is on disk once the queue drained");
    cr_assert_eq(off_info(it_c, "offload_write_queue_bytes"), 0);
    check_all(it_c, 1); /* now from the disk */
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
    IT_STATUS("PONG", it_c, "PING");
}

/*
 * DEL, overwrite and EXPIRE right after eviction, while the writes are queued, more keys that
 * evict the new values too, then SIGTERM with writes still queued: the restart brings back
 * exactly the offloaded keys, the new values of the overwritten ones, never a deleted or an old
 * value, and the new TTLs.
 */
Test(offload_wq, changes_while_queued_win_across_restart) {
    start("67108864", "60");
    set_keys(it_c, 0, NKEYS, 1);
    cr_assert_gt(off_info(it_c, "offload_write_queue_keys"), 0);
    /* Key i % 4: 0 deleted, 1 overwritten (generation 2), 2 given a TTL, 3 left alone. */
    for (int i = 0; i < NKEYS; i += 4) {
        char key[32];
        key_of(i, key);
        IT_INT(1, it_c, "DEL %s", key);
        key_of(i + 2, key);
        IT_INT(1, it_c, "EXPIRE %s 100000", key);
    }
    for (int i = 1; i < NKEYS; i += 4)
        set_keys(it_c, i, i + 1, 2);
    cr_assert_gt(off_info(it_c, "offload_cancelled_writes"), 0, "queued writes were cancelled");
    /* Another 16 MiB of new keys evicts the new values (generation 2) too. */
    set_keys(it_c, NKEYS, 2 * NKEYS, 3);
    long long offloaded = off_info(it_c, "offloaded_keys");
    cr_assert_gt(off_info(it_c, "offload_write_queue_keys"), 0, "writes queued at the stop");
    stop_clean();
    cr_assert(log_has("waiting for [0-9]* queued offload writes"), "the stop waited");
    start("67108864", "0");
    IT_INT(offloaded, it_c, "DBSIZE");
    cr_assert_eq(off_info(it_c, "offload_recovered_keys"), offloaded);
    long long back = 0, back_new = 0;
    for (int i = 0; i < 2 * NKEYS; i++) {
        char key[32];
        key_of(i, key);
        redisReply *r = it_cmd(it_c, "GET %s", key);
        if (i < NKEYS && i % 4 == 0) {
            cr_assert_eq(r->type, REDIS_REPLY_NIL, "deleted key %d came back", i);
            continue;
        }
        if (r->type == REDIS_REPLY_NIL)
            continue; /* resident at the stop: gone, as without the tier */
        back++;
        back_new += i < NKEYS && i % 4 == 1;
        int gen = i >= NKEYS ? 3 : i % 4 == 1 ? 2 : 1;
        assert_val(r, i, gen, gen == 2 ? "overwritten" : "GET");
        r = it_cmd(it_c, "TTL %s", key);
        if (i < NKEYS && i % 4 == 2)
            cr_assert(r->integer > 90000 && r->integer <= 100000, "TTL %d = %lld", i, r->integer);
        else
            cr_assert_eq(r->integer, -1, "TTL %d", i);
    }
    cr_assert_eq(back, offloaded, "every offloaded key is back");
    cr_assert_geq(back_new, NKEYS / 4 * 9 / 10, "the new values were offloaded and came back");
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
}

/* A small bound: evictions beyond it write synchronously (back-pressure); 0 turns it off. */
Test(offload_wq, full_queue_writes_synchronously) {
    static const char *const bounds[] = {"65536", "0"};
    for (int b = 0; b < 2; b++) {
        if (b > 0) {
            teardown();
            disk_dir[0] = '\0';
        }
        start(bounds[b], "20");
        cr_assert_eq(off_info(it_c, "offload_write_queue_limit_bytes"), atoll(bounds[b]));
        set_keys(it_c, 0, NKEYS, 1);
        long long sync = off_info(it_c, "offload_sync_writes");
        long long queued = off_info(it_c, "offload_queued_writes");
        cr_assert_gt(sync, 0, "bound %s: synchronous writes", bounds[b]);
        if (b == 0)
            cr_assert_gt(queued, 0, "bound %s: queued writes too", bounds[b]);
        else
            cr_assert_eq(queued, 0, "the queue is off");
        cr_assert_eq(sync + queued, off_info(it_c, "offloaded_keys"));
        check_all(it_c, 1);
        off_wait_queue(it_c);
        cr_assert_eq(off_info(it_c, "evicted_keys"), 0);
        cr_assert_eq(off_info(it_c, "offload_disk_objects"), off_info(it_c, "offloaded_keys"));
        cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
    }
}

/* Queued writes the disk quota refuses: each key is dropped (evicted_keys), logged, no crash. */
Test(offload_wq, failed_queued_writes_drop_their_keys) {
    setenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", "2097152", 1);
    start("67108864", "10");
    set_keys(it_c, 0, NKEYS, 1);
    off_wait_queue(it_c);
    long long failed = off_info(it_c, "offload_write_failures");
    cr_assert_gt(failed, 0, "the 2 MiB quota refused queued writes");
    cr_assert_eq(off_info(it_c, "evicted_keys"), failed, "each refused write dropped its key");
    cr_assert_eq(off_info(it_c, "offload_sync_writes"), 0, "all went through the queue");
    IT_INT(NKEYS - failed, it_c, "DBSIZE");
    cr_assert_eq(off_info(it_c, "offload_disk_objects"), off_info(it_c, "offloaded_keys"));
    long long present = 0;
    for (int i = 0; i < NKEYS; i++) {
        char key[32];
        key_of(i, key);
        redisReply *r = it_cmd(it_c, "GET %s", key);
        if (r->type == REDIS_REPLY_NIL)
            continue;
        assert_val(r, i, 1, "GET");
        present++;
    }
    cr_assert_eq(present, NKEYS - failed);
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
    IT_STATUS("PONG", it_c, "PING");
    cr_assert(log_has("offload (queued) of key .* the value is evicted (dropped) instead"),
              "a log line names the failure");
}

/* ---------------------------------------------------------------- concurrent readers */

#define HAMMER_READERS 3

/* Shared by the writer (the test thread) and the reader threads. */
static struct {
    _Atomic int written; /* keys 0..written-1 are set */
    _Atomic int done;    /* the writer finished */
    _Atomic long gets, bad;
    char bad_what[160];
    int port;
    char host[64];
} hammer;

/* A reader thread: GETs random keys already written, each compared byte for byte. */
static void *hammer_reader(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
    static _Thread_local char want[VAL_MAX];
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout(hammer.host, hammer.port, tv);
    if (!c || c->err) {
        atomic_fetch_add(&hammer.bad, 1);
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    while (!atomic_load(&hammer.done)) {
        int w = atomic_load(&hammer.written);
        if (w == 0)
            continue;
        int i = (int)(rand_r(&seed) % (unsigned)w);
        char key[32];
        key_of(i, key);
        redisReply *r = redisCommand(c, "GET %s", key);
        size_t n = off_value_bytes(i, 1, off_value_len(i), want);
        int ok = r && r->type == REDIS_REPLY_STRING && r->len == n && memcmp(r->str, want, n) == 0;
        if (!ok && atomic_fetch_add(&hammer.bad, 1) == 0)
            snprintf(hammer.bad_what, sizeof(hammer.bad_what), "GET %s: type %d, %zu bytes", key,
                     r ? r->type : -1, r ? r->len : 0);
        atomic_fetch_add(&hammer.gets, 1);
        freeReplyObject(r);
        if (!r)
            break;
    }
    redisFree(c);
    return NULL;
}

/*
 * Two event loops; three clients GET random keys already written (most of them evicted a
 * moment ago, their writes queued or in progress) while the test thread loads the data set:
 * every reply byte-exact.
 */
Test(offload_wq, concurrent_reads_during_eviction) {
    start_conf("67108864", "5", "threads 2\n");
    memset(&hammer, 0, sizeof(hammer));
    hammer.port = it_srv.port;
    snprintf(hammer.host, sizeof(hammer.host), "%s", it_srv.host);
    pthread_t th[HAMMER_READERS];
    for (int t = 0; t < HAMMER_READERS; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, hammer_reader, (void *)(uintptr_t)t), 0);
    for (int i = 0; i < NKEYS; i += 16) {
        int to = i + 16 < NKEYS ? i + 16 : NKEYS;
        set_keys(it_c, i, to, 1);
        atomic_store(&hammer.written, to);
    }
    atomic_store(&hammer.done, 1);
    for (int t = 0; t < HAMMER_READERS; t++)
        pthread_join(th[t], NULL);
    cr_assert_eq(atomic_load(&hammer.bad), 0, "%ld bad replies of %ld, first: %s",
                 atomic_load(&hammer.bad), atomic_load(&hammer.gets), hammer.bad_what);
    cr_assert_gt(atomic_load(&hammer.gets), 0);
    cr_assert_gt(off_info(it_c, "offload_queue_reads"), 0, "some GETs hit queued writes");
    off_wait_queue(it_c);
    check_all(it_c, 1);
    cr_assert_eq(off_info(it_c, "evicted_keys"), 0);
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
    cr_assert_eq(off_info(it_c, "offload_disk_objects"), off_info(it_c, "offloaded_keys"));
}

/* ---------------------------------------------------------------- writes in progress */

/*
 * Keys whose write is in progress: the writer took them and is storing them. The server's
 * second test knob, CRESCENT_TEST_OFFLOAD_WRITE_STALL_MS, holds every batch the writer takes
 * that long before its sto_batch_put. Values are large (about 220 KiB, some 16 fit in memory),
 * so one SET evicts one or two keys, and INFO offload_write_queue_writing says when the writer
 * holds them; ip_stall_batch() then checks that every key evicted since is in that batch.
 */

#define IP_MAX   400    /* keys wp:00000 ... at most */
#define IP_VMAX  250000 /* largest value */
#define IP_DELAY "100"  /* ms the writer waits before a batch: one SET's evictions go together */
#define IP_STALL "1500" /* ms the writer holds each batch it took: commands arrive meanwhile */
#define IP_TTL   100000 /* seconds: every key is set with this TTL */
#define IP_REC   200    /* MEMORY USAGE of an offloaded key is at most this (its record) */
#define IP_DST   "wp:renamed"

/* What the tests expect of key i. */
static struct {
    int next;          /* keys 0 .. next-1 were set */
    char gen[IP_MAX];  /* value generation; 0: deleted or renamed away */
    int ttl[IP_MAX];   /* TTL set, in seconds; -1: none */
    char disk[IP_MAX]; /* offloaded (only its record in memory) at the last look */
} ip;

static void ip_key(int i, char *buf) {
    snprintf(buf, 32, "wp:%05d", i);
}

static size_t ip_len(int i) {
    return 200000 + (size_t)((unsigned)i * 2654435761u % 50000u);
}

static void ip_start(const char *stall_ms) {
    start_knobs("67108864", stall_ms[0] == '0' ? "0" : IP_DELAY, stall_ms, "");
}

/* SETs key i to its value of generation gen, with a TTL of ttl seconds (-1: none). */
static void ip_set(redisContext *c, int i, int gen, int ttl) {
    static char val[IP_VMAX];
    char key[32], ex[24];
    ip_key(i, key);
    size_t n = off_value_bytes(i, gen, ip_len(i), val);
    snprintf(ex, sizeof(ex), "%d", ttl);
    const char *argv[] = {"SET", key, val, "EX", ex};
    size_t lens[] = {3, strlen(key), n, 2, strlen(ex)};
    redisReply *r = redisCommandArgv(c, ttl > 0 ? 5 : 3, argv, lens);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "SET %s: %s", key, r ? r->str : c->errstr);
    freeReplyObject(r);
    ip.gen[i] = (char)gen;
    ip.ttl[i] = ttl;
}

/* 1 when key (named) exists with only its record in memory: its value is offloaded. */
static int ip_offloaded_key(redisContext *c, const char *key) {
    redisReply *r = redisCommand(c, "MEMORY USAGE %s", key);
    cr_assert_not_null(r, "MEMORY USAGE: %s", c->errstr);
    int off = r->type == REDIS_REPLY_INTEGER && r->integer <= IP_REC;
    freeReplyObject(r);
    return off;
}

static int ip_offloaded(redisContext *c, int i) {
    char key[32];
    ip_key(i, key);
    return ip_offloaded_key(c, key);
}

/* Marks in ip.disk the live keys whose value is offloaded now. */
static void ip_mark_disk(redisContext *c) {
    for (int i = 0; i < ip.next; i++)
        ip.disk[i] = (char)(ip.gen[i] && ip_offloaded(c, i));
}

/* Disk objects the offloaded keys of ip.disk make: a value each, an expiry for a TTL. */
static long long ip_disk_objects(void) {
    long long n = 0;
    for (int i = 0; i < ip.next; i++)
        n += ip.disk[i] ? 1 + (ip.ttl[i] > 0) : 0;
    return n;
}

/* Asserts r is key i's value of generation gen, byte for byte. */
static void ip_assert_val(redisReply *r, int i, int gen, const char *what) {
    static char want[IP_VMAX];
    size_t n = off_value_bytes(i, gen, ip_len(i), want);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s (key %d): reply type %d", what, i,
              r ? r->type : -1);
    cr_assert_eq(r->len, n, "%s (key %d): %zu bytes, want %zu", what, i, r->len, n);
    size_t at = 0, last = 0;
    for (size_t k = 0; k < n; k++)
        if (r->str[k] != want[k])
            last = k, at = at ? at : k + 1;
    cr_assert_eq(at, 0, "%s (key %d, %zu bytes): bytes %zu to %zu differ", what, i, n, at - 1,
                 last);
}

/* Asserts the TTL of key is ttl seconds (within 10,000 below), or -1 for ttl -1. */
static void ip_assert_ttl(redisContext *c, const char *key, int ttl) {
    redisReply *r = it_cmd(c, "TTL %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "TTL %s", key);
    if (ttl < 0)
        cr_assert_eq(r->integer, -1, "TTL %s = %lld, want none", key, r->integer);
    else
        cr_assert(r->integer > ttl - 10000 && r->integer <= ttl, "TTL %s = %lld, want %d", key,
                  r->integer, ttl);
}

/*
 * Brings the writer to hold a batch of fresh evictions: waits until nothing is queued, SETs new
 * keys (with IP_TTL) until one evicts, waits until the writer took the evicted values, and
 * checks, before and after listing them, that every value evicted since is in that batch
 * (taken, none queued behind, none written yet). Fills out[] (max entries) with those of its
 * keys that no test changed before (value generation 1, TTL IP_TTL) and returns how many; the
 * writer holds them for the rest of IP_STALL. Retries (10 times) when a batch was not caught
 * whole or holds no such key.
 */
static int ip_stall_batch(redisContext *c, int *out, int max) {
    static const char *const f[] = {"offload_write_queue_writing", "offload_write_queue_keys",
                                    "offload_writes"};
    for (int attempt = 0; attempt < 10; attempt++) {
        off_wait_queue(c);
        ip_mark_disk(c);
        long long w0 = off_info(c, "offload_writes");
        while (off_info(c, "offload_write_queue_keys") == 0) {
            cr_assert_lt(ip.next, IP_MAX, "an eviction within %d keys", IP_MAX);
            ip_set(c, ip.next++, 1, IP_TTL);
        }
        long long v[3], deadline = it_now_ms() + 60000;
        for (;;) {
            off_info_many(c, f, v, 3);
            if (v[0] > 0 || v[1] == 0 || it_now_ms() > deadline)
                break;
            it_sleep_ms(2);
        }
        if (v[0] == 0 || v[0] != v[1] || v[2] != w0)
            continue; /* not caught whole: written already, or more queued behind it */
        int n = 0, found = 0;
        for (int i = 0; i < ip.next; i++) {
            if (!ip.gen[i] || ip.disk[i] || !ip_offloaded(c, i))
                continue;
            if (n < max && ip.gen[i] == 1 && ip.ttl[i] == IP_TTL)
                out[n++] = i; /* untouched so far (not a value overwritten before) */
            found++;
        }
        long long v2[3];
        off_info_many(c, f, v2, 3);
        if (found == v[0] && v2[0] == v[0] && v2[2] == w0 && n > 0)
            return n;
    }
    cr_assert_fail("no batch of writes caught in progress in 10 tries");
    return 0;
}

/* The counters that tell a write in progress (waited for) from a queued one (cancelled). */
static void ip_waits(redisContext *c, long long *waited, long long *cancelled) {
    static const char *const f[] = {"offload_waited_writes", "offload_cancelled_writes"};
    long long v[2];
    off_info_many(c, f, v, 2);
    *waited = v[0];
    *cancelled = v[1];
}

/*
 * After a restart: every key offloaded at the stop (ip.disk) is back with its value and TTL, a
 * deleted one never, one in memory at the stop is gone (as without the tier). Returns the
 * keys back.
 */
static long long ip_check_restored(redisContext *c) {
    long long back = 0;
    for (int i = 0; i < ip.next; i++) {
        char key[32];
        ip_key(i, key);
        redisReply *r = redisCommand(c, "GET %s", key);
        cr_assert_not_null(r, "GET: %s", c->errstr);
        if (!ip.gen[i] || !ip.disk[i]) {
            cr_assert_eq(r->type, REDIS_REPLY_NIL, "GET %s: %s came back (type %d)", key,
                         ip.gen[i] ? "a value in memory at the stop" : "a deleted key", r->type);
        } else {
            ip_assert_val(r, i, ip.gen[i], key);
            ip_assert_ttl(c, key, ip.ttl[i]);
            back++;
        }
        freeReplyObject(r);
    }
    return back;
}

/* GET and MGET of values whose write is in progress: byte-exact, copied from the writer's job. */
Test(offload_wq, reads_while_writes_are_in_progress) {
    ip_start(IP_STALL);
    memset(&ip, 0, sizeof(ip));
    int b[32];
    ip_stall_batch(it_c, b, 32);
    long long qr = off_info(it_c, "offload_queue_reads");
    char key[32];
    ip_key(b[0], key);
    redisReply *r = redisCommand(it_c, "GET %s", key);
    ip_assert_val(r, b[0], 1, "GET of a key being written");
    freeReplyObject(r);
    cr_assert_eq(off_info(it_c, "offload_queue_reads"), qr + 1, "GET %s read the job", key);

    /* MGET: every key of a held batch, a key in memory and a missing one. */
    int n = ip_stall_batch(it_c, b, 30), mem = -1;
    for (int i = ip.next - 1; i >= 0 && mem < 0; i--)
        if (ip.gen[i] && !ip_offloaded(it_c, i))
            mem = i;
    cr_assert_geq(mem, 0, "a key in memory");
    const char *argv[33];
    size_t lens[33];
    char keys[32][32];
    argv[0] = "MGET";
    for (int k = 0; k <= n; k++) {
        ip_key(k < n ? b[k] : mem, keys[k]);
        argv[k + 1] = keys[k];
    }
    argv[n + 2] = "wp:nosuch";
    for (int k = 0; k < n + 3; k++)
        lens[k] = strlen(argv[k]);
    qr = off_info(it_c, "offload_queue_reads");
    r = redisCommandArgv(it_c, n + 3, argv, lens);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)n + 2, "MGET");
    for (int k = 0; k < n; k++)
        ip_assert_val(r->element[k], b[k], 1, "MGET of a key being written");
    ip_assert_val(r->element[n], mem, 1, "MGET of a key in memory");
    cr_assert_eq(r->element[n + 1]->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    cr_assert_eq(off_info(it_c, "offload_queue_reads"), qr + n, "MGET read the %d jobs", n);

    /* Written since: the same keys again, now from the disk. */
    off_wait_queue(it_c);
    for (int k = 0; k < n; k++) {
        ip_key(b[k], key);
        r = redisCommand(it_c, "GET %s", key);
        ip_assert_val(r, b[k], 1, "GET once written");
        freeReplyObject(r);
    }
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
    cr_assert_eq(off_info(it_c, "offload_write_failures"), 0);
    cr_assert_eq(off_info(it_c, "evicted_keys"), 0);
}

/* Asserts that GETRANGE key i 0 -1 (a copy: an offloaded value stays on disk) is generation gen. */
static void ip_assert_copy(redisContext *c, int i, int gen, const char *what) {
    char key[32];
    ip_key(i, key);
    redisReply *r = redisCommand(c, "GETRANGE %s 0 -1", key);
    ip_assert_val(r, i, gen, what);
    freeReplyObject(r);
}

/* Applies change k of ip_changes_across_restart to key i (whose write is in progress). */
static void ip_change(redisContext *c, int k, int i) {
    char key[32];
    ip_key(i, key);
    if (k == 0) {
        IT_INT(1, c, "DEL %s", key);
        ip.gen[i] = 0;
    } else if (k == 1 || k == 4) {
        ip_set(c, i, ip.gen[i] + 1, -1); /* a key can be in two batches: new value each time */
    } else if (k == 2) {
        IT_INT(1, c, "EXPIRE %s %d", key, 2 * IP_TTL);
        ip.ttl[i] = 2 * IP_TTL;
    } else {
        IT_INT(1, c, "PERSIST %s", key);
        ip.ttl[i] = -1;
    }
}

/*
 * DEL, SET (overwrite), EXPIRE, PERSIST and another SET, each of a key whose write is in
 * progress (each waits for it, then removes or rewrites its disk copy); the first overwritten
 * value is evicted too, the second stays in memory; then a stop with signal sig and a restart:
 * the deleted key stays deleted, the first overwritten key has its new value, the second none
 * (never the old one), the TTLs are the changed ones, the other keys of each batch are back.
 */
static void ip_changes_across_restart(int sig) {
    ip_start(IP_STALL);
    memset(&ip, 0, sizeof(ip));
    static const char *const what[] = {"DEL", "SET", "EXPIRE", "PERSIST", "SET (kept in memory)"};
    long long waited[5], cancelled[5];
    int changed[5], b[32];
    for (int k = 0; k < 5; k++) {
        /* Before the last change, new keys until the first new value is evicted too. */
        while (k == 4 && !ip_offloaded(it_c, changed[1])) {
            cr_assert_lt(ip.next, IP_MAX, "the new value is evicted within %d keys", IP_MAX);
            ip_set(it_c, ip.next++, 1, IP_TTL);
        }
        ip_stall_batch(it_c, b, 32);
        changed[k] = b[0];
        long long w, c;
        ip_waits(it_c, &w, &c);
        ip_change(it_c, k, b[0]);
        ip_waits(it_c, &waited[k], &cancelled[k]);
        waited[k] -= w;
        cancelled[k] -= c;
    }
    off_wait_queue(it_c);
    ip_mark_disk(it_c);
    for (int k = 1; k < 4; k++)
        cr_assert(ip.disk[changed[k]], "%s key %d offloaded at the stop", what[k], changed[k]);
    cr_assert(!ip.disk[changed[4]], "%s key %d in memory at the stop", what[4], changed[4]);
    char key[32];
    ip_key(changed[0], key);
    IT_INT(0, it_c, "EXISTS %s", key);
    for (int k = 1; k < 5; k++) {
        ip_key(changed[k], key);
        ip_assert_ttl(it_c, key, ip.ttl[changed[k]]);
        ip_assert_copy(it_c, changed[k], ip.gen[changed[k]], what[k]);
    }
    long long objects = off_info(it_c, "offload_disk_objects");
    if (sig == SIGTERM)
        stop_clean();
    else
        off_kill_hard();
    ip_start("0");
    long long back = ip_check_restored(it_c);
    cr_assert_geq(back, 3, "the overwritten, EXPIRE and PERSIST keys came back");
    IT_INT(back, it_c, "DBSIZE");
    cr_assert_eq(off_info(it_c, "offload_recovered_keys"), back);
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
    /* Each change met a write in progress (waited), not a queued one (cancelled). */
    for (int k = 0; k < 5; k++) {
        cr_assert_eq(waited[k], 1, "%s waited for the write in progress", what[k]);
        cr_assert_eq(cancelled[k], 0, "%s met no queued write", what[k]);
    }
    cr_assert_eq(objects, ip_disk_objects(), "the disk held the offloaded keys only");
}

Test(offload_wq, changes_while_writing_win_across_sigterm) {
    ip_changes_across_restart(SIGTERM);
}

Test(offload_wq, changes_while_writing_win_across_sigkill) {
    ip_changes_across_restart(SIGKILL);
}

/* FLUSHALL while a write is in progress: it waits, then removes that copy too. */
Test(offload_wq, flushall_while_a_write_is_in_progress) {
    ip_start(IP_STALL);
    memset(&ip, 0, sizeof(ip));
    int b[32];
    int n = ip_stall_batch(it_c, b, 32);
    long long w, c, w2, c2;
    ip_waits(it_c, &w, &c);
    IT_OK(it_c, "FLUSHALL");
    ip_waits(it_c, &w2, &c2);
    IT_INT(0, it_c, "DBSIZE");
    for (int k = 0; k < n; k++) {
        char key[32];
        ip_key(b[k], key);
        IT_NIL(it_c, "GET %s", key);
    }
    off_wait_queue(it_c);
    long long objects = off_info(it_c, "offload_disk_objects");
    cr_assert_eq(off_info(it_c, "offloaded_keys"), 0);
    for (int i = 0; i < ip.next; i++)
        ip.gen[i] = 0;
    stop_clean();
    ip_start("0");
    IT_INT(0, it_c, "DBSIZE");
    cr_assert_eq(ip_check_restored(it_c), 0, "nothing came back");
    cr_assert_eq(off_info(it_c, "offload_recovered_keys"), 0);
    cr_assert_eq(w2 - w, 1, "FLUSHALL waited for the write in progress");
    cr_assert_eq(c2 - c, 0, "FLUSHALL met no queued write");
    cr_assert_eq(objects, 0, "FLUSHALL left nothing on disk");
}

/* RENAME of a key whose write is in progress: the value moves, the old name never returns. */
Test(offload_wq, rename_of_a_key_being_written) {
    ip_start(IP_STALL);
    memset(&ip, 0, sizeof(ip));
    int b[32];
    ip_stall_batch(it_c, b, 32);
    int i = b[0];
    char key[32];
    ip_key(i, key);
    long long w, c, w2, c2;
    ip_waits(it_c, &w, &c);
    IT_OK(it_c, "RENAME %s %s", key, IP_DST);
    ip_waits(it_c, &w2, &c2);
    ip.gen[i] = 0;
    IT_INT(0, it_c, "EXISTS %s", key);
    ip_assert_ttl(it_c, IP_DST, IP_TTL);
    redisReply *r = redisCommand(it_c, "GETRANGE %s 0 -1", IP_DST); /* a copy: stays on disk */
    ip_assert_val(r, i, 1, "GETRANGE of the renamed key");
    freeReplyObject(r);
    off_wait_queue(it_c);
    cr_assert(ip_offloaded_key(it_c, IP_DST), "%s offloaded at the stop", IP_DST);
    ip_mark_disk(it_c);
    long long objects = off_info(it_c, "offload_disk_objects");
    off_kill_hard();
    ip_start("0");
    r = redisCommand(it_c, "GET %s", IP_DST);
    ip_assert_val(r, i, 1, "GET of the renamed key after the restart");
    freeReplyObject(r);
    ip_assert_ttl(it_c, IP_DST, IP_TTL);
    long long back = ip_check_restored(it_c); /* key i among them: deleted, never back */
    IT_INT(back + 1, it_c, "DBSIZE");
    cr_assert_eq(off_info(it_c, "offload_recovered_keys"), back + 1);
    cr_assert_eq(w2 - w, 1, "RENAME waited for the write in progress");
    cr_assert_eq(c2 - c, 0, "RENAME met no queued write");
    cr_assert_eq(objects, ip_disk_objects() + 2, "the disk held the offloaded keys only");
}

/*
 * Runs value command k of value_commands_on_keys_being_written (what) on key i, whose write is
 * in progress, and asserts that it replies the value the key had.
 */
static void ip_value_change(redisContext *c, int k, int i, const char *what) {
    static char val[IP_VMAX];
    char key[32];
    ip_key(i, key);
    int old = ip.gen[i]; /* the value it has (1: ip_stall_batch picks untouched keys) */
    redisReply *r;
    if (k == 0) {
        r = redisCommand(c, "GETDEL %s", key);
        ip.gen[i] = 0;
    } else if (k == 1) {
        r = redisCommand(c, "GETEX %s PERSIST", key);
        ip.ttl[i] = -1;
    } else {
        size_t n = off_value_bytes(i, old + 1, ip_len(i), val);
        const char *argv[] = {k == 2 ? "SET" : "GETSET", key, val, "GET"};
        size_t lens[] = {k == 2 ? 3 : 6, strlen(key), n, 3};
        r = redisCommandArgv(c, k == 2 ? 4 : 3, argv, lens);
        ip.gen[i] = (char)(old + 1);
        ip.ttl[i] = -1;
    }
    ip_assert_val(r, i, old, what);
    freeReplyObject(r);
}

/*
 * GETDEL, GETEX PERSIST, SET ... GET and GETSET of keys whose write is in progress: each replies
 * the old value byte-exact and its change wins across a SIGKILL and a restart.
 */
Test(offload_wq, value_commands_on_keys_being_written) {
    ip_start(IP_STALL);
    memset(&ip, 0, sizeof(ip));
    static const char *const what[] = {"GETDEL", "GETEX PERSIST", "SET GET", "GETSET"};
    long long waited[4];
    int changed[4], b[32];
    for (int k = 0; k < 4; k++) {
        ip_stall_batch(it_c, b, 32);
        changed[k] = b[0];
        long long w, c;
        ip_waits(it_c, &w, &c);
        ip_value_change(it_c, k, b[0], what[k]);
        ip_waits(it_c, &waited[k], &c);
        waited[k] -= w;
    }
    char key[32];
    ip_key(changed[0], key);
    IT_INT(0, it_c, "EXISTS %s", key);
    for (int k = 1; k < 4; k++) {
        ip_key(changed[k], key);
        ip_assert_ttl(it_c, key, -1);
        ip_assert_copy(it_c, changed[k], ip.gen[changed[k]], what[k]);
    }
    off_wait_queue(it_c);
    ip_mark_disk(it_c);
    long long objects = off_info(it_c, "offload_disk_objects");
    off_kill_hard();
    ip_start("0");
    long long back = ip_check_restored(it_c);
    IT_INT(back, it_c, "DBSIZE");
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(waited[k], 1, "%s waited for the write in progress", what[k]);
    cr_assert_eq(objects, ip_disk_objects(), "the disk held the offloaded keys only");
}
