/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The master's embedded segment as a pool segment (server/srv_pool_seg.c, docs/store.md "The
 * master's embedded segment"), against a real crescent-master and libcrescent: with no client
 * segment a library put lands in master@host:port over tcp, shm and fabric and reads back
 * byte-exact through the library and GET; with a peer added, random and free_ratio_first placement
 * use both, replica_num 2 takes one of each; eviction under pressure (library puts, and keyspace
 * SETs) frees pool objects there; used bytes return to zero; a restarted master mounts it again.
 * Keyspace strings (SET) answer MC.EXIST / MC.GETREPLICAS / MC.QUERYKEY / MC.REMOVE as objects
 * there and library clients read them over tcp and shm; a read lease pins their block; MC.*
 * inside MULTI/EXEC works; MC.GETREPLICASBYREGEX, MC.REMOVEBYREGEX, MC.REMOVEALL and MC.STATS
 * include them.
 */
#include "common/fmacros.h"

#include "crescent/store.h"
#include "crescent/transfer.h"
#include "tests/store/store_test_util.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1u << 20)

static struct st_master master;
static redisContext *rc;
static char mseg[256]; /* "master@127.0.0.1:<port>" */

static void start(const char *extra) {
    st_master_start(&master, extra);
    rc = st_redis(&master);
    snprintf(mseg, sizeof(mseg), "master@127.0.0.1:%d", master.port);
}

static void stop(void) {
    redisFree(rc);
    rc = NULL;
    st_master_stop(&master);
}

TestSuite(embedded, .fini = stop, .timeout = 180);

/* The single segment holding key's replica. */
static void one_segment(const char *key, char seg[256]) {
    char segs[8][256];
    cr_assert_eq(st_replica_segments(rc, key, segs, 8), 1, "%s: not one replica", key);
    memcpy(seg, segs[0], 256);
}

/* used of segment name in MC.QUERYSEGMENT. */
static long long seg_used(const char *name) {
    redisReply *r = st_cmd(rc, "MC.QUERYSEGMENT %s", name);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY, "MC.QUERYSEGMENT %s: %s", name,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    const redisReply *u = st_field(r, "used");
    cr_assert_not_null(u);
    long long v = u->integer;
    freeReplyObject(r);
    return v;
}

/* An integer field of MC.STATS. */
static long long mc_stat(const char *name) {
    redisReply *r = st_cmd(rc, "MC.STATS");
    const redisReply *f = st_field(r, name);
    cr_assert(f != NULL && f->type == REDIS_REPLY_INTEGER, "MC.STATS %s", name);
    long long v = f->integer;
    freeReplyObject(r);
    return v;
}

/* STRLEN of key. */
static long long cmd_strlen(const char *key) {
    redisReply *r = st_cmd(rc, "STRLEN %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static void check_lib_get(struct crescent_store *st, const char *key, const void *want,
                          size_t len) {
    void *v = NULL;
    size_t n = 0;
    OK(crescent_store_get(st, key, &v, &n));
    cr_assert_eq(n, len, "%s: %zu bytes, want %zu", key, n, len);
    cr_assert(memcmp(v, want, len) == 0, "%s: library get bytes differ", key);
    crescent_store_free(v);
}

static void check_redis_get(const char *key, const void *want, size_t len) {
    redisReply *r = st_cmd(rc, "GET %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "GET %s: type %d", key, r->type);
    cr_assert_eq(r->len, len);
    cr_assert(memcmp(r->str, want, len) == 0, "GET %s: bytes differ", key);
    freeReplyObject(r);
}

/* MC.SEGMENTS lists the master's segment with its owner's host and a transport endpoint. */
static void check_listed(void) {
    redisReply *r = st_cmd(rc, "MC.QUERYSEGMENT %s", mseg);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY, "%s not mounted: %s", mseg,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    cr_assert_str_eq(st_field(r, "host")->str, "127.0.0.1");
    cr_assert_str_eq(st_field(r, "status")->str, "OK");
    cr_assert_eq(st_field(r, "size")->integer, 64 * MIB);
    cr_assert(strncmp(st_field(r, "endpoint")->str, "127.0.0.1:", 10) == 0);
    freeReplyObject(r);
}

/* No client segment: library puts over proto land in the master's segment, 1 B .. 8 MiB. */
static void puts_land_in_the_master(const char *proto) {
    start("--memory 64mb --embedded_segment_protocols tcp,shm,fabric");
    check_listed();
    struct crescent_store *st = st_store(&master, proto, 0);
    static const size_t sizes[] = {1, 4096, MIB + 3, 8 * MIB};
    char *val = malloc(8 * MIB);
    cr_assert_not_null(val);
    for (size_t i = 0; i < 4; i++) {
        char key[32], seg[256];
        snprintf(key, sizeof(key), "%s-%zu", proto, sizes[i]);
        st_fill(val, sizes[i], (unsigned)i + 1);
        OK(crescent_store_put(st, key, val, sizes[i], NULL));
        one_segment(key, seg);
        cr_assert_str_eq(seg, mseg);
        check_lib_get(st, key, val, sizes[i]);
        check_redis_get(key, val, sizes[i]); /* the master reads its own memory */
    }
    /* the bytes moved with the transfer engine over proto (metrics: 1 shm, 2 tcp, 3 fabric) */
    struct crescent_store_metrics m;
    OK(crescent_store_metrics(st, &m));
    int iface = strcmp(proto, "shm") == 0 ? 1 : strcmp(proto, "tcp") == 0 ? 2 : 3;
    cr_assert_gt(m.write_ops[iface], 0, "no write over %s", proto);
    cr_assert_gt(m.read_ops[iface], 0, "no read over %s", proto);
    /* redis-cli prints it */
    OK(crescent_store_put(st, "cli", "from the master's segment", 25, NULL));
    char cmd[128], out[64] = "";
    snprintf(cmd, sizeof(cmd), "redis-cli -p %d GET cli", master.port);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(out, sizeof(out), f));
    pclose(f);
    cr_assert_str_eq(out, "from the master's segment\n");
    /* keyspace values share the space: used counts both */
    long long before = seg_used(mseg);
    redisReply *r = st_cmd(rc, "SET plain %b", val, (size_t)MIB);
    cr_assert_eq(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_geq(seg_used(mseg), before + MIB, "a keyspace value is counted");
    /* SET keeps a new key in the keyspace; MC.* sees it as an object there (no lease taken) */
    r = st_cmd(rc, "MC.QUERYKEY plain");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_str_eq(st_field(st_field(r, "replicas")->element[0], "segment")->str, mseg);
    cr_assert_eq(st_field(r, "lease_ms")->integer, 0);
    freeReplyObject(r);
    r = st_cmd(rc, "MC.STATS");
    cr_assert_eq(st_field(r, "objects")->integer, 5, "not a pool object");
    freeReplyObject(r);
    /* removal gives every byte back */
    OK(crescent_store_remove_all(st, 1));
    r = st_cmd(rc, "DEL plain");
    freeReplyObject(r);
    cr_assert_eq(seg_used(mseg), 0, "every buffer went back to the shared allocator");
    cr_assert_eq(mc_stat("used"), 0);
    crescent_store_destroy(st);
    free(val);
}

Test(embedded, library_put_lands_in_the_master_tcp) {
    puts_land_in_the_master("tcp");
}

Test(embedded, library_put_lands_in_the_master_shm) {
    puts_land_in_the_master("shm");
}

/* 1 when the fabric transport is built and libfabric opens a provider here. */
static bool fabric_ok(void) {
    struct crescent_xfer_opts o = CRESCENT_XFER_OPTS_INIT;
    o.listen = "";
    struct crescent_xfer_engine *e;
    if (crescent_xfer_engine_create(&o, &e) != 0)
        return false;
    bool ok = crescent_xfer_install(e, "fabric", NULL) == 0;
    crescent_xfer_engine_destroy(e);
    return ok;
}

Test(embedded, library_put_lands_in_the_master_fabric) {
    if (!fabric_ok())
        cr_skip_test("no fabric transport or libfabric tcp;ofi_rxm provider");
    puts_land_in_the_master("fabric");
}

/* Counts, over n keys prefix0..n-1, how many have their replica on segment seg. */
static int count_on(const char *prefix, int n, const char *seg) {
    int c = 0;
    for (int i = 0; i < n; i++) {
        char key[32], s[256];
        snprintf(key, sizeof(key), "%s%d", prefix, i);
        one_segment(key, s);
        c += strcmp(s, seg) == 0;
    }
    return c;
}

/* With a peer, the allocator uses both; replica_num 2 takes one of each. */
static void placement(const char *strategy) {
    char extra[128];
    snprintf(extra, sizeof(extra), "--memory 64mb --allocation_strategy %s", strategy);
    start(extra);
    struct st_peer p;
    st_peer_start(&p, &master, "tcp", 64 * MIB);
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char val[4096];
    for (int i = 0; i < 40; i++) {
        char key[32];
        snprintf(key, sizeof(key), "k%d", i);
        st_fill(val, sizeof(val), (unsigned)i);
        OK(crescent_store_put(st, key, val, sizeof(val), NULL));
    }
    int on_master = count_on("k", 40, mseg), on_peer = count_on("k", 40, p.segment);
    cr_assert_eq(on_master + on_peer, 40);
    cr_assert_gt(on_master, 0, "%s: nothing in the master's segment", strategy);
    cr_assert_gt(on_peer, 0, "%s: nothing in the peer's segment", strategy);
    struct crescent_store_replicate_config two = {.replica_num = 2};
    st_fill(val, sizeof(val), 99);
    OK(crescent_store_put(st, "two", val, sizeof(val), &two));
    char segs[8][256];
    cr_assert_eq(st_replica_segments(rc, "two", segs, 8), 2);
    cr_assert((!strcmp(segs[0], mseg) && !strcmp(segs[1], p.segment)) ||
                  (!strcmp(segs[1], mseg) && !strcmp(segs[0], p.segment)),
              "%s / %s", segs[0], segs[1]);
    check_lib_get(st, "two", val, sizeof(val));
    check_redis_get("two", val, sizeof(val));
    OK(crescent_store_remove_all(st, 1));
    cr_assert_eq(st_segments_used(rc), 0);
    crescent_store_destroy(st);
    st_peer_kill(&p);
}

Test(embedded, random_placement_uses_both) {
    placement("random");
}

Test(embedded, free_ratio_first_uses_both) {
    placement("free_ratio_first");
}

/* Library puts beyond the segment evict older pool objects there; every put succeeds. */
Test(embedded, eviction_frees_pool_objects_in_the_master) {
    start("--memory 64mb");
    struct crescent_store *st = st_store(&master, "tcp", 0);
    char *val = malloc(2 * MIB);
    cr_assert_not_null(val);
    for (int i = 0; i < 60; i++) { /* 120 MiB into 64 */
        char key[32];
        snprintf(key, sizeof(key), "e%d", i);
        st_fill(val, 2 * MIB, (unsigned)i);
        OK(crescent_store_put(st, key, val, 2 * MIB, NULL));
    }
    cr_assert_gt(mc_stat("evicted"), 0);
    cr_assert_leq(seg_used(mseg), 64 * MIB);
    st_fill(val, 2 * MIB, 59);
    check_lib_get(st, "e59", val, 2 * MIB); /* the newest stays */
    /* A keyspace write needs room too: with no key of its own to evict, it makes the pool evict
     * objects there (the pool's watermark keeps at most a few MiB free: 24 do not fit). */
    long long evicted = mc_stat("evicted");
    char *big = calloc(1, 24 * MIB);
    cr_assert_not_null(big);
    redisReply *r = st_cmd(rc, "SET big %b", big, (size_t)(24 * MIB));
    cr_assert_eq(r->type, REDIS_REPLY_STATUS, "SET big: %s", r->str);
    freeReplyObject(r);
    cr_assert_gt(mc_stat("evicted"), evicted, "pool objects made room for the keyspace value");
    cr_assert_eq(cmd_strlen("big"), 24 * MIB);
    free(big);
    /* then keyspace values and pool objects keep sharing it, each side evicting its own */
    for (int i = 0; i < 20; i++) {
        char key[32];
        snprintf(key, sizeof(key), "plain%d", i);
        r = st_cmd(rc, "SET %s %b", key, val, (size_t)(2 * MIB));
        cr_assert_eq(r->type, REDIS_REPLY_STATUS, "SET %s: %s", key, r->str);
        freeReplyObject(r);
        snprintf(key, sizeof(key), "lib%d", i);
        OK(crescent_store_put(st, key, val, 2 * MIB, NULL));
    }
    cr_assert_leq(seg_used(mseg), 64 * MIB);
    r = st_cmd(rc, "FLUSHALL");
    freeReplyObject(r);
    /* a lazy FLUSHALL frees in the background; a leased object's buffer when its lease ends */
    long long deadline = st_now_ms() + 25000;
    while (seg_used(mseg) != 0 && st_now_ms() < deadline)
        st_sleep_ms(50);
    cr_assert_eq(seg_used(mseg), 0);
    crescent_store_destroy(st);
    free(val);
}

/* A restarted master mounts its segment again; puts land there. So does the housekeeping tick
 * after an MC.UNMOUNT by the segment's owner id, which frees the replicas there. */
Test(embedded, restarted_master_mounts_it_again) {
    start("--memory 64mb");
    check_listed();
    struct crescent_store *st0 = st_store(&master, "tcp", 0);
    OK(crescent_store_put(st0, "gone", "soon", 4, NULL));
    cr_assert_gt(seg_used(mseg), 0);
    redisReply *r = st_cmd(rc, "MC.QUERYSEGMENT %s", mseg);
    char owner[64];
    snprintf(owner, sizeof(owner), "%s", st_field(r, "owner")->str);
    freeReplyObject(r);
    r = st_cmd(rc, "MC.UNMOUNT %s %s", owner, mseg);
    cr_assert_eq(r->type, REDIS_REPLY_STATUS, "%s", r->str);
    freeReplyObject(r);
    cr_assert_eq(st_replica_segments(rc, "gone", NULL, 0), -1, "its only replica went");
    long long deadline = st_now_ms() + 10000;
    for (;;) {
        r = st_cmd(rc, "MC.QUERYSEGMENT %s", mseg);
        bool back = r->type == REDIS_REPLY_ARRAY;
        freeReplyObject(r);
        if (back || st_now_ms() > deadline)
            break;
        st_sleep_ms(20);
    }
    check_listed();
    cr_assert_eq(seg_used(mseg), 0, "the unmount gave the buffer back");
    crescent_store_destroy(st0);
    st_master_restart(&master);
    redisFree(rc);
    rc = st_redis(&master);
    check_listed();
    struct crescent_store *st = st_store(&master, "tcp", 0);
    OK(crescent_store_put(st, "after", "restart", 7, NULL));
    char seg[256];
    one_segment("after", seg);
    cr_assert_str_eq(seg, mseg);
    check_lib_get(st, "after", "restart", 7);
    crescent_store_destroy(st);
}

/* embedded_segment_in_pool no keeps it out; --memory 0 has none. */
Test(embedded, opt_out_and_memory0) {
    start("--memory 64mb --embedded_segment_in_pool no");
    redisReply *r = st_cmd(rc, "MC.SEGMENTS");
    cr_assert_eq(r->elements, 0);
    freeReplyObject(r);
    stop();
    start("--memory 0");
    r = st_cmd(rc, "MC.SEGMENTS");
    cr_assert_eq(r->elements, 0);
    freeReplyObject(r);
}

/* ---- keyspace strings as pool objects (docs/store.md "Keyspace strings through MC.*") ---- */

/* An integer reply of cmd. */
static long long int_of(const char *cmd, const char *key) {
    redisReply *r = st_cmd(rc, "%s %s", cmd, key);
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s %s: type %d %s", cmd, key, r->type,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static void set_bytes(const char *key, const void *val, size_t len) {
    redisReply *r = st_cmd(rc, "SET %s %b", key, val, len);
    cr_assert_eq(r->type, REDIS_REPLY_STATUS, "SET %s: %s", key, r->str);
    freeReplyObject(r);
}

/* MC.QUERYKEY of a keyspace string: its size and one COMPLETE MEMORY replica on the master's
 * segment; returns the replica's address and the lease left. */
static long long querykey(const char *key, long long size, long long *lease_ms) {
    redisReply *r = st_cmd(rc, "MC.QUERYKEY %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY, "MC.QUERYKEY %s: %s", key,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    cr_assert_eq(st_field(r, "size")->integer, size);
    const redisReply *reps = st_field(r, "replicas");
    cr_assert_eq(reps->elements, 1);
    const redisReply *d = reps->element[0];
    cr_assert_str_eq(st_field(d, "segment")->str, mseg);
    cr_assert_str_eq(st_field(d, "status")->str, "COMPLETE");
    cr_assert_str_eq(st_field(d, "type")->str, "MEMORY");
    cr_assert_eq(st_field(d, "size")->integer, size);
    long long addr = st_field(d, "addr")->integer;
    if (lease_ms)
        *lease_ms = st_field(r, "lease_ms")->integer;
    cr_assert_eq(st_field(r, "hard_pin")->integer, 0);
    freeReplyObject(r);
    return addr;
}

/* Waits (at most 10 s) until the master's segment uses at most want bytes. */
static long long wait_used_at_most(long long want) {
    long long deadline = st_now_ms() + 10000, u;
    while ((u = seg_used(mseg)) > want && st_now_ms() < deadline)
        st_sleep_ms(20);
    return u;
}

/* SET values read by library clients over proto, byte-exact, copying and zero-copy. */
static void keyspace_read_by_library(const char *proto) {
    start("--memory 64mb --embedded_segment_protocols tcp,shm");
    struct crescent_store *st = st_store(&master, proto, 0);
    static const size_t sizes[] = {1, 4096, MIB, 8 * MIB};
    char *val = malloc(8 * MIB), *buf = malloc(8 * MIB);
    cr_assert(val && buf);
    OK(crescent_store_register_buffer(st, buf, 8 * MIB));
    for (size_t i = 0; i < 4; i++) {
        char key[32];
        snprintf(key, sizeof(key), "ks-%zu", sizes[i]);
        st_fill(val, sizes[i], (unsigned)i + 7);
        set_bytes(key, val, sizes[i]);
        cr_assert_eq(crescent_store_is_exist(st, key), 1, "%s", key);
        cr_assert_eq(crescent_store_get_size(st, key), (int64_t)sizes[i], "%s", key);
        check_lib_get(st, key, val, sizes[i]);
        memset(buf, 0, sizes[i]);
        cr_assert_eq(crescent_store_get_into(st, key, buf, 8 * MIB), (int64_t)sizes[i]);
        cr_assert(memcmp(buf, val, sizes[i]) == 0, "%s: get_into bytes differ", key);
        long long lease;
        long long addr = querykey(key, (long long)sizes[i], &lease);
        cr_assert_gt(addr, 0);
        cr_assert_gt(lease, 0, "the library's reads took a lease");
    }
    /* batch forms count them too */
    redisReply *r = st_cmd(rc, "MC.BATCHEXIST ks-1 nosuch ks-4096");
    cr_assert_eq(r->elements, 3);
    cr_assert_eq(r->element[0]->integer, 1);
    cr_assert_eq(r->element[1]->integer, 0);
    cr_assert_eq(r->element[2]->integer, 1);
    freeReplyObject(r);
    r = st_cmd(rc, "MC.BATCHGETREPLICAS ks-1 nosuch");
    cr_assert_eq(r->elements, 2);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(st_field(r->element[0], "replicas")->elements, 1);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    /* one compact batch reply mixing a pool object and keyspace strings in the same segment */
    OK(crescent_store_put(st, "lib", "pool-object", 11, NULL));
    const char *keys[] = {"ks-1", "lib", "ks-4096", "nosuch"};
    void *vals[4];
    size_t lens[4];
    int64_t res[4];
    cr_assert_neq(crescent_store_batch_get(st, keys, 4, vals, lens, res), 0, "nosuch fails");
    cr_assert_eq(res[0], 1);
    cr_assert_eq(res[1], 11);
    cr_assert_eq(res[2], 4096);
    cr_assert_lt(res[3], 0);
    cr_assert(memcmp(vals[1], "pool-object", 11) == 0);
    st_fill(val, 4096, 8);
    cr_assert(memcmp(vals[2], val, 4096) == 0, "batch: keyspace bytes differ");
    for (int i = 0; i < 3; i++)
        crescent_store_free(vals[i]);
    OK(crescent_store_unregister_buffer(st, buf));
    crescent_store_destroy(st);
    free(val);
    free(buf);
}

Test(embedded, keyspace_strings_read_by_library_tcp) {
    keyspace_read_by_library("tcp");
}

Test(embedded, keyspace_strings_read_by_library_shm) {
    keyspace_read_by_library("shm");
}

/* What is not visible: aggregates, empty strings, expired keys; what MC.REMOVE does. */
Test(embedded, keyspace_visibility_and_remove) {
    start("--memory 64mb");
    redisReply *r = st_cmd(rc, "RPUSH list a b");
    freeReplyObject(r);
    r = st_cmd(rc, "SET empty %s", "");
    freeReplyObject(r);
    r = st_cmd(rc, "SET short v PX 100");
    freeReplyObject(r);
    r = st_cmd(rc, "SET counter 41");
    freeReplyObject(r);
    cr_assert_eq(int_of("INCR", "counter"), 42);
    cr_assert_eq(int_of("MC.EXIST", "list"), 0);
    cr_assert_eq(int_of("MC.EXIST", "empty"), 0);
    cr_assert_eq(int_of("MC.EXIST", "counter"), 1, "an integer is a string in the segment");
    querykey("counter", 2, NULL);
    st_sleep_ms(200);
    cr_assert_eq(int_of("MC.EXIST", "short"), 0, "an expired key is not an object");
    r = st_cmd(rc, "MC.GETREPLICAS short");
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    cr_assert(strncmp(r->str, "OBJECT_NOT_FOUND", 16) == 0, "%s", r->str);
    freeReplyObject(r);
    r = st_cmd(rc, "MC.REMOVE list");
    cr_assert_eq(r->type, REDIS_REPLY_ERROR, "MC.REMOVE leaves an aggregate alone");
    freeReplyObject(r);
    cr_assert_eq(int_of("EXISTS", "list"), 1);
    /* MC.REMOVE deletes a keyspace string; a leased one only with FORCE */
    r = st_cmd(rc, "SET gone v");
    freeReplyObject(r);
    r = st_cmd(rc, "MC.REMOVE gone");
    cr_assert_eq(r->type, REDIS_REPLY_STATUS, "%s", r->str);
    freeReplyObject(r);
    cr_assert_eq(int_of("EXISTS", "gone"), 0);
    cr_assert_eq(int_of("MC.EXIST", "counter"), 1); /* the lease of MC.EXIST */
    r = st_cmd(rc, "MC.REMOVE counter");
    cr_assert_eq(r->type, REDIS_REPLY_ERROR);
    cr_assert(strncmp(r->str, "OBJECT_HAS_LEASE", 16) == 0, "%s", r->str);
    freeReplyObject(r);
    r = st_cmd(rc, "MC.BATCHREMOVE 1 counter FORCE");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_STATUS, "%s", r->element[0]->str);
    freeReplyObject(r);
    cr_assert_eq(int_of("EXISTS", "counter"), 0);
    /* the compact form (the library's) carries the replica too */
    char *val = malloc(MIB);
    cr_assert_not_null(val);
    st_fill(val, MIB, 3);
    set_bytes("c", val, MIB);
    r = st_cmd(rc, "MC.REPLYFORMAT COMPACT");
    freeReplyObject(r);
    r = st_cmd(rc, "MC.GETREPLICAS c");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 2);
    const redisReply *e = r->element[0], *tab = r->element[1];
    cr_assert_eq(e->elements, 6);
    cr_assert_gt(e->element[0]->integer, 0, "lease ttl");
    cr_assert_eq(e->element[2]->integer, 0, "segment index");
    cr_assert_eq(e->element[5]->integer, MIB);
    cr_assert_eq(tab->elements, 1);
    cr_assert_str_eq(tab->element[0]->element[0]->str, mseg);
    freeReplyObject(r);
    r = st_cmd(rc, "MC.REPLYFORMAT FULL");
    freeReplyObject(r);
    free(val);
}

/* A read lease pins the value's block: an overwrite or DEL unlinks the key at once, the block
 * goes back only when the lease ends; MC.* inside MULTI/EXEC works; nothing leaks. */
Test(embedded, keyspace_lease_pins_the_block) {
    start("--memory 64mb --default_kv_lease_ttl 1000");
    char *val = malloc(4 * MIB);
    cr_assert_not_null(val);
    st_fill(val, 4 * MIB, 9);
    long long base = seg_used(mseg);
    set_bytes("k", val, 4 * MIB);
    long long one = seg_used(mseg);
    cr_assert_geq(one, base + 4 * MIB);
    redisReply *r = st_cmd(rc, "MC.GETREPLICAS k");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY, "%s", r->type == REDIS_REPLY_ERROR ? r->str : "");
    cr_assert_eq(st_field(r, "lease_ttl_ms")->integer, 1000);
    freeReplyObject(r);
    r = st_cmd(rc, "SET k other");
    freeReplyObject(r);
    check_redis_get("k", "other", 5);
    cr_assert_geq(seg_used(mseg), one, "the overwritten block is pinned by the lease");
    long long u = wait_used_at_most(one - 4 * MIB + 64 * 1024);
    cr_assert_leq(u, one - 4 * MIB + 64 * 1024,
                  "the block went back when the lease ended: %lld (base %lld, one %lld)", u, base,
                  one);
    /* DEL of a leased key: gone at once, its block later */
    set_bytes("d", val, 4 * MIB);
    long long two = seg_used(mseg);
    cr_assert_eq(int_of("MC.EXIST", "d"), 1);
    cr_assert_eq(int_of("DEL", "d"), 1);
    cr_assert_eq(int_of("MC.EXIST", "d"), 0);
    cr_assert_geq(seg_used(mseg), two, "the deleted block is pinned by the lease");
    u = wait_used_at_most(two - 4 * MIB + 64 * 1024);
    cr_assert_leq(u, two - 4 * MIB + 64 * 1024);
    /* inside MULTI/EXEC (the exclusive keyspace lock held): no deadlock */
    set_bytes("m", val, 4 * MIB);
    r = st_cmd(rc, "MULTI");
    freeReplyObject(r);
    const char *queued[] = {"MC.GETREPLICAS m",        "MC.EXIST m", "MC.QUERYKEY m",
                            "MC.BATCHGETREPLICAS m k", "SET m x",    "MC.REMOVE k FORCE"};
    for (size_t i = 0; i < 6; i++) {
        r = st_cmd(rc, queued[i]);
        cr_assert_eq(r->type, REDIS_REPLY_STATUS, "%s", queued[i]);
        freeReplyObject(r);
    }
    r = st_cmd(rc, "EXEC");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 6);
    cr_assert_eq(st_field(st_field(r->element[0], "replicas")->element[0], "size")->integer,
                 4 * MIB);
    cr_assert_eq(r->element[1]->integer, 1);
    cr_assert_eq(st_field(r->element[2], "size")->integer, 4 * MIB);
    cr_assert_eq(r->element[3]->elements, 2);
    cr_assert_eq(r->element[5]->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_assert_eq(int_of("EXISTS", "k"), 0);
    check_redis_get("m", "x", 1);
    /* no leak: with every key gone and every lease over, the segment is empty */
    r = st_cmd(rc, "FLUSHALL SYNC");
    freeReplyObject(r);
    cr_assert_eq(wait_used_at_most(base), base);
    free(val);
}

/* ---- concurrency: keyspace writers (whose commands take the pool mutex under a shard lock)
 * against MC.* reads and removes of the same keys: nothing deadlocks, nothing leaks ---- */

#define MIX_KEYS  4
#define MIX_ITERS 600

struct mix_arg {
    int reader;
    long errors; /* unexpected replies */
};

static void *mix_thread(void *p) {
    struct mix_arg *a = p;
    redisContext *c = st_redis(&master);
    unsigned seed = (unsigned)a->reader * 7919u + 1;
    for (int i = 0; i < MIX_ITERS; i++) {
        int k = (int)(rand_r(&seed) % MIX_KEYS);
        redisReply *r;
        if (a->reader) {
            r = redisCommand(c, "MC.BATCHGETREPLICAS c%d c%d c%d", k, (k + 1) % MIX_KEYS,
                             (k + 2) % MIX_KEYS);
            a->errors += !r || r->type != REDIS_REPLY_ARRAY || r->elements != 3;
            freeReplyObject(r);
            r = redisCommand(c, "MC.EXIST c%d", k);
            a->errors += !r || r->type != REDIS_REPLY_INTEGER;
            freeReplyObject(r);
            r = redisCommand(c, i % 8 ? "MC.QUERYKEY c%d" : "MC.REMOVE c%d FORCE", k);
            a->errors += !r;
            freeReplyObject(r);
            /* the bulk commands walk the same shards */
            static const char *const bulk[] = {"MC.GETREPLICASBYREGEX ^c[0-9]$", "MC.STATS",
                                               "MC.REMOVEBYREGEX ^c[02]$ FORCE",
                                               "MC.REMOVEBYREGEX ^c[13]$"};
            r = redisCommand(c, bulk[i % 4]);
            a->errors += !r || r->type == REDIS_REPLY_ERROR;
            freeReplyObject(r);
        } else {
            r = redisCommand(c, "DEL c%d", k);
            freeReplyObject(r);
            r = redisCommand(c, "EXPIRE c%d 100", k); /* missing: asks the pool under the shard */
            a->errors += !r || r->type != REDIS_REPLY_INTEGER;
            freeReplyObject(r);
            r = redisCommand(c, "INCR c%d", k); /* an error when the other writer appended */
            a->errors += !r;
            freeReplyObject(r);
            r = redisCommand(c, "APPEND c%d %s", k, "-appended-bytes");
            a->errors += !r || r->type != REDIS_REPLY_INTEGER;
            freeReplyObject(r);
        }
    }
    redisFree(c);
    return NULL;
}

Test(embedded, keyspace_mc_reads_race_keyspace_writes) {
    start("--memory 64mb --threads 4 --default_kv_lease_ttl 200");
    /* with a pool object present, EXPIRE / INCR of a missing key ask the pool (its mutex)
     * while holding the key's shard lock */
    struct crescent_store *st = st_store(&master, "tcp", 0);
    OK(crescent_store_put(st, "pool-object", "v", 1, NULL));
    pthread_t th[4];
    struct mix_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct mix_arg){.reader = i % 2, .errors = 0};
        cr_assert_eq(pthread_create(&th[i], NULL, mix_thread, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(args[i].errors, 0, "thread %d: %ld unexpected replies", i, args[i].errors);
    }
    redisReply *r = st_cmd(rc, "FLUSHALL SYNC");
    freeReplyObject(r);
    cr_assert_eq(wait_used_at_most(0), 0, "every leased block came back");
    crescent_store_destroy(st);
}

/* ---- the bulk MC commands over keyspace strings: by regex, remove all, stats ---- */

/* The reply of the command fmt (a hiredis format with no arguments: words split at spaces). */
static redisReply *plain_cmd(const char *fmt) {
    redisReply *r = redisCommand(rc, fmt, NULL);
    cr_assert_not_null(r, "%s: no reply", fmt);
    return r;
}

/* The integer reply of the command fmt. */
static long long int_cmd(const char *fmt) {
    redisReply *r = plain_cmd(fmt);
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s: type %d %s", fmt, r->type,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* Asserts that the command fmt replies an error starting with code. */
static void want_err(const char *fmt, const char *code) {
    redisReply *r = plain_cmd(fmt);
    cr_assert_eq(r->type, REDIS_REPLY_ERROR, "%s: type %d", fmt, r->type);
    cr_assert(strncmp(r->str, code, strlen(code)) == 0, "%s: %s", fmt, r->str);
    freeReplyObject(r);
}

/* Runs cmd key val and asserts it did not fail. */
static void redis_ok(const char *cmd, const char *key, const char *val) {
    redisReply *r = st_cmd(rc, "%s %s %s", cmd, key, val);
    cr_assert(r->type != REDIS_REPLY_ERROR, "%s %s: %s", cmd, key, r->str);
    freeReplyObject(r);
}

/* The one replica of key in a MC.GETREPLICASBYREGEX reply r (RESP2: key, replicas, ...):
 * asserts it is a COMPLETE MEMORY replica of size bytes on the master's segment. */
static void regex_has(const redisReply *r, const char *key, long long size) {
    const redisReply *reps = st_field(r, key);
    cr_assert_not_null(reps, "%s missing from the regex reply", key);
    cr_assert_eq(reps->elements, 1, "%s: %zu replicas", key, reps->elements);
    const redisReply *d = reps->element[0];
    cr_assert_str_eq(st_field(d, "segment")->str, mseg);
    cr_assert_str_eq(st_field(d, "status")->str, "COMPLETE");
    cr_assert_str_eq(st_field(d, "type")->str, "MEMORY");
    cr_assert_eq(st_field(d, "size")->integer, size, "%s", key);
}

/* lease_ms of MC.QUERYKEY key. */
static long long lease_of(const char *key) {
    redisReply *r = st_cmd(rc, "MC.QUERYKEY %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY, "MC.QUERYKEY %s: %s", key,
                 r->type == REDIS_REPLY_ERROR ? r->str : "");
    long long v = st_field(r, "lease_ms")->integer;
    freeReplyObject(r);
    return v;
}

/* Keyspace strings and pool objects side by side; the aggregates and the empty string. */
static struct crescent_store *bulk_fixture(void) {
    struct crescent_store *st = st_store(&master, "tcp", 0);
    OK(crescent_store_put(st, "p-1", "pool1", 5, NULL));
    OK(crescent_store_put(st, "p-22", "pool-22", 7, NULL));
    redis_ok("SET", "k-1", "abc");
    redis_ok("SET", "k-22", "abcde");
    redis_ok("SET", "other", "z");
    redis_ok("SET", "k-empty", "");
    redis_ok("RPUSH", "k-list", "a");
    redisReply *r = st_cmd(rc, "HSET k-hash f v");
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    return st;
}

/* MC.GETREPLICASBYREGEX answers matching keyspace strings with their replica and a lease;
 * MC.STATS counts them in keyspace_strings / keyspace_bytes, objects stays the pool's. */
Test(embedded, keyspace_bulk_regex_and_stats) {
    start("--memory 64mb --default_kv_lease_ttl 60000");
    struct crescent_store *st = bulk_fixture();
    cr_assert_eq(mc_stat("objects"), 2);
    cr_assert_eq(mc_stat("keyspace_strings"), 3, "k-1, k-22, other");
    cr_assert_eq(mc_stat("keyspace_bytes"), 3 + 5 + 1);
    redisReply *r = st_cmd(rc, "MC.GETREPLICASBYREGEX ^k-");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4, "k-1 and k-22 only: %zu", r->elements);
    regex_has(r, "k-1", 3);
    regex_has(r, "k-22", 5);
    freeReplyObject(r);
    cr_assert_gt(lease_of("k-22"), 0, "the regex read took a lease");
    cr_assert_eq(lease_of("other"), 0, "a key not matched took none");
    /* both kinds in one reply, the same with the compact reply format (not a compact command) */
    for (int compact = 0; compact < 2; compact++) {
        r = st_cmd(rc, compact ? "MC.REPLYFORMAT COMPACT" : "PING");
        freeReplyObject(r);
        r = st_cmd(rc, "MC.GETREPLICASBYREGEX -[0-9]{2}$");
        cr_assert_eq(r->elements, 4, "p-22 and k-22: %zu", r->elements);
        regex_has(r, "p-22", 7);
        regex_has(r, "k-22", 5);
        freeReplyObject(r);
    }
    r = st_cmd(rc, "MC.REPLYFORMAT FULL");
    freeReplyObject(r);
    r = st_cmd(rc, "MC.GETREPLICASBYREGEX nomatch");
    cr_assert_eq(r->elements, 0);
    freeReplyObject(r);
    want_err("MC.GETREPLICASBYREGEX (", "INVALID_PARAMS");
    /* a key both in the pool and in the keyspace answers once, as the pool's object */
    redis_ok("SET", "dup", "keyspace-value");
    OK(crescent_store_put(st, "dup", "pool", 4, NULL));
    r = st_cmd(rc, "MC.GETREPLICASBYREGEX ^dup$");
    cr_assert_eq(r->elements, 2);
    regex_has(r, "dup", 4);
    freeReplyObject(r);
    cr_assert_eq(mc_stat("objects"), 3);
    cr_assert_eq(mc_stat("keyspace_strings"), 4, "the shadowed string is counted too");
    cr_assert_eq(mc_stat("keyspace_bytes"), 3 + 5 + 1 + 14);
    /* APPEND and INCR change the figures */
    redis_ok("APPEND", "other", "zz");
    redis_ok("SET", "n", "41");
    cr_assert_eq(int_of("INCR", "n"), 42);
    cr_assert_eq(mc_stat("keyspace_strings"), 5);
    cr_assert_eq(mc_stat("keyspace_bytes"), 3 + 5 + 3 + 14 + 2);
    crescent_store_destroy(st);
}

/* A key held by both the pool and the keyspace: MC.REMOVEBYREGEX and MC.REMOVEALL remove the
 * pool's object only and count it once, as MC.REMOVE does; the string stays, then goes by the
 * next removal. */
static void dup_value(const char *want) {
    redisReply *r = st_cmd(rc, "GET dup");
    if (!want) {
        cr_assert_eq(r->type, REDIS_REPLY_NIL, "GET dup: type %d", r->type);
    } else {
        cr_assert_eq(r->type, REDIS_REPLY_STRING, "GET dup: type %d", r->type);
        cr_assert_str_eq(r->str, want);
    }
    freeReplyObject(r);
}

Test(embedded, keyspace_bulk_remove_dup) {
    start("--memory 64mb");
    struct crescent_store *st = st_store(&master, "tcp", 0);
    const char *cmds[] = {"MC.REMOVE dup", "MC.REMOVEBYREGEX ^dup$", "MC.REMOVEALL",
                          "MC.REMOVEBYREGEX ^dup$ FORCE", "MC.REMOVEALL FORCE"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        redis_ok("SET", "dup", "keyspace-value");
        OK(crescent_store_put(st, "dup", "pool", 4, NULL));
        cr_assert_eq(mc_stat("objects"), 1);
        redisReply *r = plain_cmd(cmds[i]);
        if (i == 0) {
            cr_assert_eq(r->type, REDIS_REPLY_STATUS, "%s: type %d", cmds[i], r->type);
        } else {
            cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s: type %d", cmds[i], r->type);
            cr_assert_eq(r->integer, 1, "%s: the pool's object, once: %lld", cmds[i], r->integer);
        }
        freeReplyObject(r);
        cr_assert_eq(mc_stat("objects"), 0, "%s", cmds[i]);
        dup_value("keyspace-value");
        if (i > 0) {
            cr_assert_eq(int_cmd(cmds[i]), 1, "%s: now the string", cmds[i]);
            dup_value(NULL);
        }
    }
    crescent_store_destroy(st);
}

/* MC.REMOVEBYREGEX / MC.REMOVEALL delete keyspace strings as MC.REMOVE does (a leased one only
 * with FORCE), count them, leave aggregates and empty strings alone; WATCH sees the deletes. */
Test(embedded, keyspace_bulk_remove) {
    start("--memory 64mb --default_kv_lease_ttl 60000");
    struct crescent_store *st = bulk_fixture();
    cr_assert_eq(int_of("MC.EXIST", "k-22"), 1, "a lease on k-22");
    want_err("MC.REMOVEBYREGEX (", "INVALID_PARAMS");
    cr_assert_eq(int_of("EXISTS", "k-1"), 1, "a bad pattern removes nothing");
    cr_assert_eq(int_cmd("MC.REMOVEBYREGEX ^k-"), 1, "k-1; k-22 is leased");
    cr_assert_eq(int_of("EXISTS", "k-1"), 0);
    cr_assert_eq(int_of("EXISTS", "k-22"), 1);
    cr_assert_eq(int_cmd("MC.REMOVEBYREGEX ^k- FORCE"), 1, "k-22");
    cr_assert_eq(int_of("EXISTS", "k-22"), 0);
    cr_assert_eq(int_of("MC.EXIST", "k-22"), 0);
    cr_assert_eq(int_cmd("MC.REMOVEBYREGEX -[0-9]$"), 1, "p-1 (the pool's)");
    cr_assert_eq(int_cmd("DBSIZE"), 5, "p-22, other, k-empty, k-list, k-hash");
    /* WATCH of a key MC.REMOVEALL deletes aborts the transaction */
    redisContext *w = st_redis(&master);
    redisReply *r = st_cmd(w, "WATCH other");
    freeReplyObject(r);
    r = st_cmd(w, "MULTI");
    freeReplyObject(r);
    r = st_cmd(w, "SET other again");
    freeReplyObject(r);
    /* a leased string and a key in both places, the pool's copy leased */
    redis_ok("SET", "held", "v");
    cr_assert_eq(int_of("MC.EXIST", "held"), 1);
    redis_ok("SET", "dup", "keyspace-value");
    OK(crescent_store_put(st, "dup", "pool", 4, NULL));
    cr_assert_eq(int_of("MC.EXIST", "dup"), 1, "a lease on the pool's dup");
    cr_assert_eq(int_cmd("MC.REMOVEALL"), 2, "p-22, other; held and dup are leased");
    r = st_cmd(w, "EXEC");
    cr_assert_eq(r->type, REDIS_REPLY_NIL, "WATCH saw MC.REMOVEALL delete other");
    freeReplyObject(r);
    redisFree(w);
    cr_assert_eq(int_of("EXISTS", "other"), 0);
    cr_assert_eq(int_of("EXISTS", "held"), 1);
    cr_assert_eq(int_of("EXISTS", "dup"), 1);
    cr_assert_eq(mc_stat("objects"), 1);
    cr_assert_eq(int_cmd("MC.REMOVEALL FORCE"), 2, "held and dup's pool object");
    cr_assert_eq(int_of("EXISTS", "dup"), 1, "the string the pool hid stays, as MC.REMOVE");
    cr_assert_eq(mc_stat("objects"), 0);
    cr_assert_eq(mc_stat("keyspace_strings"), 1);
    cr_assert_eq(int_cmd("MC.REMOVEALL FORCE"), 1, "dup's string, no longer hidden");
    cr_assert_eq(int_of("EXISTS", "dup"), 0);
    cr_assert_eq(mc_stat("keyspace_strings"), 0);
    cr_assert_eq(int_cmd("DBSIZE"), 3, "k-empty, k-list and k-hash are left");
    cr_assert_eq(int_of("EXISTS", "k-empty"), 1);
    cr_assert_eq(int_of("EXISTS", "k-list"), 1);
    cr_assert_eq(int_of("EXISTS", "k-hash"), 1);
    /* strings and objects only: REMOVEALL counts every one and empties the keyspace (10000
     * strings: the keyspace is walked in several steps) */
    r = plain_cmd("FLUSHALL SYNC");
    freeReplyObject(r);
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(redisAppendCommand(rc, "SET s%d value", i), REDIS_OK);
    for (int i = 0; i < 10000; i++) {
        void *reply = NULL;
        cr_assert_eq(redisGetReply(rc, &reply), REDIS_OK);
        cr_assert_eq(((redisReply *)reply)->type, REDIS_REPLY_STATUS);
        freeReplyObject(reply);
    }
    for (int i = 0; i < 3; i++) {
        char key[16];
        snprintf(key, sizeof(key), "o%d", i);
        OK(crescent_store_put(st, key, "object", 6, NULL));
    }
    cr_assert_eq(mc_stat("keyspace_strings"), 10000);
    cr_assert_eq(mc_stat("keyspace_bytes"), 50000);
    cr_assert_eq(int_cmd("MC.REMOVEBYREGEX ^s[0-9]*7$"), 1000, "s7, s17, ... s9997");
    cr_assert_eq(int_cmd("MC.REMOVEALL"), 9003);
    cr_assert_eq(int_cmd("DBSIZE"), 0);
    cr_assert_eq(mc_stat("objects"), 0);
    cr_assert_eq(mc_stat("keyspace_strings"), 0);
    cr_assert_eq(mc_stat("keyspace_bytes"), 0);
    cr_assert_eq(int_cmd("MC.REMOVEALL"), 0);
    crescent_store_destroy(st);
}

/* The bulk commands inside MULTI/EXEC (the exclusive keyspace lock held): no deadlock; with
 * every key gone and every lease over, no block stays pinned. */
Test(embedded, keyspace_bulk_in_exec_no_leak) {
    start("--memory 64mb --default_kv_lease_ttl 200");
    struct crescent_store *st = bulk_fixture();
    redisReply *r = plain_cmd("MULTI");
    freeReplyObject(r);
    const char *queued[] = {"MC.GETREPLICASBYREGEX ^k-", "MC.STATS", "MC.REMOVEBYREGEX ^other$",
                            "MC.REMOVEALL FORCE"};
    for (size_t i = 0; i < 4; i++) {
        r = plain_cmd(queued[i]);
        cr_assert_eq(r->type, REDIS_REPLY_STATUS, "%s", queued[i]);
        freeReplyObject(r);
    }
    r = plain_cmd("EXEC");
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 4);
    cr_assert_eq(r->element[0]->elements, 4, "k-1 and k-22");
    cr_assert_eq(st_field(r->element[1], "keyspace_strings")->integer, 3);
    cr_assert_eq(r->element[2]->integer, 1, "other (k-1 and k-22 are leased)");
    cr_assert_eq(r->element[3]->integer, 4, "p-1, p-22, k-1, k-22 (FORCE)");
    freeReplyObject(r);
    cr_assert_eq(int_cmd("DBSIZE"), 3, "k-empty, k-list, k-hash");
    crescent_store_destroy(st);
    r = plain_cmd("FLUSHALL SYNC");
    freeReplyObject(r);
    cr_assert_eq(wait_used_at_most(0), 0, "every pinned and leased block came back");
}

/* Keyspace notifications: MC.REMOVEALL of a keyspace string sends "del", as DEL does. */
Test(embedded, keyspace_bulk_remove_notifies) {
    start("--memory 64mb");
    redisContext *sub = st_redis(&master);
    redisReply *r = st_cmd(rc, "CONFIG SET notify-keyspace-events KEg");
    cr_assert_eq(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = st_cmd(sub, "SUBSCRIBE __keyspace@0__:note");
    freeReplyObject(r);
    redis_ok("SET", "note", "v");
    cr_assert_eq(int_cmd("MC.REMOVEBYREGEX ^note$"), 1);
    void *reply = NULL;
    cr_assert_eq(redisGetReply(sub, &reply), REDIS_OK);
    r = reply;
    cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 3);
    cr_assert_str_eq(r->element[2]->str, "del");
    freeReplyObject(r);
    redisFree(sub);
}

/* Without the segment in the pool the bulk commands see pool objects only, as before. */
Test(embedded, keyspace_bulk_opt_out) {
    start("--memory 64mb --embedded_segment_in_pool no");
    redis_ok("SET", "k", "v");
    redisReply *r = st_cmd(rc, "MC.GETREPLICASBYREGEX .");
    cr_assert_eq(r->elements, 0);
    freeReplyObject(r);
    cr_assert_eq(mc_stat("keyspace_strings"), 0);
    cr_assert_eq(mc_stat("keyspace_bytes"), 0);
    cr_assert_eq(int_cmd("MC.REMOVEALL FORCE"), 0);
    cr_assert_eq(int_cmd("MC.REMOVEBYREGEX . FORCE"), 0);
    cr_assert_eq(int_of("EXISTS", "k"), 1);
}
