/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The offload write queue (docs/storage.md, "Eviction writes"): evicted values are written to
 * the SSD tier by a background writer. The server's test knob CRESCENT_TEST_OFFLOAD_WRITE_DELAY_MS
 * makes the writer wait before each batch, so the writes are still queued while the tests
 * read every key back, delete, overwrite and re-expire keys, and stop the master; a restart then
 * shows which values reached the disk. Also the bound (a full queue writes synchronously) and a
 * disk quota that makes queued writes fail (the keys are dropped as evictions).
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
 * Starts the master on disk_dir (created on first use) with the queue bound, the writer delay
 * and the config lines extra.
 */
static void start_conf(const char *queue_bytes, const char *delay_ms, const char *extra) {
    setenv("CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES", queue_bytes, 1);
    setenv("CRESCENT_TEST_OFFLOAD_WRITE_DELAY_MS", delay_ms, 1);
    off_server_start(disk_dir, sizeof(disk_dir), "/tmp/crescent-offwq.XXXXXX", MEMORY, extra);
    unsetenv("CRESCENT_OFFLOAD_WRITE_QUEUE_BYTES");
    unsetenv("CRESCENT_TEST_OFFLOAD_WRITE_DELAY_MS");
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
