/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The single-process master with the SSD tier (--enable_offload, docs/storage.md): a master with
 * 4 MiB of --memory is filled through hiredis with a data set four times that size; every key
 * must stay visible (EXISTS, STRLEN, TYPE, TTL, SCAN, DBSIZE) without a disk read, read back
 * byte-exact with GET, and the INFO offload counters must add up. Also DEL / overwrite / expiry
 * / FLUSHALL removing disk copies, commands that read or modify an offloaded value, a restart
 * (clean and kill -9) bringing the offloaded keys back with their TTLs, and a disk quota that
 * makes eviction fall back to dropping values. Which keys are on disk is read from MEMORY USAGE:
 * an offloaded key counts only its record (docs/storage.md).
 */
#include "common/fmacros.h"

#include "tests/integration/harness.h"
#include "tests/offload/offload_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NKEYS     4096   /* values average 4,000 bytes: about 16 MiB, four times --memory */
#define VAL_MAX   8192   /* longest value of the data set */
#define OFF_BIG   200000 /* one larger value among them */
#define MEMORY    "4mb"
#define REC_BYTE  200 /* MEMORY USAGE at most this: only the record, the value is on disk */
#define EMPTY_KEY 7   /* the key whose value is empty */

static char disk_dir[256];

/* Length of the value of key i: 1,000 to 7,000 bytes; EMPTY_KEY is empty, key 9 is large. */
static size_t val_len(int i) {
    if (i == EMPTY_KEY)
        return 0;
    if (i == 9)
        return OFF_BIG;
    return off_value_len(i);
}

/* Fills buf with the pseudo-random bytes of key i's value (generation gen); returns the length. */
static size_t val_of(int i, int gen, char *buf) {
    return off_value_bytes(i, gen, val_len(i), buf);
}

static void key_of(int i, char *buf) {
    snprintf(buf, 32, "off:%05d", i);
}

/* Runs a command and frees its reply; fails the test on a connection error or an error reply. */
static long long run(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    cr_assert_not_null(r, "'%s': %s", fmt, c->errstr);
    cr_assert(r->type != REDIS_REPLY_ERROR, "'%s': %s", fmt, r->str);
    long long v = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    return v;
}

/* Starts it_srv with the tier at disk_dir (created on first use), through a config file. */
static void start_offload(const char *memory) {
    off_server_start(disk_dir, sizeof(disk_dir), "/tmp/crescent-offload.XXXXXX", memory, "");
}

static void setup(void) {
    disk_dir[0] = '\0';
    start_offload(MEMORY);
}

static void teardown(void) {
    off_teardown(disk_dir);
}

static void set_key(redisContext *c, int i, int gen) {
    static char val[OFF_BIG];
    char key[32];
    key_of(i, key);
    size_t n = val_of(i, gen, val);
    const char *argv[] = {"SET", key, val};
    size_t lens[] = {3, strlen(key), n};
    redisReply *r = redisCommandArgv(c, 3, argv, lens);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "SET %s: %s", key, r ? r->str : c->errstr);
    freeReplyObject(r);
}

/* Sets every key, then waits for the queued offload writes, so the disk figures are final. */
static void fill(redisContext *c, int gen) {
    for (int i = 0; i < NKEYS; i++)
        set_key(c, i, gen);
    off_wait_queue(c);
}

/* Asserts GET of key i returns its value of generation gen, byte for byte. */
static void check_key(redisContext *c, int i, int gen) {
    static char want[OFF_BIG];
    char key[32];
    key_of(i, key);
    size_t n = val_of(i, gen, want);
    redisReply *r = redisCommand(c, "GET %s", key);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "GET %s: type %d", key, r ? r->type : -1);
    cr_assert_eq(r->len, n, "GET %s: %zu bytes, want %zu", key, r->len, n);
    cr_assert(memcmp(r->str, want, n) == 0, "GET %s: bytes differ", key);
    freeReplyObject(r);
}

static void check_nil(redisContext *c, int i) {
    char key[32];
    key_of(i, key);
    redisReply *r = redisCommand(c, "GET %s", key);
    cr_assert(r && r->type == REDIS_REPLY_NIL, "GET %s: want nil, type %d", key, r ? r->type : -1);
    freeReplyObject(r);
}

/* 1 when key i's value is on disk now (MEMORY USAGE counts only its record). Not for
 * EMPTY_KEY: its MEMORY USAGE is below REC_BYTE in memory too. */
static int on_disk(redisContext *c, int i) {
    char key[32];
    key_of(i, key);
    cr_assert_neq(i, EMPTY_KEY, "MEMORY USAGE cannot tell where %s is", key);
    long long u = run(c, "MEMORY USAGE %s", key);
    cr_assert_gt(u, 0, "MEMORY USAGE %s", key);
    return u <= REC_BYTE;
}

/*
 * Marks in out[] the keys on disk; returns how many. EMPTY_KEY is on disk when INFO's
 * offloaded_keys counts one key more than MEMORY USAGE finds among the others (which eviction
 * left it in memory varies from run to run).
 */
static int disk_keys(redisContext *c, char *out) {
    int n = 0;
    for (int i = 0; i < NKEYS; i++)
        if (i != EMPTY_KEY)
            n += out[i] = (char)on_disk(c, i);
    long long rest = off_info(c, "offloaded_keys") - n;
    cr_assert(rest == 0 || rest == 1, "offloaded_keys is %lld more than the keys on disk", rest);
    out[EMPTY_KEY] = (char)rest;
    return n + (int)rest;
}

TestSuite(offload, .init = setup, .fini = teardown, .timeout = 300);

Test(offload, four_times_memory_reads_back_byte_exact) {
    fill(it_c, 1);
    cr_assert_eq(run(it_c, "DBSIZE"), NKEYS, "every key stays visible");
    cr_assert_eq(off_info(it_c, "evicted_keys"), 0, "nothing dropped");
    long long offloaded = off_info(it_c, "offloaded_keys");
    cr_assert_geq(offloaded, NKEYS / 2, "most of a 4x data set is on disk: %lld", offloaded);
    cr_assert_eq(off_info(it_c, "offload_writes"), offloaded);
    cr_assert_eq(off_info(it_c, "offload_disk_objects"), offloaded);
    static char where[NKEYS];
    cr_assert_eq(disk_keys(it_c, where), offloaded, "MEMORY USAGE agrees with INFO");

    /* Key metadata without a disk read. */
    for (int i = 0; i < NKEYS; i++) {
        char key[32];
        key_of(i, key);
        IT_INT(1, it_c, "EXISTS %s", key);
        IT_INT((long long)val_len(i), it_c, "STRLEN %s", key);
        IT_STATUS("string", it_c, "TYPE %s", key);
        IT_INT(-1, it_c, "TTL %s", key);
    }
    long long seen = 0;
    char cursor[32] = "0";
    do {
        redisReply *r = redisCommand(it_c, "SCAN %s COUNT 500", cursor);
        cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        seen += (long long)r->element[1]->elements;
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    cr_assert_eq(seen, NKEYS, "SCAN visits every key once");
    cr_assert_eq(off_info(it_c, "offload_reads"), 0, "metadata never reads the disk");

    for (int i = 0; i < NKEYS; i++)
        check_key(it_c, i, 1);
    long long reads = off_info(it_c, "offload_reads");
    long long prom = off_info(it_c, "offload_promotions");
    cr_assert_eq(reads, offloaded, "one disk read per offloaded key");
    cr_assert_eq(prom + off_info(it_c, "offload_buffered_reads"), reads);
    cr_assert_eq(off_info(it_c, "offloaded_keys"), offloaded - prom, "promoted keys left the disk");
    cr_assert_eq(off_info(it_c, "offload_disk_objects"), offloaded - prom);
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
    cr_assert_eq(off_info(it_c, "offload_write_failures"), 0);
    /* A second pass: still exact, whatever moved. */
    for (int i = 0; i < NKEYS; i++)
        check_key(it_c, i, 1);
}

Test(offload, del_overwrite_expire_flush_remove_disk_copies) {
    fill(it_c, 1);
    static char where[NKEYS];
    int nd = disk_keys(it_c, where);
    cr_assert_gt(nd, 0);
    int q = NKEYS / 4, dels = 0, over = 0, exp = 0;
    for (int i = 0; i < q; i++) { /* DEL */
        char key[32];
        key_of(i, key);
        IT_INT(1, it_c, "DEL %s", key);
        dels += where[i];
    }
    cr_assert_eq(off_info(it_c, "offload_removes"), dels, "DEL removed %d disk copies", dels);
    for (int i = q; i < 2 * q; i++) { /* overwrite */
        over += where[i] && on_disk(it_c, i);
        set_key(it_c, i, 2);
    }
    cr_assert_geq(off_info(it_c, "offload_removes"), dels + over);
    for (int i = 2 * q; i < 3 * q; i++) { /* expiry */
        char key[32];
        key_of(i, key);
        exp += on_disk(it_c, i);
        IT_INT(1, it_c, "PEXPIRE %s 200", key);
    }
    it_sleep_ms(400);
    for (int i = 0; i < NKEYS; i++) {
        if (i < q || (i >= 2 * q && i < 3 * q))
            check_nil(it_c, i);
        else
            check_key(it_c, i, i < 2 * q ? 2 : 1);
    }
    cr_assert_eq(run(it_c, "DBSIZE"), NKEYS / 2);
    off_wait_queue(it_c); /* the overwrites evicted more */
    cr_assert_eq(off_info(it_c, "offload_disk_objects"), off_info(it_c, "offloaded_keys"),
                 "no orphan on disk (%d expired offloaded keys)", exp);
    IT_OK(it_c, "FLUSHALL");
    cr_assert_eq(run(it_c, "DBSIZE"), 0);
    cr_assert_eq(off_info(it_c, "offloaded_keys"), 0);
    cr_assert_eq(off_info(it_c, "offload_disk_objects"), 0, "FLUSHALL empties the tier");
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
}

/* Finds n keys on disk from key 16 on (not the special ones), storing them in ks. */
static void pick_disk_keys(redisContext *c, int *ks, int n) {
    int got = 0;
    for (int i = 16; i < NKEYS && got < n; i++)
        if (on_disk(c, i))
            ks[got++] = i;
    cr_assert_eq(got, n, "found %d keys on disk", got);
}

Test(offload, commands_on_offloaded_values) {
    fill(it_c, 1);
    int ks[12];
    pick_disk_keys(it_c, ks, 12);
    static char v[VAL_MAX];
    char key[32], key2[40];
    size_t n;

    /* GETRANGE and BITCOUNT read a copy; the key stays on disk. */
    key_of(ks[0], key);
    n = val_of(ks[0], 1, v);
    redisReply *r = it_cmd(it_c, "GETRANGE %s 10 19", key);
    cr_assert(r->type == REDIS_REPLY_STRING && r->len == 10 && memcmp(r->str, v + 10, 10) == 0);
    cr_assert(on_disk(it_c, ks[0]), "a read-only command does not promote");

    /* APPEND builds a new value in memory. */
    key_of(ks[1], key);
    n = val_of(ks[1], 1, v);
    IT_INT((long long)n + 3, it_c, "APPEND %s xyz", key);
    r = it_cmd(it_c, "GET %s", key);
    cr_assert(r->type == REDIS_REPLY_STRING && r->len == n + 3 && memcmp(r->str, v, n) == 0 &&
              memcmp(r->str + n, "xyz", 3) == 0);

    /* RENAME moves the disk copy to the new name (and keeps the TTL). */
    key_of(ks[2], key);
    n = val_of(ks[2], 1, v);
    IT_INT(1, it_c, "EXPIRE %s 5000", key);
    IT_OK(it_c, "RENAME %s renamed", key);
    IT_INT(0, it_c, "EXISTS %s", key);
    r = it_cmd(it_c, "TTL renamed");
    cr_assert(r->integer > 4900 && r->integer <= 5000, "TTL %lld", r->integer);
    r = it_cmd(it_c, "GET renamed");
    cr_assert(r->type == REDIS_REPLY_STRING && r->len == n && memcmp(r->str, v, n) == 0);

    /* COPY reads the source; GETDEL returns and removes. */
    key_of(ks[3], key);
    n = val_of(ks[3], 1, v);
    IT_INT(1, it_c, "COPY %s copied", key);
    r = it_cmd(it_c, "GET copied");
    cr_assert(r->type == REDIS_REPLY_STRING && r->len == n && memcmp(r->str, v, n) == 0);
    key_of(ks[4], key);
    n = val_of(ks[4], 1, v);
    r = it_cmd(it_c, "GETDEL %s", key);
    cr_assert(r->type == REDIS_REPLY_STRING && r->len == n && memcmp(r->str, v, n) == 0);
    IT_INT(0, it_c, "EXISTS %s", key);

    /* SETRANGE and SETBIT modify; GETEX sets a TTL on an offloaded key. */
    key_of(ks[5], key);
    n = val_of(ks[5], 1, v);
    IT_INT((long long)n, it_c, "SETRANGE %s 0 HELLO", key);
    memcpy(v, "HELLO", 5);
    r = it_cmd(it_c, "GET %s", key);
    cr_assert(r->type == REDIS_REPLY_STRING && r->len == n && memcmp(r->str, v, n) == 0);
    key_of(ks[6], key);
    n = val_of(ks[6], 1, v);
    r = it_cmd(it_c, "GETEX %s EX 3000", key);
    cr_assert(r->type == REDIS_REPLY_STRING && r->len == n && memcmp(r->str, v, n) == 0);
    r = it_cmd(it_c, "TTL %s", key);
    cr_assert(r->integer > 2900 && r->integer <= 3000);

    /* MGET mixes disk and memory; SET ... GET returns the old value. */
    key_of(ks[7], key);
    key_of(ks[8], key2);
    r = it_cmd(it_c, "MGET %s nosuchkey %s", key, key2);
    cr_assert(r->type == REDIS_REPLY_ARRAY && r->elements == 3);
    n = val_of(ks[7], 1, v);
    cr_assert(r->element[0]->len == n && memcmp(r->element[0]->str, v, n) == 0);
    cr_assert(r->element[1]->type == REDIS_REPLY_NIL);
    n = val_of(ks[8], 1, v);
    cr_assert(r->element[2]->len == n && memcmp(r->element[2]->str, v, n) == 0);
    key_of(ks[9], key);
    n = val_of(ks[9], 1, v);
    r = it_cmd(it_c, "SET %s new GET", key);
    cr_assert(r->type == REDIS_REPLY_STRING && r->len == n && memcmp(r->str, v, n) == 0);
    IT_STR("new", it_c, "GET %s", key);

    /* The empty and the large value. */
    IT_STR("", it_c, "GET off:00007");
    check_key(it_c, 9, 1);
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
    cr_assert_eq(off_info(it_c, "evicted_keys"), 0);
}

Test(offload, restart_brings_offloaded_keys_back_with_ttls) {
    fill(it_c, 1);
    /* Every third key gets a long TTL, every third + 1 a short one just before the stop. */
    for (int i = 0; i < NKEYS; i += 3) {
        char key[32];
        key_of(i, key);
        run(it_c, "EXPIRE %s 10000", key);
    }
    static char where[NKEYS];
    int nd = disk_keys(it_c, where), gone = 0;
    for (int i = 1; i < NKEYS; i += 3) {
        char key[32];
        key_of(i, key);
        run(it_c, "PEXPIRE %s 300", key);
        gone += where[i];
    }
    it_close(it_c);
    it_c = NULL;
    it_server_stop(&it_srv); /* SIGTERM: a clean shutdown keeps the disk copies */
    it_sleep_ms(500);
    start_offload(MEMORY);
    long long want = nd - gone;
    cr_assert_eq(run(it_c, "DBSIZE"), want, "the keys that were on disk, less the expired");
    cr_assert_eq(off_info(it_c, "offload_recovered_keys"), want);
    cr_assert_eq(off_info(it_c, "offloaded_keys"), want);
    for (int i = 0; i < NKEYS; i++) {
        char key[32];
        key_of(i, key);
        if (!where[i] || i % 3 == 1) {
            check_nil(it_c, i);
            continue;
        }
        redisReply *r = redisCommand(it_c, "TTL %s", key);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER);
        if (i % 3 == 0)
            cr_assert(r->integer > 9000 && r->integer <= 10000, "TTL %s = %lld", key, r->integer);
        else
            cr_assert_eq(r->integer, -1, "TTL %s", key);
        freeReplyObject(r);
        check_key(it_c, i, 1);
    }

    /* kill -9: the overwrites removed the old copies before they replied, so exactly the
     * values on disk at the kill come back, each with its newest bytes. */
    fill(it_c, 2);
    nd = disk_keys(it_c, where);
    cr_assert_gt(nd, 0);
    off_kill_hard();
    start_offload(MEMORY);
    cr_assert_eq(run(it_c, "DBSIZE"), nd);
    for (int i = 0; i < NKEYS; i++) {
        if (where[i])
            check_key(it_c, i, 2);
        else
            check_nil(it_c, i);
    }
    cr_assert_eq(off_info(it_c, "offload_read_failures"), 0);
}

/* The other layouts and the io_uring path: a 4x data set reads back, and survives a restart. */
Test(offload, other_layouts_and_io_uring) {
    static const char *const env[][3] = {
        /* backend, MOONCAKE_OFFLOAD_USE_URING, MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES */
        {"bucket_storage_backend", "true", NULL},
        {"file_per_key_storage_backend", "false", NULL},
        {"offset_allocator_storage_backend", "true", "67108864"},
    };
    static char where[NKEYS];
    for (size_t k = 0; k < sizeof(env) / sizeof(env[0]); k++) {
        it_teardown();
        it_server_stop(&it_srv);
        teardown(); /* a fresh directory */
        disk_dir[0] = '\0';
        setenv("MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR", env[k][0], 1);
        setenv("MOONCAKE_OFFLOAD_USE_URING", env[k][1], 1);
        if (env[k][2])
            setenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", env[k][2], 1);
        start_offload(MEMORY);
        redisReply *r = it_cmd(it_c, "INFO offload");
        cr_assert_not_null(strstr(r->str, env[k][0]), "%s", r->str);
        fill(it_c, 1);
        int nd = disk_keys(it_c, where);
        cr_assert_geq(nd, NKEYS / 2, "%s: %d keys on disk", env[k][0], nd);
        cr_assert_eq(off_info(it_c, "evicted_keys"), 0, "%s", env[k][0]);
        it_close(it_c);
        it_c = NULL;
        it_server_stop(&it_srv);
        start_offload(MEMORY);
        long long back = run(it_c, "DBSIZE");
        cr_assert_eq(back, nd, "%s: the restart brought back %lld keys, %d were on disk", env[k][0],
                     back, nd);
        for (int i = 0; i < NKEYS; i++) {
            if (where[i])
                check_key(it_c, i, 1);
            else
                check_nil(it_c, i);
        }
        cr_assert_eq(off_info(it_c, "offload_reads"), nd, "%s", env[k][0]);
        cr_assert_eq(off_info(it_c, "offload_read_failures"), 0, "%s", env[k][0]);
        unsetenv("MOONCAKE_OFFLOAD_STORAGE_BACKEND_DESCRIPTOR");
        unsetenv("MOONCAKE_OFFLOAD_USE_URING");
        unsetenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES");
    }
}

Test(offload, quota_full_falls_back_to_dropping) {
    it_teardown();
    it_server_stop(&it_srv);
    setenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES", "2097152", 1);
    start_offload(MEMORY);
    unsetenv("MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES");
    cr_assert_eq(off_info(it_c, "offload_disk_quota_bytes"), 2097152);
    fill(it_c, 1);
    long long failed = off_info(it_c, "offload_write_failures");
    long long dropped = off_info(it_c, "evicted_keys");
    cr_assert_gt(failed, 0, "the 2 MiB quota refused writes");
    cr_assert_eq(dropped, failed, "each refused write dropped its key");
    cr_assert_leq(off_info(it_c, "offloaded_bytes"), 2097152);
    cr_assert_eq(run(it_c, "DBSIZE"), NKEYS - dropped);
    long long present = 0;
    for (int i = 0; i < NKEYS; i++) {
        char key[32];
        key_of(i, key);
        if (run(it_c, "EXISTS %s", key)) {
            check_key(it_c, i, 1);
            present++;
        } else {
            check_nil(it_c, i);
        }
    }
    cr_assert_eq(present, NKEYS - dropped);
    IT_STATUS("PONG", it_c, "PING");
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "grep -q 'the value is evicted (dropped) instead' '%s'", it_srv.log);
    cr_assert_eq(system(cmd), 0, "a log line names the fallback");
}
